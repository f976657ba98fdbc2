// The service's background worker, run as the bench's child process for counting (never for timing):
// the same handlers, periodic tasks and queue as `practice-billing worker`, but one job at a time, and
// each job's statements, round trips and transactions (the process's database counters, read before
// and after its handler) added up per job kind. What the worker sends outside any handler (takes,
// lease renewals, wake-ups, periodic tasks) is the remainder of the process's totals. Served as JSON
// at GET /counts on 127.0.0.1:COUNTED_WORKER_PORT. Configured by the worker's own environment.
import http from 'node:http';
import pino from 'pino';
import { loggerOptions } from '../src/app.ts';
import { buildDeps, migrateConfigured, openConfiguredDatabase } from '../src/bootstrap.ts';
import { jobHandlers, jobPreparers, periodicTasks } from '../src/job-catalogue.ts';
import { type JobHandler, startWorker } from '../src/jobs/worker.ts';
import { loadConfig } from '../src/platform/config.ts';
import { statementCounts } from '../src/platform/db/statement-counts.ts';
import { type DbCounts, minus, plus, ZERO } from './db-counts.ts';

const config = loadConfig(process.env);
const log = pino(loggerOptions(config.logLevel) as pino.LoggerOptions);
const db = await openConfiguredDatabase(config, 'practice-billing-worker', log);
await migrateConfigured(config, db);
const deps = await buildDeps(config, db, { log });

const byKind: Record<string, DbCounts & { jobs: number }> = {};
// One handler at a time, so that the counters' difference across it is that job's alone.
let turn: Promise<void> = Promise.resolve();
const counted = (kind: string, handler: JobHandler): JobHandler =>
  function countedJob(job) {
    const run = turn.then(async () => {
      const before = statementCounts();
      try {
        await handler(job);
      } finally {
        const spent = minus(statementCounts(), before);
        const sum = byKind[kind] ?? { ...ZERO, jobs: 0 };
        byKind[kind] = { ...plus(sum, spent), jobs: sum.jobs + 1 };
      }
    });
    turn = run.catch(() => {});
    return run;
  };

const handlers = Object.fromEntries(
  Object.entries(
    jobHandlers({ db, clock: deps.clock, config, insurer: deps.insurer, secrets: deps.secrets, log }),
  ).map(([kind, handler]) => [kind, counted(kind, handler)]),
);
const worker = startWorker(
  { db, clock: deps.clock, log, settings: config },
  { handlers, preparers: jobPreparers, tasks: periodicTasks(config) },
);

const server = http.createServer((request, response) => {
  request.resume();
  const total = statementCounts();
  response.writeHead(200, { 'content-type': 'application/json' });
  response.end(JSON.stringify({ total, byKind }));
});
server.listen(Number(process.env.COUNTED_WORKER_PORT), '127.0.0.1');

const stop = async () => {
  server.close();
  await worker.stop().catch(() => {});
  await db.close().catch(() => {});
  process.exit(0);
};
process.on('SIGTERM', () => void stop());
process.on('SIGINT', () => void stop());
