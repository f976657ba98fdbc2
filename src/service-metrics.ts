// What an operator watches of the service under load, in one place: the job queue per lane (waiting,
// running, the oldest waiting one's age, each lane's slots), the practices with the deepest
// backlogs, webhook deliveries in flight per endpoint (src/jobs/queue-figures.ts, the database's
// figures, the same from every process), this API process's requests shed, requests in flight, first
// connections' waits and event-loop lag (src/platform/http/load-shedding.ts), and the statements, round
// trips and transactions this process has sent to the database since it started
// (src/platform/db/statement-counts.ts). Served as admin JSON
// (GET /admin/v1/metrics, declared in src/service-metrics-routes.ts), shown on the console's dashboard,
// and as Prometheus text at /metrics (src/metrics-endpoint.ts), read with METRICS_TOKEN.
import { type Static, Type } from 'typebox';
import type { Deps } from './api/deps.ts';
import { JOB_LANES, laneLimits } from './jobs/lanes.ts';
import { queueFigures } from './jobs/queue-figures.ts';
import { statementCounts } from './platform/db/statement-counts.ts';
import type { Trx } from './platform/db/transaction.ts';
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
          slots: Count,
          waiting: Count,
          running: Count,
          oldestWaitingSeconds: Nullable(Type.Number()),
        },
        { additionalProperties: false },
      ),
    ),
    deepestBacklogs: Type.Array(
      Type.Object({ practiceId: Type.String(), lane: Lane, waiting: Count }, { additionalProperties: false }),
    ),
    deliveriesInFlight: Type.Array(
      Type.Object(
        { practiceId: Type.String(), endpointId: Type.String(), running: Count, waiting: Count },
        { additionalProperties: false },
      ),
    ),
    endpointConcurrency: Count,
    requestsShed: Type.Object(
      {
        connectionWait: Count,
        eventLoopLag: Count,
        inFlightLimit: Count,
        claimBacklog: Count,
      },
      { additionalProperties: false },
    ),
    requestsInFlight: Type.Object(
      {
        running: Count,
        peak: Type.Integer({ minimum: 0, description: 'The most at once since the process started.' }),
        limit: Type.Integer({
          minimum: 0,
          description:
            'Past it requests are shed now; 0: no limit. Under a latency target it falls while answers are slower than the target and rises back to the ceiling.',
        }),
        ceiling: Type.Integer({
          minimum: 0,
          description: 'The most the limit rises to (LOAD_SHED_MAX_IN_FLIGHT); 0: no limit.',
        }),
        latencyTargetMs: Type.Integer({
          minimum: 0,
          description: 'The answer time the limit steers by (LOAD_SHED_LATENCY_TARGET_MS); 0: a fixed limit.',
        }),
      },
      { additionalProperties: false },
    ),
    firstConnectionWait: Type.Object(
      {
        requests: Type.Integer({
          minimum: 0,
          description: 'API requests whose first transaction had its connection, since the process started.',
        }),
        longestMs: Type.Number({ description: 'The longest any of them waited for it, in milliseconds.' }),
      },
      { additionalProperties: false },
    ),
    eventLoopLagMs: Type.Number(),
    database: Type.Object(
      {
        statements: Count,
        roundTrips: Count,
        transactions: Count,
      },
      {
        additionalProperties: false,
        description:
          'What this process has sent to the database since it started: SQL statements (BEGIN, COMMIT and ROLLBACK not counted among them), round trips, and transactions.',
      },
    ),
  },
  { title: 'ServiceMetrics', additionalProperties: false },
);
export type ServiceMetrics = Static<typeof ServiceMetrics>;

export async function serviceMetrics(trx: Trx, deps: Deps): Promise<ServiceMetrics> {
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
    requestsShed: {
      connectionWait: shed.connection_wait,
      eventLoopLag: shed.event_loop_lag,
      inFlightLimit: shed.in_flight_limit,
      claimBacklog: shed.claim_backlog,
    },
    requestsInFlight: {
      running: deps.loadShedder.inFlight,
      peak: deps.loadShedder.peakInFlight,
      limit: deps.loadShedder.maxInFlight,
      ceiling: deps.loadShedder.inFlightCeiling,
      latencyTargetMs: deps.loadShedder.latencyTargetMs,
    },
    firstConnectionWait: {
      requests: deps.loadShedder.firstConnectionWaits.requests,
      longestMs: Math.round(deps.loadShedder.firstConnectionWaits.longestMs * 10) / 10,
    },
    eventLoopLagMs: Math.round(deps.loadShedder.eventLoopLagMs),
    database: statementCounts(),
  };
}
