// The outbox: with no SMTP server configured (the sandbox), every e-mail the service would have sent
// (a patient's account, a notice to the practice) is kept here, exactly as it would have gone out:
// to, subject, time, text and the attached account.
import { Action, Loading, useConsole, useLoad } from '../components/ui.tsx';
import { saveFile } from '../download.ts';
import { dateTime } from '../format.ts';
import type { OutboxMessage } from '../types.ts';

export function OutboxPage() {
  const { api, practiceId } = useConsole();
  const loaded = useLoad(() => api.outbox(practiceId), [practiceId]);
  return (
    <section aria-labelledby="outbox-title">
      <h1 id="outbox-title">Outbox</h1>
      <p>
        No SMTP server is configured (<code>SMTP_URL</code>), so nothing leaves this machine: each e-mail the
        service would have sent is kept here as the patient or the practice would receive it.
      </p>
      <Loading loaded={loaded}>
        {(page) =>
          page.data.length === 0 ? (
            <p>No message yet. Issue an invoice for a patient with an e-mail address.</p>
          ) : (
            <table>
              <thead>
                <tr>
                  <th scope="col">Time</th>
                  <th scope="col">To</th>
                  <th scope="col">Subject</th>
                  <th scope="col">Message</th>
                  <th scope="col">Attachment</th>
                </tr>
              </thead>
              <tbody>
                {page.data.map((m) => (
                  <OutboxRow key={m.id} message={m} />
                ))}
              </tbody>
            </table>
          )
        }
      </Loading>
    </section>
  );
}

function OutboxRow({ message }: { message: OutboxMessage }) {
  const { api, practiceId } = useConsole();
  const attachment = message.attachment;
  return (
    <tr>
      <td>{dateTime(message.createdAt)}</td>
      <td>{message.to}</td>
      <td>{message.subject}</td>
      <td>
        <pre class="mail-text">{message.text}</pre>
      </td>
      <td>
        {attachment ? (
          <Action
            label={`Open ${attachment.filename}`}
            run={() => api.outboxAttachment(practiceId, message.id)}
            done={(blob) => saveFile(blob as Blob, attachment.filename)}
          />
        ) : (
          <span class="muted">none</span>
        )}
      </td>
    </tr>
  );
}
