// The practice's audit log, newest first, paged, filtered (on the server) by client, method, path,
// status and date; the filters live in the address, so a filtered view can be bookmarked.
import { useState } from 'preact/hooks';
import type { AuditFilters } from '../api.ts';
import { Field, Loading, useConsole, useLoad } from '../components/ui.tsx';
import { dateTime } from '../format.ts';
import { navigate } from '../router.ts';

const FILTERS = ['clientId', 'method', 'path', 'status', 'from', 'to'] as const;

/** The page's filters as the API takes them: a day's range from `from` to the end of `to` (UTC). */
function apiFilters(params: URLSearchParams): AuditFilters {
  const filters: AuditFilters = {};
  for (const name of ['clientId', 'method', 'path', 'status'] as const) {
    const value = params.get(name);
    if (value) filters[name] = value;
  }
  const from = params.get('from');
  const to = params.get('to');
  if (from) filters.since = `${from}T00:00:00Z`;
  if (to) filters.until = new Date(Date.parse(`${to}T00:00:00Z`) + 86_400_000).toISOString();
  return filters;
}

export function AuditPage({ params }: { params: URLSearchParams }) {
  const { api, practiceId } = useConsole();
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors.at(-1);
  const filters = apiFilters(params);
  const loaded = useLoad(
    () => api.auditEvents(practiceId, filters, cursor),
    [practiceId, params.toString(), cursor],
  );
  return (
    <section aria-labelledby="audit-title">
      <h1 id="audit-title">Audit log</h1>
      <form
        class="filters"
        aria-label="Filter the audit log"
        onSubmit={(event) => {
          event.preventDefault();
          const form = new FormData(event.currentTarget);
          navigate(
            'audit',
            Object.fromEntries(FILTERS.map((name) => [name, String(form.get(name) ?? '').trim()])),
          );
        }}
      >
        <Field label="Client">
          <input name="clientId" placeholder="cli_..." defaultValue={params.get('clientId') ?? ''} />
        </Field>
        <Field label="Method">
          <select name="method" defaultValue={params.get('method') ?? ''}>
            <option value="">Any</option>
            {['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'JOB'].map((m) => (
              <option key={m} value={m}>
                {m}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Path contains">
          <input name="path" placeholder="/claim/resubmit" defaultValue={params.get('path') ?? ''} />
        </Field>
        <Field label="HTTP status">
          <input name="status" type="number" min="0" max="599" defaultValue={params.get('status') ?? ''} />
        </Field>
        <Field label="From (UTC)">
          <input name="from" type="date" defaultValue={params.get('from') ?? ''} />
        </Field>
        <Field label="To (UTC)">
          <input name="to" type="date" defaultValue={params.get('to') ?? ''} />
        </Field>
        <button type="submit" class="primary">
          Filter
        </button>
      </form>
      <Loading loaded={loaded}>
        {(page) => (
          <>
            {page.data.length === 0 ? <p>No audit event matches.</p> : null}
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
