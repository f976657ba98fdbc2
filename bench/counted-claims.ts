// Owns counting the database work of a claim (PostgreSQL): on a database and a service of their own
// (the API as `practice-billing serve`, the worker as bench/counted-worker.ts, which counts per job
// kind), BENCH_COUNTED_CLAIMS visits are billed with issue and submitClaim one after another, each
// waited for until its answer webhook arrives, then until the worker has been idle for a while. The
// differences of the processes' counters give statements, round trips and transactions per claim:
// the API's (the bill), the worker's per job kind, and the worker's outside any job (takes, lease
// renewals, wake-ups, periodic tasks). Counts do not depend on the machine's load, so they are judged
// on any machine; the worker runs one job at a time here, which is why this run is never timed.
import { randomBytes } from 'node:crypto';
import { expect } from './api.ts';
import { freePort, waitFor200 } from './children.ts';
import { answerArrival } from './claim-pipeline.ts';
import { type DbCounts, minus, per, plus, ServiceCounter, ZERO } from './db-counts.ts';
import type { PassContext } from './pass-context.ts';
import { connect, createDatabase, randomSuffix } from './postgres.ts';
import { registerWebhook } from './provision.ts';
import type { CountedClaims } from './results.ts';
import { practiceWithVisits } from './seed-api.ts';
import { startService } from './service.ts';
import { startReceiver } from './webhook-receiver.ts';

interface WorkerCounts {
  total: DbCounts;
  byKind: Record<string, DbCounts & { jobs: number }>;
}

const IDLE_MS = 1_500;

async function workerCounts(url: string): Promise<WorkerCounts> {
  return (await (await fetch(url)).json()) as WorkerCounts;
}

export async function countedClaims(
  ctx: PassContext,
  databaseUrl: string,
): Promise<CountedClaims | undefined> {
  const n = ctx.settings.countedClaims;
  if (!ctx.budget.fits(60_000 + n * 500)) {
    ctx.result.notes.push('counted claims: skipped, the time budget ran out');
    return undefined;
  }
  const db = await createDatabase(databaseUrl, `pb_bench_${randomSuffix()}_count`);
  const adminToken = `adm_bench_${randomBytes(12).toString('hex')}`;
  const port = await freePort();
  const service = await startService({
    database: { url: db.url },
    adminToken,
    // The service's default poll: the bench's short one would count idle polls here.
    jobPollMs: 200,
    separateWorker: true,
    worker: { script: 'bench/counted-worker.ts', env: { COUNTED_WORKER_PORT: String(port) } },
  }).catch(async (error) => {
    await db.drop();
    throw error;
  });
  const receiver = await startReceiver();
  const countsUrl = `http://127.0.0.1:${port}/counts`;
  try {
    await waitFor200(service.worker!, countsUrl, 60_000);
    const counter = await ServiceCounter.open(service.baseUrl, adminToken);
    if (!counter) {
      ctx.result.notes.push('counted claims: the service does not count its database statements');
      return undefined;
    }
    const { practice, encounterIds: visits } = await practiceWithVisits(service.baseUrl, adminToken, n);
    await registerWebhook(service.baseUrl, adminToken, practice.practiceId, receiver.url);
    const sql = await connect(db.url);
    await sql.query('ANALYZE').finally(() => sql.end());

    const idle = async (): Promise<WorkerCounts> => {
      let last = JSON.stringify(await workerCounts(countsUrl));
      let stableSince = performance.now();
      for (;;) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        const now = await workerCounts(countsUrl);
        const text = JSON.stringify(now.byKind);
        if (text !== last) {
          last = text;
          stableSince = performance.now();
        } else if (performance.now() - stableSince >= IDLE_MS) return now;
      }
    };
    await idle();
    const apiBefore = await counter.read();
    const workerBefore = await workerCounts(countsUrl);
    for (const encounterId of visits) {
      const answer = await expect(201, service.baseUrl, 'POST', `/api/v1/encounters/${encounterId}/bill`, {
        token: practice.key,
        body: { issue: true, submitClaim: true },
        idempotent: true,
      });
      const invoiceId = answer.body.invoice.id as string;
      const deadline = performance.now() + 30_000;
      while (answerArrival(receiver, invoiceId) === undefined && performance.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const workerAfter = await idle();
    const apiAfter = await counter.read();

    const api = counter.difference(apiBefore, apiAfter);
    const worker = minus(workerAfter.total, workerBefore.total);
    const byKind: CountedClaims['byKind'] = {};
    let inJobs = ZERO;
    for (const [kind, after] of Object.entries(workerAfter.byKind)) {
      const before = workerBefore.byKind[kind] ?? { ...ZERO, jobs: 0 };
      const jobs = after.jobs - before.jobs;
      if (jobs === 0) continue;
      const spent = minus(after, before);
      inJobs = plus(inJobs, spent);
      byKind[kind] = {
        jobsPerClaim: Math.round((jobs / n) * 100) / 100,
        perJob: per(spent, jobs),
        perClaim: per(spent, n),
      };
    }
    const result: CountedClaims = {
      claims: n,
      perClaim: { total: per(plus(api, worker), n), api: per(api, n), worker: per(worker, n) },
      byKind,
      workerOutsideJobs: per(minus(worker, inJobs), n),
      basis: `${n} claims billed one after another (bill with issue and submitClaim → submit → the insurer's answer → remittance → 2 webhooks), on a database of their own; the worker ran one job at a time`,
    };
    ctx.result.counted = result;
    ctx.log(
      `counted ${n} claims: per claim ${result.perClaim.total.statements} statements, ${result.perClaim.total.roundTrips} round trips, ${result.perClaim.total.transactions} transactions (API ${result.perClaim.api.statements}/${result.perClaim.api.roundTrips}/${result.perClaim.api.transactions}, worker ${result.perClaim.worker.statements}/${result.perClaim.worker.roundTrips}/${result.perClaim.worker.transactions})`,
    );
    for (const [kind, k] of Object.entries(byKind))
      ctx.log(
        `  ${kind}: ${k.jobsPerClaim} per claim; each ${k.perJob.statements} statements, ${k.perJob.roundTrips} round trips, ${k.perJob.transactions} transactions`,
      );
    return result;
  } finally {
    await receiver.close();
    await service.stop();
    await db.drop();
  }
}
