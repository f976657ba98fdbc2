// Owns the scale-out comparison (BENCH_ONLY=processes, PostgreSQL pass): sustained claims/s with one
// API and one worker process (`practice-billing serve` + `practice-billing worker`) against two of
// each, on the same database, one after the other in one run, reported side by side and as a ratio
// (2+2 ÷ 1+1). Each layout gets a practice of its own with BENCH_PROCESSES_VISITS visits, recorded
// before the clock starts, and its bills are offered at BENCH_PROCESSES_RATE per second in all (spread
// evenly over the layout's APIs) for BENCH_PROCESSES_S seconds, through the claim pipeline's driver
// (bench/claim-pipeline.ts); the offered rate should be above what one API and one worker sustain, or
// both layouts merely keep up with it and the ratio says nothing. On one machine the processes share
// its cores: the ratio shows what a second pair adds there, not what a second machine would.
import { randomBytes } from 'node:crypto';
import { mapConcurrent } from './api.ts';
import { type ClaimResult, runClaimPipeline } from './claim-pipeline.ts';
import type { PassContext } from './pass-context.ts';
import { createDatabase, randomSuffix } from './postgres.ts';
import { type Practice, provisionPractice, registerWebhook } from './provision.ts';
import { addCoverages, createPatients, createVisit } from './seed-api.ts';
import { type RunningService, startService } from './service.ts';
import { startReceiver } from './webhook-receiver.ts';

function count(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0)
    throw new Error(`${name} must be a positive number, got "${raw}"`);
  return value;
}

export const PROCESSES = {
  rate: count('BENCH_PROCESSES_RATE', 80),
  seconds: count('BENCH_PROCESSES_S', 15),
  warmupSeconds: count('BENCH_PROCESSES_WARMUP_S', 3),
  drainMs: count('BENCH_PROCESSES_DRAIN_S', 60) * 1000,
};

export interface LayoutResult {
  apis: number;
  workers: number;
  sustainedClaimsPerSec: number;
  claimsAccepted: number;
  unfinished: number;
  billFailures: Record<string, number>;
  billP99Ms: number;
  endToEndP50Ms: number;
}

/** Visits of one practice, recorded through the layout's APIs in turn. */
async function visitsOf(services: RunningService[], practice: Practice, visits: number): Promise<string[]> {
  const first = services[0]!.baseUrl;
  const patients = await createPatients(first, practice.key, 20);
  await addCoverages(
    first,
    practice.key,
    patients.map((p) => p.id),
  );
  return mapConcurrent(
    Array.from({ length: visits }, (_, i) => i),
    16,
    (i) =>
      createVisit(
        services[i % services.length]!.baseUrl,
        practice.key,
        patients[i % patients.length]!.id,
        practice.practitionerId,
      ),
  );
}

/** One layout: `pairs` API and worker processes started on the database, measured, stopped. */
async function measureLayout(ctx: PassContext, databaseUrl: string, pairs: number): Promise<LayoutResult> {
  const adminToken = `adm_bench_${randomBytes(12).toString('hex')}`;
  // One secret box for all, as a deployment's processes share it.
  const env = { SECRET_ENCRYPTION_KEY: randomBytes(32).toString('hex') };
  const services: RunningService[] = [];
  const receiver = await startReceiver();
  try {
    for (let i = 0; i < pairs; i++) {
      services.push(
        await startService({
          database: { url: databaseUrl },
          adminToken,
          jobPollMs: ctx.settings.jobPollMs,
          separateWorker: true,
          env,
        }),
      );
    }
    const practice = await provisionPractice(services[0]!.baseUrl, adminToken);
    await registerWebhook(services[0]!.baseUrl, adminToken, practice.practiceId, receiver.url);
    const perApi = Math.ceil((PROCESSES.rate * (PROCESSES.seconds + PROCESSES.warmupSeconds) * 1.1) / pairs);
    const encounters = await visitsOf(services, practice, perApi * pairs);
    ctx.log(`processes ${pairs}+${pairs}: ${encounters.length} visits recorded; driving claims`);
    const results: ClaimResult[] = await Promise.all(
      services.map((service, i) =>
        runClaimPipeline({
          baseUrl: service.baseUrl,
          visits: encounters
            .slice(i * perApi, (i + 1) * perApi)
            .map((encounterId) => ({ encounterId, key: practice.key })),
          receiver,
          warmup: { rate: PROCESSES.rate / pairs, seconds: PROCESSES.warmupSeconds },
          measured: { rate: PROCESSES.rate / pairs, seconds: PROCESSES.seconds },
          drainTimeoutMs: PROCESSES.drainMs,
          connections: Math.ceil(32 / pairs),
          log: ctx.log,
        }),
      ),
    );
    const failures: Record<string, number> = {};
    for (const r of results)
      for (const [reason, n] of Object.entries(r.billFailures))
        failures[reason] = (failures[reason] ?? 0) + n;
    const sum = (pick: (r: ClaimResult) => number) => results.reduce((total, r) => total + pick(r), 0);
    return {
      apis: pairs,
      workers: pairs,
      sustainedClaimsPerSec: Math.round(sum((r) => r.sustainedClaimsPerSec) * 10) / 10,
      claimsAccepted: sum((r) => r.claimsAccepted),
      unfinished: sum((r) => r.unfinished),
      billFailures: failures,
      billP99Ms: Math.max(...results.map((r) => r.billP99Ms)),
      endToEndP50Ms: Math.max(...results.map((r) => r.endToEndP50Ms)),
    };
  } finally {
    await Promise.all(services.map((s) => s.stop()));
    await receiver.close();
  }
}

/** BENCH_ONLY=processes: both layouts on one fresh database, and their ratio, in the pass's notes. */
export async function processesOnly(ctx: PassContext, databaseUrl: string): Promise<void> {
  const db = await createDatabase(databaseUrl, `pb_bench_${randomSuffix()}`);
  ctx.result.notes.push(`database ${db.name}, dropped at the end`);
  try {
    const one = await measureLayout(ctx, db.url, 1);
    const two = await measureLayout(ctx, db.url, 2);
    const ratio = one.sustainedClaimsPerSec > 0 ? two.sustainedClaimsPerSec / one.sustainedClaimsPerSec : 0;
    for (const layout of [one, two]) {
      ctx.result.notes.push(
        `processes ${layout.apis}+${layout.workers}: ${layout.sustainedClaimsPerSec} claims/s sustained ` +
          `(offered ${PROCESSES.rate}/s for ${PROCESSES.seconds} s), ${layout.claimsAccepted} accepted, ` +
          `${layout.unfinished} unfinished, bill p99 ${layout.billP99Ms} ms, end to end p50 ${layout.endToEndP50Ms} ms, ` +
          `refused ${JSON.stringify(layout.billFailures)}`,
      );
    }
    const line = `processes: 2+2 sustained ${ratio.toFixed(2)} × the claims/s of 1+1 (${two.sustainedClaimsPerSec} against ${one.sustainedClaimsPerSec})`;
    ctx.result.notes.push(line);
    ctx.log(line);
  } finally {
    await db.drop();
  }
}
