// What an operator watches of the service under load, in one place: the job queue per lane (waiting,
// running, scheduled, the oldest waiting one's age, each lane's slots), the practices with the deepest
// backlogs, webhook deliveries in flight per endpoint (src/jobs/queue-figures.ts, the database's
// figures, the same from every process), and this API process's requests shed, event-loop lag and
// transactions waiting for a connection (src/platform/http/load-shedding.ts). Served as admin JSON
// (GET /admin/v1/metrics), shown on the console's dashboard, and as Prometheus text at /metrics
// (prom-client) behind the same admin token.
import type { FastifyInstance } from 'fastify';
import { Counter, Gauge, Registry } from 'prom-client';
import { type Static, Type } from 'typebox';
import { defineAdminRoute, registerAdminScope } from './api/admin-route.ts';
import type { Deps } from './api/deps.ts';
import { JOB_LANES, laneLimits } from './jobs/lanes.ts';
import { queueFigures } from './jobs/queue-figures.ts';
import { connectionWaiters } from './platform/db/connection-waits.ts';
import { asOperator, type Trx } from './platform/db/transaction.ts';
import { Enum, Nullable } from './platform/http/schema.ts';

const Lane = Enum(JOB_LANES);
const Count = Type.Integer({ minimum: 0 });

export const ServiceMetrics = Type.Object(
  {
    object: Type.Literal('service_metrics'),
    lanes: Type.Array(
      Type.Object(
        {
          lane: Lane,
          slots: Type.Integer({ description: 'Jobs of the lane one worker runs at once.' }),
          waiting: Type.Integer({ description: 'Jobs due and not running.' }),
          running: Type.Integer({ description: 'Jobs running under a lease, in every worker.' }),
          scheduled: Type.Integer({ description: 'Jobs due later (retries, remittances).' }),
          oldestWaitingSeconds: Nullable(
            Type.Number({ description: 'Seconds since the oldest waiting job fell due.' }),
          ),
        },
        { additionalProperties: false },
      ),
      { description: "Claim work ('claims') and webhook deliveries ('webhooks'), each with its own slots." },
    ),
    deepestBacklogs: Type.Array(
      Type.Object({ practiceId: Type.String(), lane: Lane, waiting: Count }, { additionalProperties: false }),
      { description: 'The practices with the most jobs waiting, most first.' },
    ),
    deliveriesInFlight: Type.Array(
      Type.Object(
        { practiceId: Type.String(), endpointId: Type.String(), running: Count, waiting: Count },
        { additionalProperties: false },
      ),
      { description: 'Webhook endpoints with deliveries running, and how many more wait for their turn.' },
    ),
    endpointConcurrency: Type.Integer({ description: 'Deliveries to one endpoint that may run at once.' }),
    requestsShed: Type.Object(
      { connectionWait: Count, eventLoopLag: Count },
      { additionalProperties: false, description: 'Requests this API process refused with 503, by reason.' },
    ),
    eventLoopLagMs: Type.Number({ description: "This API process's event-loop lag at its latest sample." }),
    connectionWaiters: Type.Integer({
      description: 'Transactions of this API process waiting for a database connection now.',
    }),
  },
  { title: 'ServiceMetrics', additionalProperties: false },
);
type ServiceMetrics = Static<typeof ServiceMetrics>;

async function serviceMetrics(trx: Trx, deps: Deps): Promise<ServiceMetrics> {
  const queue = await queueFigures(trx);
  const shed = deps.loadShedder.shed;
  return {
    object: 'service_metrics',
    lanes: queue.lanes.map((figures) => ({
      ...figures,
      slots: laneLimits(deps.config, figures.lane).concurrency,
    })),
    deepestBacklogs: queue.deepestBacklogs,
    deliveriesInFlight: queue.deliveriesInFlight,
    endpointConcurrency: deps.config.webhookEndpointConcurrency,
    requestsShed: { connectionWait: shed.connection_wait, eventLoopLag: shed.event_loop_lag },
    eventLoopLagMs: Math.round(deps.loadShedder.eventLoopLagMs),
    connectionWaiters: connectionWaiters(deps.db),
  };
}

export const metricsAdminRoutes = [
  defineAdminRoute({
    method: 'GET',
    url: '/metrics',
    operationId: 'adminGetMetrics',
    cli: { command: 'metrics get' },
    summary:
      'The service under load: job queue per lane, deepest backlogs, deliveries in flight, requests shed',
    successStatus: 200,
    response: ServiceMetrics,
    handler: async ({ trx, deps }) => ({ body: await serviceMetrics(trx, deps) }),
  }),
];

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
  const scheduled = gauge('jobs_scheduled', 'Jobs due later, per lane.', ['lane']);
  const oldest = gauge('jobs_oldest_waiting_seconds', 'Seconds since the oldest waiting job fell due.', [
    'lane',
  ]);
  const slots = gauge('jobs_slots', 'Jobs of the lane one worker runs at once.', ['lane']);
  for (const lane of metrics.lanes) {
    waiting.set({ lane: lane.lane }, lane.waiting);
    running.set({ lane: lane.lane }, lane.running);
    scheduled.set({ lane: lane.lane }, lane.scheduled);
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
  gauge('event_loop_lag_seconds', "This process's event-loop lag at its latest sample.").set(
    metrics.eventLoopLagMs / 1000,
  );
  gauge('database_connection_waiters', 'Transactions of this process waiting for a connection.').set(
    metrics.connectionWaiters,
  );
  return { contentType: registry.contentType, text: await registry.metrics() };
}

/** Serves GET /metrics (Prometheus text) behind the admin token, as the admin API authenticates. */
export async function registerMetricsEndpoint(
  app: FastifyInstance,
  deps: Deps,
  adminToken: string,
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
