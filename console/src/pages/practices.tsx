// Every practice, for the operator view: open one to work in it.
import { Loading, useConsole, useLoad } from '../components/ui.tsx';
import { dateTime } from '../format.ts';

export function PracticesPage({ onOpen }: { onOpen: (practiceId: string) => void }) {
  const { api, practiceId } = useConsole();
  const loaded = useLoad(() => api.listPractices(), []);
  return (
    <section aria-labelledby="practices-title">
      <h1 id="practices-title">Practices</h1>
      <Loading loaded={loaded}>
        {(page) => (
          <table>
            <thead>
              <tr>
                <th scope="col">Practice</th>
                <th scope="col">Currency</th>
                <th scope="col">Time zone</th>
                <th scope="col">Integrations</th>
                <th scope="col">Created</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {page.data.map((p) => (
                <tr key={p.id} class={p.id === practiceId ? 'selected' : ''}>
                  <td>
                    {p.name}
                    <br />
                    <small class="muted">{p.id}</small>
                  </td>
                  <td>{p.currency}</td>
                  <td>{p.timezone}</td>
                  <td>{p.integrationsEnabled ? 'on' : 'off'}</td>
                  <td>{dateTime(p.createdAt)}</td>
                  <td>
                    {p.id === practiceId ? (
                      <span>Open now</span>
                    ) : (
                      <button type="button" onClick={() => onOpen(p.id)}>
                        Open {p.name}
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Loading>
    </section>
  );
}
