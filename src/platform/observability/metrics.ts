// Owns this process's own Prometheus figures (prom-client): Node's and the process's defaults
// (process_cpu_seconds_total, nodejs_eventloop_lag_seconds, heap, GC), HTTP request durations by
// method, route template and status, the database connections (in use, waiting, the wait), the jobs
// the worker ran by kind and outcome, webhook attempts, claims answered and e-mails sent by outcome,
// and rate-limit refusals. Each is counted where it happens, through the small functions below; the
// registry is read by the /metrics endpoints (src/metrics-endpoint.ts). Labels are kinds, routes,
// outcomes and reasons, never a patient's anything.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

export const processRegistry = new Registry();
collectDefaultMetrics({ register: processRegistry });
const registers = [processRegistry];

const requestDuration = new Histogram({
  name: 'http_request_duration_seconds',
  help: 'API answers by method, route template and status: how long each took, from arrival to the last byte handed to the socket.',
  labelNames: ['method', 'route', 'status_code'],
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers,
});

/** One answered request; `route` is the route's template ('' when no route matched). */
export function observeRequest(method: string, route: string, statusCode: number, seconds: number): void {
  requestDuration.observe({ method, route, status_code: String(statusCode) }, seconds);
}

const jobsCompleted = new Counter({
  name: 'jobs_completed_total',
  help: 'Jobs this worker ran, by kind and outcome: done (ended), retry (given back to run again later), failed (for good), lease_lost (another worker has it).',
  labelNames: ['kind', 'outcome'],
  registers,
});
const jobDuration = new Histogram({
  name: 'job_duration_seconds',
  help: 'How long a job ran in this worker, by kind and outcome.',
  labelNames: ['kind', 'outcome'],
  buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
  registers,
});

export type JobOutcome = 'done' | 'retry' | 'failed' | 'lease_lost';

export function observeJob(kind: string, outcome: JobOutcome, seconds: number): void {
  jobsCompleted.inc({ kind, outcome });
  jobDuration.observe({ kind, outcome }, seconds);
}

const webhookAttempts = new Counter({
  name: 'webhook_attempts_total',
  help: 'Webhook delivery attempts, by outcome (delivered, failed, gone).',
  labelNames: ['outcome'],
  registers,
});

export function countWebhookAttempt(outcome: 'delivered' | 'failed' | 'gone'): void {
  webhookAttempts.inc({ outcome });
}

const claimsAnswered = new Counter({
  name: 'claims_answered_total',
  help: "Claim submissions the insurer answered, by outcome (the claim's status, or unanswered when the answer window passed).",
  labelNames: ['outcome'],
  registers,
});

export function countClaimAnswer(outcome: string): void {
  claimsAnswered.inc({ outcome });
}

const emails = new Counter({
  name: 'emails_total',
  help: 'E-mails the service tried to send, by outcome (sent, failed).',
  labelNames: ['outcome'],
  registers,
});

/** Counts one e-mail the service tried to send: the one function a mailer calls. */
export function countEmail(outcome: 'sent' | 'failed'): void {
  emails.inc({ outcome });
}

const rateLimited = new Counter({
  name: 'rate_limit_refusals_total',
  help: 'API requests refused with 429, by what was counted (client: an API key; source: an address without one).',
  labelNames: ['reason'],
  registers,
});

export function countRateLimitRefusal(reason: 'client' | 'source'): void {
  rateLimited.inc({ reason });
}

const unavailable = new Counter({
  name: 'requests_unavailable_total',
  help: 'API requests answered 503 because a write could not be made, by cause: audit (the audit row could not be written) or database (the database was unavailable).',
  labelNames: ['cause'],
  registers,
});

/** One request answered 503, nothing done, because the audit write or the database failed. */
export function countUnavailable(cause: 'audit' | 'database'): void {
  unavailable.inc({ cause });
}

/** What a connection pool tells of itself. */
export interface PoolFigures {
  size: number;
  inUse: number;
  waiting: number;
}

const pools = new Map<string, () => PoolFigures>();

/** Reports a pool's figures under `name` until the returned function is called (the pool closed). */
export function reportPool(name: string, figures: () => PoolFigures): () => void {
  pools.set(name, figures);
  return () => {
    if (pools.get(name) === figures) pools.delete(name);
  };
}

const poolGauge = (name: string, help: string, read: (f: PoolFigures) => number) =>
  new Gauge({
    name,
    help,
    labelNames: ['pool'],
    registers,
    collect() {
      this.reset();
      for (const [pool, figures] of pools) this.set({ pool }, read(figures()));
    },
  });
poolGauge('db_pool_connections_max', 'Database connections the pool may hold.', (f) => f.size);
poolGauge('db_pool_connections_in_use', 'Database connections in use now.', (f) => f.inUse);
poolGauge('db_pool_waiting', 'Transactions and statements waiting for a connection now.', (f) => f.waiting);

const poolWait = new Histogram({
  name: 'db_pool_wait_seconds',
  help: 'How long a transaction or statement waited for its database connection.',
  labelNames: ['pool'],
  buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  registers,
});

export function observePoolWait(pool: string, seconds: number): void {
  poolWait.observe({ pool }, seconds);
}

/** This process's figures as Prometheus text. */
export function processMetricsText(): Promise<string> {
  return processRegistry.metrics();
}
