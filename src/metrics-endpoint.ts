// Prometheus text at GET /metrics, with prom-client: this process's own figures
// (src/platform/observability/metrics.ts) and, in a process that serves the API, the service's
// (src/service-metrics.ts). On the API's port it is read with METRICS_TOKEN (or, when none is set, the
// admin token); on a port of its own (METRICS_PORT, the worker's way of being scraped) with
// METRICS_TOKEN when one is set, and without any when none is: the operator's choice, for a port only
// the scraper reaches. Hidden from the OpenAPI document: it is for a scraper, not a client.
import { createHash, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { Counter, Gauge, Registry } from 'prom-client';
import type { Deps } from './api/deps.ts';
import { asOperator } from './platform/db/transaction.ts';
import { AppError } from './platform/http/errors.ts';
import { processMetricsText } from './platform/observability/metrics.ts';
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

const digest = (token: string) => createHash('sha256').update(token).digest();

/** Whether an Authorization header carries `Bearer <token>` (compared in constant time). */
function bearerMatches(authorization: string | undefined, expected: Buffer): boolean {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  return match !== null && timingSafeEqual(digest(match[1]!), expected);
}

/** Everything a scrape of this process reads: its own figures, then the service's when it serves the API. */
export async function scrapeText(deps: Deps | undefined): Promise<{ contentType: string; text: string }> {
  const own = await processMetricsText();
  if (!deps) return { contentType: new Registry().contentType, text: own };
  const figures = await asOperator(deps.db, (trx) => serviceMetrics(trx, deps));
  const service = await prometheusText(figures);
  return { contentType: service.contentType, text: `${own}\n${service.text}` };
}

/** Serves GET /metrics on the API's port, to the bearer of `token` (METRICS_TOKEN, else the admin token). */
export async function registerMetricsEndpoint(
  app: FastifyInstance,
  deps: Deps,
  token: string,
): Promise<void> {
  const expected = digest(token);
  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    if (!bearerMatches(request.headers.authorization, expected)) {
      reply.header('www-authenticate', 'Bearer');
      throw new AppError('unauthenticated', '/metrics needs Authorization: Bearer <METRICS_TOKEN>.');
    }
    const { contentType, text } = await scrapeText(deps);
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
    scrapeText(options.deps).then(
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
