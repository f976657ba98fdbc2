// Webhook endpoints: register one, enable or disable, rotate its secret (shown once), recover
// everything that failed since a time, and read its delivery attempts with a redeliver per event.
import { useState } from 'preact/hooks';
import {
  Action,
  ActionForm,
  Field,
  Loading,
  Notice,
  Status,
  useConsole,
  useLoad,
} from '../components/ui.tsx';
import { dateTime } from '../format.ts';
import { href } from '../router.ts';
import type { Endpoint } from '../types.ts';

export function WebhooksPage({ params }: { params: URLSearchParams }) {
  const { api, practiceId } = useConsole();
  const loaded = useLoad(() => api.listEndpoints(practiceId), [practiceId]);
  const selected = params.get('endpoint');
  const [url, setUrl] = useState('');
  const [secret, setSecret] = useState<{ endpointId: string; secret: string } | null>(null);
  return (
    <section aria-labelledby="webhooks-title">
      <h1 id="webhooks-title">Webhook endpoints</h1>
      {secret ? (
        <Notice>
          New signing secret for {secret.endpointId} (shown once): <code>{secret.secret}</code>
        </Notice>
      ) : null}
      <Loading loaded={loaded}>
        {(page) =>
          page.data.length === 0 ? (
            <p>No endpoint yet.</p>
          ) : (
            <table>
              <thead>
                <tr>
                  <th scope="col">URL</th>
                  <th scope="col">State</th>
                  <th scope="col">Last success</th>
                  <th scope="col">Failing since</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {page.data.map((e) => (
                  <tr key={e.id} class={selected === e.id ? 'selected' : ''}>
                    <td>
                      <a href={href('webhooks', { endpoint: e.id })}>{e.url}</a>
                      <br />
                      <small class="muted">
                        {e.id} · {e.eventTypes.length === 0 ? 'every event' : e.eventTypes.join(', ')}
                      </small>
                    </td>
                    <td>
                      <Status value={e.enabled ? (e.failingSince ? 'failed' : 'active') : 'disabled'} />
                      {e.disabledReason ? <small> {e.disabledReason}</small> : null}
                    </td>
                    <td>{dateTime(e.lastSuccessAt)}</td>
                    <td>{dateTime(e.failingSince)}</td>
                    <td>
                      <div class="actions">
                        <Action
                          label={e.enabled ? 'Disable' : 'Enable'}
                          kind={e.enabled ? 'danger' : 'secondary'}
                          {...(e.enabled
                            ? {
                                confirm: `Disable ${e.url}? Its pending deliveries are cancelled and no new ones are sent.`,
                              }
                            : {})}
                          run={() => api.setEndpointEnabled(practiceId, e.id, !e.enabled)}
                          done={loaded.reload}
                        />
                        <Action
                          label="Rotate secret"
                          confirm={`Rotate the signing secret of ${e.url}? The old secret keeps signing beside the new one during the overlap only.`}
                          run={() => api.rotateSecret(practiceId, e.id)}
                          done={(r) => {
                            const rotated = r as Endpoint;
                            if (rotated.secret) setSecret({ endpointId: rotated.id, secret: rotated.secret });
                            loaded.reload();
                          }}
                        />
                      </div>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Loading>
      <h2>Register an endpoint</h2>
      <ActionForm
        label="Register an endpoint"
        submitLabel="Register endpoint"
        submit={async () => {
          const created = await api.createEndpoint(practiceId, url.trim());
          if (created.secret) setSecret({ endpointId: created.id, secret: created.secret });
          setUrl('');
          loaded.reload();
        }}
      >
        <Field label="Endpoint URL" hint="https, reaching a public address.">
          <input type="url" required value={url} onInput={(e) => setUrl(e.currentTarget.value)} />
        </Field>
      </ActionForm>
      {selected ? (
        <EndpointDeliveries endpointId={selected} />
      ) : (
        <p>Choose an endpoint to see its deliveries.</p>
      )}
    </section>
  );
}

function EndpointDeliveries({ endpointId }: { endpointId: string }) {
  const { api, practiceId } = useConsole();
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors.at(-1);
  const loaded = useLoad(
    () => api.endpointAttempts(practiceId, endpointId, cursor),
    [practiceId, endpointId, cursor],
  );
  const [since, setSince] = useState('');
  const [done, setDone] = useState('');
  return (
    <section aria-labelledby="deliveries-title">
      <h2 id="deliveries-title">Deliveries to {endpointId}</h2>
      {done ? <Notice>{done}</Notice> : null}
      <ActionForm
        label="Recover failed deliveries"
        submitLabel="Deliver again what failed"
        submit={async () => {
          const result = await api.recoverDeliveries(
            practiceId,
            endpointId,
            new Date(`${since}Z`).toISOString(),
          );
          setDone(
            `${result.queued} deliver${result.queued === 1 ? 'y' : 'ies'} queued again: ${result.failed} that had failed for good, ${result.retrying} still retrying.`,
          );
          loaded.reload();
        }}
      >
        <Field label="Failed since (UTC)">
          <input
            type="datetime-local"
            required
            value={since}
            onInput={(e) => setSince(e.currentTarget.value)}
          />
        </Field>
      </ActionForm>
      <Loading loaded={loaded}>
        {(page) =>
          page.data.length === 0 ? (
            <p>No delivery attempt yet.</p>
          ) : (
            <>
              <table>
                <caption class="visually-hidden">Delivery attempts, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Attempted</th>
                    <th scope="col">Event</th>
                    <th scope="col">Attempt</th>
                    <th scope="col">Answer</th>
                    <th scope="col" class="number">
                      Time (ms)
                    </th>
                    <th scope="col">Next try</th>
                    <th scope="col">
                      <span class="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {page.data.map((a) => {
                    const ok = a.statusCode !== null && a.statusCode >= 200 && a.statusCode < 300;
                    return (
                      <tr key={a.id} class={ok ? '' : 'row-bad'}>
                        <td>{dateTime(a.attemptedAt)}</td>
                        <td>
                          {a.eventType}
                          <br />
                          <small class="muted">{a.eventId}</small>
                        </td>
                        <td>#{a.attemptNumber}</td>
                        <td>
                          <Status value={ok ? 'delivered' : 'failed'} /> {a.statusCode ?? ''} {a.error ?? ''}
                        </td>
                        <td class="number">{a.durationMs}</td>
                        <td>{dateTime(a.nextAttemptAt)}</td>
                        <td>
                          <Action
                            label="Redeliver"
                            run={() => api.redeliverEvent(practiceId, a.eventId, endpointId)}
                            done={() => {
                              setDone(`${a.eventType} (${a.eventId}) queued for delivery again.`);
                              loaded.reload();
                            }}
                          />
                        </td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
              <nav class="pager" aria-label="Delivery pages">
                <button
                  type="button"
                  disabled={cursors.length === 0}
                  onClick={() => setCursors(cursors.slice(0, -1))}
                >
                  Newer
                </button>
                <button
                  type="button"
                  disabled={!page.nextCursor}
                  onClick={() => page.nextCursor && setCursors([...cursors, page.nextCursor])}
                >
                  Older
                </button>
              </nav>
            </>
          )
        }
      </Loading>
    </section>
  );
}
