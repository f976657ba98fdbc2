// The practice's audit log, newest first, paged.
import { useState } from 'preact/hooks';
import { Loading, useConsole, useLoad } from '../components/ui.tsx';
import { dateTime } from '../format.ts';

export function AuditPage() {
  const { api, practiceId } = useConsole();
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors.at(-1);
  const loaded = useLoad(() => api.auditEvents(practiceId, cursor), [practiceId, cursor]);
  return (
    <section aria-labelledby="audit-title">
      <h1 id="audit-title">Audit log</h1>
      <Loading loaded={loaded}>
        {(page) => (
          <>
            <table>
              <caption class="visually-hidden">Audit events, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">When</th>
                  <th scope="col">Who</th>
                  <th scope="col">Request</th>
                  <th scope="col">Outcome</th>
                  <th scope="col">Resource</th>
                  <th scope="col">Request id</th>
                </tr>
              </thead>
              <tbody>
                {page.data.map((e) => (
                  <tr key={e.id}>
                    <td>{dateTime(e.occurredAt)}</td>
                    <td>
                      {e.actor}
                      {e.clientId ? <small class="muted"> {e.clientId}</small> : null}
                    </td>
                    <td>
                      <code>
                        {e.method} <Breakable path={e.route} />
                      </code>
                    </td>
                    <td>
                      {e.status} {e.outcome}
                      {e.reason ? <small class="muted"> {e.reason}</small> : null}
                    </td>
                    <td>{e.resourceType ? `${e.resourceType} ${e.resourceId ?? ''}` : '—'}</td>
                    <td>
                      <small>{e.requestId}</small>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            <nav class="pager" aria-label="Pages">
              <button
                type="button"
                disabled={cursors.length === 0}
                onClick={() => setCursors(cursors.slice(0, -1))}
              >
                Newer
              </button>
              <span>Page {cursors.length + 1}</span>
              <button
                type="button"
                disabled={!page.nextCursor}
                onClick={() => page.nextCursor && setCursors([...cursors, page.nextCursor])}
              >
                Older
              </button>
            </nav>
          </>
        )}
      </Loading>
    </section>
  );
}

/** A route written so that it wraps after a slash, never inside a word. */
function Breakable({ path }: { path: string }) {
  const parts = path.split('/');
  return (
    <>
      {parts.map((part, i) => (
        <span key={i}>
          {i > 0 ? '/' : ''}
          {part}
          <wbr />
        </span>
      ))}
    </>
  );
}
