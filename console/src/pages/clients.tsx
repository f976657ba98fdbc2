// API clients and their keys: create a client with its permissions, suspend or resume it, issue a key
// (shown once), replace a key (the old one keeps working for a day) and revoke keys; each key says who
// issued it and when it was last used. Suspending and revoking ask first.
import { useState } from 'preact/hooks';
import { PERMISSIONS } from '../../../src/auth/permissions.ts';
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
import type { ApiKey, Client } from '../types.ts';

/** How long a replaced key keeps working, so the integration can switch without downtime. */
const REPLACE_GRACE_SECONDS = 86_400;

export function ClientsPage() {
  const { api, practiceId } = useConsole();
  const loaded = useLoad(() => api.listClients(practiceId), [practiceId]);
  const [name, setName] = useState('');
  const [permissions, setPermissions] = useState<string[]>([]);
  const [newKey, setNewKey] = useState<ApiKey | null>(null);
  return (
    <section aria-labelledby="clients-title">
      <h1 id="clients-title">API clients and keys</h1>
      {newKey?.key ? (
        <Notice>
          New key {newKey.id} for {newKey.clientId} (shown once): <code>{newKey.key}</code>
        </Notice>
      ) : null}
      <Loading loaded={loaded}>
        {(page) =>
          page.data.length === 0 ? (
            <p>No client yet.</p>
          ) : (
            page.data.map((c) => (
              <ClientCard key={c.id} client={c} reload={loaded.reload} onKey={setNewKey} />
            ))
          )
        }
      </Loading>
      <h2>Create a client</h2>
      <ActionForm
        label="Create a client"
        submitLabel="Create client"
        submit={async () => {
          await api.createClient(practiceId, { name: name.trim(), permissions });
          setName('');
          setPermissions([]);
          loaded.reload();
        }}
      >
        <Field label="Client name">
          <input required value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </Field>
        <fieldset class="permissions">
          <legend>Permissions</legend>
          {PERMISSIONS.map((p) => (
            <label key={p} class="choice">
              <input
                type="checkbox"
                checked={permissions.includes(p)}
                onChange={(e) =>
                  setPermissions(
                    e.currentTarget.checked ? [...permissions, p] : permissions.filter((x) => x !== p),
                  )
                }
              />
              {p}
            </label>
          ))}
        </fieldset>
      </ActionForm>
    </section>
  );
}

function ClientCard({
  client,
  reload,
  onKey,
}: {
  client: Client;
  reload: () => void;
  onKey: (key: ApiKey) => void;
}) {
  const { api } = useConsole();
  const keys = useLoad(() => api.listKeys(client.id), [client.id]);
  return (
    <article class="panel" aria-labelledby={`client-${client.id}`}>
      <h2 id={`client-${client.id}`}>
        {client.name} <Status value={client.status} />
      </h2>
      <p class="muted">
        {client.id} · created {dateTime(client.createdAt)} ·{' '}
        {client.allowedIps.length > 0 ? `from ${client.allowedIps.join(', ')}` : 'from any address'}
      </p>
      <p>
        <strong>Permissions:</strong> {client.permissions.length > 0 ? client.permissions.join(', ') : 'none'}
      </p>
      <div class="actions">
        <Action
          label={client.status === 'suspended' ? 'Resume client' : 'Suspend client'}
          kind={client.status === 'suspended' ? 'secondary' : 'danger'}
          {...(client.status === 'suspended'
            ? {}
            : {
                confirm: `Suspend ${client.name}? Every request with its keys is refused until it is resumed.`,
              })}
          run={() => api.setClientSuspended(client.id, client.status !== 'suspended')}
          done={reload}
        />
        <Action
          label="Issue a key"
          run={() => api.issueKey(client.id)}
          done={(k) => {
            onKey(k as ApiKey);
            keys.reload();
          }}
        />
      </div>
      <Loading loaded={keys}>
        {(page) =>
          page.data.length === 0 ? (
            <p>No key.</p>
          ) : (
            <table>
              <caption class="visually-hidden">Keys of {client.name}</caption>
              <thead>
                <tr>
                  <th scope="col">Key</th>
                  <th scope="col">Created</th>
                  <th scope="col">Created by</th>
                  <th scope="col">Last used</th>
                  <th scope="col">Expires</th>
                  <th scope="col">Revoked</th>
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {page.data.map((k) => (
                  <tr key={k.id}>
                    <td>{k.id}</td>
                    <td>{dateTime(k.createdAt)}</td>
                    <td>{k.createdBy ?? <span class="muted">not recorded</span>}</td>
                    <td>{k.lastUsedAt ? dateTime(k.lastUsedAt) : <span class="muted">never</span>}</td>
                    <td>{dateTime(k.expiresAt)}</td>
                    <td>{dateTime(k.revokedAt)}</td>
                    <td>
                      {k.revokedAt ? null : (
                        <div class="actions">
                          <Action
                            label="Replace"
                            confirm={`Issue a new key for ${client.name}? Key ${k.id} keeps working for one more day, then stops.`}
                            run={() =>
                              api.issueKey(client.id, {
                                expireOldKeyId: k.id,
                                graceSeconds: REPLACE_GRACE_SECONDS,
                              })
                            }
                            done={(issued) => {
                              onKey(issued as ApiKey);
                              keys.reload();
                            }}
                          />
                          <Action
                            label="Revoke"
                            kind="danger"
                            confirm={`Revoke key ${k.id}? Every request with it is refused from now on.`}
                            run={() => api.revokeKey(k.id)}
                            done={keys.reload}
                          />
                        </div>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Loading>
    </article>
  );
}
