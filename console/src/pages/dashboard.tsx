// The dashboard: today's claims by status, money claimed against approved, paid and refunded, the last
// 14 days as a chart, the webhook endpoints that are failing, and the service under load (the job queue
// per lane, the deepest backlogs, deliveries in flight per endpoint, requests shed).
import { HorizontalBars, PairedColumns } from '../components/charts.tsx';
import { Loading, Status, useConsole, useLoad } from '../components/ui.tsx';
import { dateTime, money, words } from '../format.ts';
import { href } from '../router.ts';
import type { ServiceMetrics } from '../types.ts';

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
  const load = useLoad(() => api.metrics(), [practiceId]);
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
                <div class="card">
                  <h2>Refunded</h2>
                  <p class="figure">{fmt(d.money.refunded)}</p>
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
                  title="Claimed and paid (less refunds), last 14 days"
                  labels={['Claimed', 'Paid less refunds']}
                  format={fmt}
                  // A day that gave back more than it took in shows no paid column, not one below the axis.
                  days={d.days.map((day) => ({ date: day.date, a: day.claimed, b: Math.max(0, day.paid) }))}
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
      <Loading loaded={load}>{(m) => <ServiceLoad metrics={m} />}</Loading>
    </section>
  );
}

/** The whole service, every practice: what the queue holds and what the API refused. */
function ServiceLoad({ metrics }: { metrics: ServiceMetrics }) {
  const { connectionWait, eventLoopLag, inFlightLimit, claimBacklog } = metrics.requestsShed;
  const shed = connectionWait + eventLoopLag + inFlightLimit + claimBacklog;
  const inFlight = metrics.requestsInFlight;
  return (
    <>
      <h2>Service load</h2>
      <p class="muted">
        Every practice. Requests shed (answered 503 because this API process was overloaded): {shed}
        {shed > 0
          ? ` (${connectionWait} waiting for the database, ${eventLoopLag} on event-loop lag, ${inFlightLimit} past the in-flight limit, ${claimBacklog} behind the claims backlog)`
          : ''}
        ; requests in flight {inFlight.running}
        {inFlight.limit > 0 ? ` of ${inFlight.limit}` : ''}
        {inFlight.limit < inFlight.ceiling
          ? ` (lowered from ${inFlight.ceiling}: answers slower than ${inFlight.latencyTargetMs} ms)`
          : ''}{' '}
        (at most {inFlight.peak}); longest wait for a first connection {metrics.firstConnectionWait.longestMs}{' '}
        ms; event-loop lag {metrics.eventLoopLagMs} ms.
      </p>
      <table>
        <caption>Job queue by lane</caption>
        <thead>
          <tr>
            <th scope="col">Lane</th>
            <th scope="col" class="number">
              Waiting
            </th>
            <th scope="col" class="number">
              Running
            </th>
            <th scope="col" class="number">
              Slots per worker
            </th>
            <th scope="col" class="number">
              Oldest waiting
            </th>
          </tr>
        </thead>
        <tbody>
          {metrics.lanes.map((lane) => (
            <tr key={lane.lane}>
              <td>{words(lane.lane)}</td>
              <td class="number">{lane.waiting}</td>
              <td class="number">{lane.running}</td>
              <td class="number">{lane.slots}</td>
              <td class="number">
                {lane.oldestWaitingSeconds === null ? '—' : `${Math.round(lane.oldestWaitingSeconds)} s`}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <div class="two-columns">
        <table>
          <caption>Deepest backlogs</caption>
          <thead>
            <tr>
              <th scope="col">Practice</th>
              <th scope="col">Lane</th>
              <th scope="col" class="number">
                Waiting
              </th>
            </tr>
          </thead>
          <tbody>
            {metrics.deepestBacklogs.map((b) => (
              <tr key={`${b.practiceId}/${b.lane}`}>
                <td>{b.practiceId}</td>
                <td>{words(b.lane)}</td>
                <td class="number">{b.waiting}</td>
              </tr>
            ))}
          </tbody>
        </table>
        <table>
          <caption>Deliveries in flight per endpoint (at most {metrics.endpointConcurrency} each)</caption>
          <thead>
            <tr>
              <th scope="col">Endpoint</th>
              <th scope="col" class="number">
                Running
              </th>
              <th scope="col" class="number">
                Waiting
              </th>
            </tr>
          </thead>
          <tbody>
            {metrics.deliveriesInFlight.map((d) => (
              <tr key={`${d.practiceId}/${d.endpointId}`}>
                <td>{d.endpointId}</td>
                <td class="number">{d.running}</td>
                <td class="number">{d.waiting}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}
