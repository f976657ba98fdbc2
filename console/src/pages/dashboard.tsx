// The dashboard: today's claims by status, money claimed against approved and paid, the last 14 days
// as a chart, and the webhook endpoints that are failing.
import { HorizontalBars, PairedColumns } from '../components/charts.tsx';
import { Loading, Status, useConsole, useLoad } from '../components/ui.tsx';
import { dateTime, money, words } from '../format.ts';
import { href } from '../router.ts';

const TONE: Record<string, string> = {
  accepted: 'good',
  partially_accepted: 'warn',
  rejected: 'bad',
  submitting: 'info',
  reversing: 'info',
  reversed: 'muted',
  reversal_failed: 'bad',
};

export function DashboardPage() {
  const { api, practiceId } = useConsole();
  const loaded = useLoad(() => api.dashboard(practiceId), [practiceId]);
  return (
    <section aria-labelledby="dashboard-title">
      <h1 id="dashboard-title">Dashboard</h1>
      <Loading loaded={loaded}>
        {(d) => {
          const fmt = (v: number) => money(v, d.currency);
          return (
            <>
              <p class="muted">Claims sent on {d.date} (the practice's calendar day).</p>
              <div class="cards">
                <div class="card">
                  <h2>Claimed</h2>
                  <p class="figure">{fmt(d.money.claimed)}</p>
                </div>
                <div class="card">
                  <h2>Approved by insurers</h2>
                  <p class="figure">{fmt(d.money.approved)}</p>
                </div>
                <div class="card">
                  <h2>Paid by insurers</h2>
                  <p class="figure">{fmt(d.money.paidByInsurer)}</p>
                </div>
                <div class="card">
                  <h2>Paid by patients</h2>
                  <p class="figure">{fmt(d.money.paidByPatient)}</p>
                </div>
              </div>
              <div class="two-columns">
                <HorizontalBars
                  title="Today's claims by outcome"
                  bars={d.claimsByStatus.map((s) => ({
                    label: words(s.status),
                    value: s.count,
                    tone: TONE[s.status] ?? 'info',
                  }))}
                />
                <PairedColumns
                  title="Claimed and paid, last 14 days"
                  labels={['Claimed', 'Paid']}
                  format={fmt}
                  days={d.days.map((day) => ({ date: day.date, a: day.claimed, b: day.paid }))}
                />
              </div>
              <h2>Failing webhook endpoints</h2>
              {d.failingEndpoints.length === 0 ? (
                <p>Every endpoint is delivering.</p>
              ) : (
                <table>
                  <thead>
                    <tr>
                      <th scope="col">Endpoint</th>
                      <th scope="col">State</th>
                      <th scope="col">Failing since</th>
                      <th scope="col" class="number">
                        Undelivered
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {d.failingEndpoints.map((e) => (
                      <tr key={e.id}>
                        <td>
                          <a href={href('webhooks', { endpoint: e.id })}>{e.url}</a>
                        </td>
                        <td>
                          <Status value={e.enabled ? 'failed' : 'disabled'} />
                          {e.disabledReason ? <small> {e.disabledReason}</small> : null}
                        </td>
                        <td>{dateTime(e.failingSince)}</td>
                        <td class="number">{e.undelivered}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
            </>
          );
        }}
      </Loading>
    </section>
  );
}
