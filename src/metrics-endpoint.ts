// Prometheus text at GET /metrics, with prom-client: this process's own figures
// (src/platform/observability/metrics.ts), whether it reaches its database, and, in a process that
// serves the API, the service's (src/service-metrics.ts) and the failing webhook endpoints. On the API's port it is read with METRICS_TOKEN (or, when none is set, the
// admin token); on a port of its own (METRICS_PORT, the worker's way of being scraped) with
// METRICS_TOKEN when one is set, and without any when none is: the operator's choice, for a port only
// the scraper reaches. Hidden from the OpenAPI document: it is for a scraper, not a client.
import { createHash, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { Counter, Gauge, Registry } from 'prom-client';
import type { Deps } from './api/deps.ts';
import type { Database } from './platform/db/database.ts';
import { asOperator } from './platform/db/transaction.ts';
import { AppError } from './platform/http/errors.ts';
import { processMetricsText } from './platform/observability/metrics.ts';
import { type ServiceMetrics, serviceMetrics } from './service-metrics.ts';
import { failingEndpoints } from './webhooks/store.ts';

/** A metric of the service's figures: its name after `practice_billing_`, and its samples. */
interface ServiceMetric {
  type: 'gauge' | 'counter';
  name: string;
  help: string;
  labelNames?: string[];
  samples(metrics: ServiceMetrics): Array<[labels: Record<string, string>, value: number]>;
}

/** A gauge per lane of the job queue. */
function perLane(name: string, help: string, value: (lane: ServiceMetrics['lanes'][number]) => number) {
  return {
    type: 'gauge',
    name,
    help,
    labelNames: ['lane'],
    samples: (metrics) => metrics.lanes.map((lane) => [{ lane: lane.lane }, value(lane)]),
  } satisfies ServiceMetric;
}

/** A gauge per webhook endpoint with deliveries running. */
function perEndpoint(
  name: string,
  help: string,
  value: (row: ServiceMetrics['deliveriesInFlight'][number]) => number,
) {
  return {
    type: 'gauge',
    name,
    help,
    labelNames: ['practice', 'endpoint'],
    samples: (metrics) =>
      metrics.deliveriesInFlight.map((row) => [
        { practice: row.practiceId, endpoint: row.endpointId },
        value(row),
      ]),
  } satisfies ServiceMetric;
}

/** A metric without labels. */
function single(
  type: ServiceMetric['type'],
  name: string,
  help: string,
  value: (m: ServiceMetrics) => number,
) {
  return { type, name, help, samples: (metrics) => [[{}, value(metrics)]] } satisfies ServiceMetric;
}

/** The service's figures as Prometheus metrics, in the order they are written. */
const SERVICE_METRICS: ServiceMetric[] = [
  perLane('jobs_waiting', 'Jobs due and not running, per lane.', (lane) => lane.waiting),
  perLane('jobs_running', 'Jobs running under a lease in every worker, per lane.', (lane) => lane.running),
  perLane(
    'jobs_oldest_waiting_seconds',
    'Seconds since the oldest waiting job fell due.',
    (lane) => lane.oldestWaitingSeconds ?? 0,
  ),
  perLane('jobs_slots', 'Jobs of the lane one worker runs at once.', (lane) => lane.slots),
  {
    type: 'gauge',
    name: 'practice_jobs_waiting',
    help: 'Jobs waiting of the practices with the deepest backlogs.',
    labelNames: ['practice', 'lane'],
    samples: (metrics) =>
      metrics.deepestBacklogs.map((row) => [{ practice: row.practiceId, lane: row.lane }, row.waiting]),
  },
  perEndpoint('webhook_deliveries_in_flight', 'Deliveries running per endpoint.', (row) => row.running),
  perEndpoint(
    'webhook_deliveries_waiting',
    'Deliveries waiting per endpoint with some running.',
    (row) => row.waiting,
  ),
  {
    type: 'counter',
    name: 'requests_shed_total',
    help: 'API requests this process refused with 503 because it was overloaded, by reason.',
    labelNames: ['reason'],
    samples: ({ requestsShed: shed }) => [
      [{ reason: 'connection_wait' }, shed.connectionWait],
      [{ reason: 'event_loop_lag' }, shed.eventLoopLag],
      [{ reason: 'in_flight_limit' }, shed.inFlightLimit],
      [{ reason: 'claim_backlog' }, shed.claimBacklog],
    ],
  },
  single(
    'gauge',
    'api_requests_in_flight',
    'API requests this process is serving now.',
    (m) => m.requestsInFlight.running,
  ),
  single(
    'gauge',
    'api_requests_in_flight_limit',
    'API requests in flight past which this process sheds now; 0: none.',
    (m) => m.requestsInFlight.limit,
  ),
  single(
    'gauge',
    'api_requests_in_flight_ceiling',
    'The most the in-flight limit rises to; 0: no limit.',
    (m) => m.requestsInFlight.ceiling,
  ),
  single(
    'counter',
    'first_connection_waits_total',
    "API requests whose first transaction had its connection (this process's).",
    (m) => m.firstConnectionWait.requests,
  ),
  single(
    'gauge',
    'first_connection_wait_longest_seconds',
    "The longest an API request waited for its first transaction's connection (this process's).",
    (m) => m.firstConnectionWait.longestMs / 1000,
  ),
  single(
    'gauge',
    'event_loop_lag_seconds',
    "This process's event-loop lag at its latest sample.",
    (m) => m.eventLoopLagMs / 1000,
  ),
  single(
    'counter',
    'db_statements_total',
    'SQL statements this process has sent to the database, BEGIN, COMMIT and ROLLBACK not included.',
    (m) => m.database.statements,
  ),
  single(
    'counter',
    'db_round_trips_total',
    'Round trips this process has made to the database.',
    (m) => m.database.roundTrips,
  ),
  single(
    'counter',
    'db_transactions_total',
    'Transactions this process has begun on the database.',
    (m) => m.database.transactions,
  ),
];

/** The figures as Prometheus text (exposition format 0.0.4). */
export async function prometheusText(
  metrics: ServiceMetrics,
): Promise<{ contentType: string; text: string }> {
  const registry = new Registry();
  for (const { type, name, help, labelNames = [], samples } of SERVICE_METRICS) {
    const declared = { name: `practice_billing_${name}`, help, labelNames, registers: [registry] };
    const metric = type === 'gauge' ? new Gauge(declared) : new Counter(declared);
    for (const [labels, value] of samples(metrics)) {
      if (metric instanceof Gauge) metric.set(labels, value);
      else metric.inc(labels, value);
    }
  }
  return { contentType: registry.contentType, text: await registry.metrics() };
}

const digest = (token: string) => createHash('sha256').update(token).digest();

/** Whether an Authorization header carries `Bearer <token>` (compared in constant time). */
function bearerMatches(authorization: string | undefined, expected: Buffer): boolean {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  return match !== null && timingSafeEqual(digest(match[1]!), expected);
}

/**
 * Everything a scrape of this process reads: its own figures; whether it reaches its database now
 * (practice_billing_ready, as /readyz asks); and, in a process that serves the API and while the
 * database answers, the service's figures and the webhook endpoints whose deliveries are failing.
 */
export async function scrapeText(
  db: Database,
  deps: Deps | undefined,
): Promise<{ contentType: string; text: string }> {
  const registry = new Registry();
  const ready = await sql`SELECT 1`.execute(db.kysely).then(
    () => true,
    () => false,
  );
  new Gauge({
    name: 'practice_billing_ready',
    help: 'Whether this process reached its database at this scrape (1) or not (0), as /readyz asks.',
    registers: [registry],
  }).set(ready ? 1 : 0);
  const parts = [await processMetricsText()];
  if (deps && ready) {
    const { figures, failing } = await asOperator(deps.db, async (trx) => ({
      figures: await serviceMetrics(trx, deps),
      failing: await failingEndpoints(trx),
    }));
    const failingFor = new Gauge({
      name: 'practice_billing_webhook_endpoint_failing_seconds',
      help: "Seconds since an enabled endpoint's deliveries began failing (none listed: every endpoint's latest delivery succeeded).",
      labelNames: ['practice', 'endpoint'],
      registers: [registry],
    });
    const now = deps.clock.now().getTime();
    for (const row of failing) {
      failingFor.set(
        { practice: row.practiceId, endpoint: row.endpointId },
        Math.max(0, (now - row.failingSince.getTime()) / 1000),
      );
    }
    parts.push((await prometheusText(figures)).text);
  }
  parts.push(await registry.metrics());
  return { contentType: registry.contentType, text: parts.join('\n') };
}

/** Serves GET /metrics on the API's port, to the bearer of one of `tokens` (METRICS_TOKEN, else the admin tokens). */
export async function registerMetricsEndpoint(
  app: FastifyInstance,
  deps: Deps,
  tokens: readonly string[],
): Promise<void> {
  const expected = tokens.map(digest);
  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    if (!expected.some((one) => bearerMatches(request.headers.authorization, one))) {
      reply.header('www-authenticate', 'Bearer');
      throw new AppError('unauthenticated', '/metrics needs Authorization: Bearer <METRICS_TOKEN>.');
    }
    const { contentType, text } = await scrapeText(deps.db, deps);
    return reply.type(contentType).send(text);
  });
}

/**
 * Serves GET /metrics alone on a port of its own (METRICS_PORT): to the bearer of `token` when one is
 * given, to anyone otherwise. Resolves once it listens, with how to close it.
 */
export async function serveMetricsPort(options: {
  port: number;
  host: string;
  token: string | undefined;
  /** The database this process reaches (the worker's pool in a worker). */
  db: Database;
  /** The API's, in a process that serves it. */
  deps: Deps | undefined;
  log: FastifyBaseLogger;
}): Promise<{ port: number; close(): Promise<void> }> {
  const expected = options.token === undefined ? undefined : digest(options.token);
  const server = http.createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0];
    if (request.method !== 'GET' || path !== '/metrics') {
      response
        .writeHead(404, { 'content-type': 'text/plain' })
        .end('not found: only GET /metrics is served here\n');
      return;
    }
    if (expected && !bearerMatches(request.headers.authorization, expected)) {
      response.writeHead(401, { 'content-type': 'text/plain', 'www-authenticate': 'Bearer' });
      response.end('/metrics needs Authorization: Bearer <METRICS_TOKEN>\n');
      return;
    }
    scrapeText(options.db, options.deps).then(
      ({ contentType, text }) => response.writeHead(200, { 'content-type': contentType }).end(text),
      (err: unknown) => {
        options.log.warn({ err }, 'metrics scrape failed');
        response.writeHead(503, { 'content-type': 'text/plain' }).end('metrics unavailable\n');
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  options.log.info(
    { port, authenticated: expected !== undefined },
    `metrics served at http://${options.host}:${port}/metrics`,
  );
  return {
    port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
