// The service's figures (src/service-metrics.ts) as Prometheus text at GET /metrics, with prom-client,
// behind the admin token (checked as the admin API checks it). Hidden from the OpenAPI document: it is
// for a scraper, not a client.
import type { FastifyInstance } from 'fastify';
import { Counter, Gauge, Registry } from 'prom-client';
import { registerAdminScope } from './api/admin-route.ts';
import type { Deps } from './api/deps.ts';
import { asOperator } from './platform/db/transaction.ts';
import { type ServiceMetrics, serviceMetrics } from './service-metrics.ts';

/** The figures as Prometheus text (exposition format 0.0.4). */
export async function prometheusText(
  metrics: ServiceMetrics,
): Promise<{ contentType: string; text: string }> {
  const registry = new Registry();
  const registers = [registry];
  const gauge = (name: string, help: string, labelNames: string[] = []) =>
    new Gauge({ name: `practice_billing_${name}`, help, labelNames, registers });
  const waiting = gauge('jobs_waiting', 'Jobs due and not running, per lane.', ['lane']);
  const running = gauge('jobs_running', 'Jobs running under a lease in every worker, per lane.', ['lane']);
  const oldest = gauge('jobs_oldest_waiting_seconds', 'Seconds since the oldest waiting job fell due.', [
    'lane',
  ]);
  const slots = gauge('jobs_slots', 'Jobs of the lane one worker runs at once.', ['lane']);
  for (const lane of metrics.lanes) {
    waiting.set({ lane: lane.lane }, lane.waiting);
    running.set({ lane: lane.lane }, lane.running);
    oldest.set({ lane: lane.lane }, lane.oldestWaitingSeconds ?? 0);
    slots.set({ lane: lane.lane }, lane.slots);
  }
  const backlog = gauge('practice_jobs_waiting', 'Jobs waiting of the practices with the deepest backlogs.', [
    'practice',
    'lane',
  ]);
  for (const row of metrics.deepestBacklogs)
    backlog.set({ practice: row.practiceId, lane: row.lane }, row.waiting);
  const inFlight = gauge('webhook_deliveries_in_flight', 'Deliveries running per endpoint.', [
    'practice',
    'endpoint',
  ]);
  const endpointWaiting = gauge(
    'webhook_deliveries_waiting',
    'Deliveries waiting per endpoint with some running.',
    ['practice', 'endpoint'],
  );
  for (const row of metrics.deliveriesInFlight) {
    inFlight.set({ practice: row.practiceId, endpoint: row.endpointId }, row.running);
    endpointWaiting.set({ practice: row.practiceId, endpoint: row.endpointId }, row.waiting);
  }
  const shed = new Counter({
    name: 'practice_billing_requests_shed_total',
    help: 'API requests this process refused with 503 because it was overloaded, by reason.',
    labelNames: ['reason'],
    registers,
  });
  shed.inc({ reason: 'connection_wait' }, metrics.requestsShed.connectionWait);
  shed.inc({ reason: 'event_loop_lag' }, metrics.requestsShed.eventLoopLag);
  shed.inc({ reason: 'in_flight_limit' }, metrics.requestsShed.inFlightLimit);
  shed.inc({ reason: 'claim_backlog' }, metrics.requestsShed.claimBacklog);
  shed.inc({ reason: 'webhook_backlog' }, metrics.requestsShed.webhookBacklog);
  gauge('api_requests_in_flight', 'API requests this process is serving now.').set(
    metrics.requestsInFlight.running,
  );
  gauge(
    'api_requests_in_flight_limit',
    'API requests in flight past which this process sheds now; 0: none.',
  ).set(metrics.requestsInFlight.limit);
  gauge('api_requests_in_flight_ceiling', 'The most the in-flight limit rises to; 0: no limit.').set(
    metrics.requestsInFlight.ceiling,
  );
  new Counter({
    name: 'practice_billing_first_connection_waits_total',
    help: "API requests whose first transaction had its connection (this process's).",
    registers,
  }).inc(metrics.firstConnectionWait.requests);
  gauge(
    'first_connection_wait_longest_seconds',
    "The longest an API request waited for its first transaction's connection (this process's).",
  ).set(metrics.firstConnectionWait.longestMs / 1000);
  gauge('event_loop_lag_seconds', "This process's event-loop lag at its latest sample.").set(
    metrics.eventLoopLagMs / 1000,
  );
  const counter = (name: string, help: string, value: number) =>
    new Counter({ name: `practice_billing_db_${name}_total`, help, registers }).inc(value);
  counter(
    'statements',
    'SQL statements this process has sent to the database, BEGIN, COMMIT and ROLLBACK not included.',
    metrics.database.statements,
  );
  counter('round_trips', 'Round trips this process has made to the database.', metrics.database.roundTrips);
  counter(
    'transactions',
    'Transactions this process has begun on the database.',
    metrics.database.transactions,
  );
  return { contentType: registry.contentType, text: await registry.metrics() };
}

/** Serves GET /metrics (Prometheus text) behind the admin token, as the admin API authenticates. */
export async function registerMetricsEndpoint(
  app: FastifyInstance,
  deps: Deps,
  adminToken: string | readonly string[],
): Promise<void> {
  await app.register(async (scope) => {
    registerAdminScope(scope, deps, adminToken, []);
    scope.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
      const metrics = await asOperator(deps.db, (trx) => serviceMetrics(trx, deps));
      const { contentType, text } = await prometheusText(metrics);
      return reply.type(contentType).send(text);
    });
  });
}
