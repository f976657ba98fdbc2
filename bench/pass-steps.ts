// Owns the steps both database passes share: seeding through the API, loading visits and invoices by
// SQL, the A/B scenarios, the claim pipeline and the memory reading, each checked against the time
// budget before it starts (a step that no longer fits is skipped and noted, never half-run).
import { randomBytes } from 'node:crypto';
import { type AbResult, type RoundProbe, runAb } from './ab.ts';
import type { RunningBaseline } from './baseline.ts';
import { cloneId, cloneVisits, type SqlTarget } from './bulk-sql.ts';
import { memoryOf } from './children.ts';
import { type ClaimResult, runClaimPipeline } from './claim-pipeline.ts';
import { CpuWindow, type WindowSpec } from './cpu-window.ts';
import { type DbCounts, describeCounts, minus } from './db-counts.ts';
import { pageStarts } from './page-starts.ts';
import { type PassContext, recordWindow } from './pass-context.ts';
import { type Practice, provisionPractice, registerWebhook } from './provision.ts';
import type { StepLoadResult } from './results.ts';
import { createPatient, findPatient, getPatient, invoicePages, type Scenario } from './scenarios.ts';
import {
  addCoverages,
  billVisit,
  createPatients,
  createVisit,
  EXTERNAL_SYSTEM,
  type LoadedPatient,
} from './seed-api.ts';
import type { RunningService } from './service.ts';
import { LATENCY_SHARES, type PassName, type Settings } from './settings.ts';
import { measuredClaims, STEPS, stepLoad, stepRates } from './step-load.ts';
import { startReceiver } from './webhook-receiver.ts';

const SETTLE_MS = 1_000;

function roundProbe(
  ctx: PassContext,
  baseline: RunningBaseline,
  scenario: Scenario,
): (target: 'service' | 'baseline', round: number) => RoundProbe {
  return (target, round) => {
    let window: CpuWindow | undefined;
    let before: DbCounts | undefined;
    const read = () => (target === 'service' ? ctx.counter?.read() : baseline.counts());
    return {
      async begin() {
        before = await read();
        const label = `${scenario.key} round ${round} ${target}`;
        window = await CpuWindow.open(
          target === 'service' ? { ...ctx.cpu, label } : baselineWindow(ctx, baseline, label),
        );
        window.begin();
      },
      async end(sent) {
        window!.end();
        // Requests still in flight when the load generator stopped finish their database work.
        await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
        const after = await read();
        const cpu = recordWindow(ctx, await window!.close());
        const counts =
          before && after
            ? target === 'service'
              ? ctx.counter!.difference(before, after)
              : minus(after, before)
            : undefined;
        return { cpu, sent, ...(counts ? { counts } : {}) };
      },
    };
  };
}

/**
 * A baseline round's window: its server in the API's place and the backends of its own database in the
 * service's, so that both sides' CPU per request is split alike (server, PostgreSQL, the bench).
 */
function baselineWindow(ctx: PassContext, baseline: RunningBaseline, label: string): WindowSpec {
  const adminUrl = ctx.cpu?.postgres?.adminUrl;
  return {
    label,
    apiPid: baseline.child.pid,
    ...(adminUrl && baseline.database ? { postgres: { adminUrl, serviceDatabase: baseline.database } } : {}),
  };
}

export interface Seeded {
  practice: Practice;
  patients: LoadedPatient[];
  covered: LoadedPatient[];
  templateEncounterId: string;
  templateInvoiceId: string;
}

export async function seedThroughApi(ctx: PassContext, baseUrl: string, adminToken: string): Promise<Seeded> {
  const started = Date.now();
  const practice = await provisionPractice(baseUrl, adminToken);
  const patients = await createPatients(baseUrl, practice.key, ctx.settings.patients);
  const covered = await createPatients(baseUrl, practice.key, ctx.settings.coveredPatients);
  await addCoverages(
    baseUrl,
    practice.key,
    covered.map((p) => p.id),
  );
  // The template that bulk-sql.ts copies: a visit recorded and billed (draft) by the service itself.
  const templateEncounterId = await createVisit(
    baseUrl,
    practice.key,
    patients[0]!.id,
    practice.practitionerId,
  );
  const templateInvoiceId = await billVisit(baseUrl, practice.key, templateEncounterId);
  ctx.log(
    `seeded through the API in ${((Date.now() - started) / 1000).toFixed(1)} s: ${patients.length} patients, ${covered.length} with coverage, template visit and invoice`,
  );
  return { practice, patients, covered, templateEncounterId, templateInvoiceId };
}

export interface InvoicePlan {
  seed: string;
  t0: Date;
  stepMs: number;
}

export function invoicePlan(settings: Settings, maxInvoices: number): InvoicePlan {
  return {
    seed: randomBytes(4).toString('hex'),
    t0: new Date(Date.now() - (maxInvoices + 10) * settings.invoiceStepMs),
    stepMs: settings.invoiceStepMs,
  };
}

/** Invoices g = from..to (each with its visit) into the service's tables, timed. */
export async function loadInvoices(
  ctx: PassContext,
  sql: SqlTarget,
  seeded: Seeded,
  plan: InvoicePlan,
  from: number,
  to: number,
): Promise<number> {
  const started = Date.now();
  await cloneVisits(sql, {
    practiceId: seeded.practice.practiceId,
    templateEncounterId: seeded.templateEncounterId,
    templateInvoiceId: seeded.templateInvoiceId,
    seed: plan.seed,
    from,
    to,
    t0: plan.t0.toISOString(),
    stepMs: plan.stepMs,
    patientIds: seeded.patients.map((p) => p.id),
    onProgress: (done, total) => {
      if (total > 50_000) ctx.log(`  invoices ${from + done - 1} of ${to} loaded`);
    },
  });
  const seconds = (Date.now() - started) / 1000;
  ctx.log(`loaded invoices ${from}..${to} by SQL in ${seconds.toFixed(1)} s`);
  return seconds;
}

/** Visits to bill in the claim pipeline, for the patients with coverage; answers their ids. */
export async function loadClaimVisits(
  ctx: PassContext,
  sql: SqlTarget,
  seeded: Seeded,
  count: number,
): Promise<string[]> {
  const seed = randomBytes(4).toString('hex');
  await cloneVisits(sql, {
    practiceId: seeded.practice.practiceId,
    templateEncounterId: seeded.templateEncounterId,
    seed,
    from: 1,
    to: count,
    t0: new Date(Date.now() - count).toISOString(),
    stepMs: 1,
    patientIds: seeded.covered.map((p) => p.id),
  });
  ctx.log(`loaded ${count} visits to claim by SQL`);
  return Array.from({ length: count }, (_, i) => cloneId('enc', seed, 'e', i + 1));
}

/** Rows a table holds before autovacuum first analyses it (autovacuum_analyze_threshold's default). */
const AUTOVACUUM_FIRST_ANALYZE_ROWS = 50;

/**
 * ANALYZE the seeded tables of both databases, so that the planner knows their sizes as a service in
 * operation would: the tables holding at least the rows autovacuum first analyses a table at. The
 * tables seeding left (nearly) empty, the job queue, events and webhooks among them, are left to
 * autovacuum, as in operation: analysed empty, they told the planner they stay empty, and the
 * service's cached plans of the job take and of the foreign-key checks then scanned the whole table at
 * every run while the load filled it.
 */
export async function analyze(ctx: PassContext, sql: SqlTarget, baseline?: RunningBaseline): Promise<void> {
  const started = Date.now();
  const tables = await sql.query(
    `SELECT format('%I.%I', schemaname, relname) AS name FROM pg_stat_user_tables ORDER BY 1`,
  );
  const seeded: string[] = [];
  for (const { name } of tables as { name: string }[]) {
    const [probe] = await sql.query(
      `SELECT count(*)::int AS n FROM (SELECT 1 FROM ${name} LIMIT ${AUTOVACUUM_FIRST_ANALYZE_ROWS}) AS t`,
    );
    if ((probe as { n: number }).n >= AUTOVACUUM_FIRST_ANALYZE_ROWS) seeded.push(name);
  }
  if (seeded.length > 0) await sql.query(`ANALYZE ${seeded.join(', ')}`);
  await baseline?.analyze();
  ctx.log(
    `analysed ${seeded.length} seeded tables of the service's${baseline ? " and the baseline's" : ''} database in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
}

/** Visits a full step load and the two latency runs can use, at most. */
export function claimVisitsNeeded(settings: Settings, database: PassName): number {
  const steps = stepRates(database).reduce((sum, rate) => sum + rate * STEPS.seconds, 0);
  const latency = LATENCY_SHARES.reduce(
    (sum, share) => sum + share * STEPS.max[database] * settings.latencySeconds,
    0,
  );
  return Math.round(settings.claimWarmup.rate * settings.claimWarmup.seconds + steps + latency) + 100;
}

function abSeconds(settings: Settings): number {
  return (2 * settings.warmupSeconds + 2 * settings.rounds * settings.roundSeconds) * 1000 + 5_000;
}

/** The service's peak and current RSS: of its largest process when the worker runs apart. */
function noteRss(ctx: PassContext, service: RunningService) {
  const api = memoryOf(service.child.pid);
  const worker = service.worker ? memoryOf(service.worker.pid) : undefined;
  const larger = worker && (!api || worker.peakRssMiB > api.peakRssMiB) ? worker : api;
  if (larger) {
    ctx.result.memory = {
      ...ctx.result.memory,
      servicePeakRssMiB: larger.peakRssMiB,
      serviceRssMiB: larger.rssMiB,
      ...(worker && api ? { apiPeakRssMiB: api.peakRssMiB, workerPeakRssMiB: worker.peakRssMiB } : {}),
    };
  }
}

export async function runScenario(
  ctx: PassContext,
  scenario: Scenario,
  service: RunningService,
  baseline: RunningBaseline,
): Promise<AbResult | undefined> {
  if (!ctx.budget.fits(abSeconds(ctx.settings))) {
    ctx.result.notes.push(`${scenario.key}: skipped, the time budget ran out`);
    ctx.log(`${scenario.key}: skipped (time budget)`);
    return undefined;
  }
  const result = await runAb(
    scenario,
    { service: service.baseUrl, baseline: baseline.baseUrl },
    {
      connections: ctx.settings.connections,
      warmupSeconds: ctx.settings.warmupSeconds,
      roundSeconds: ctx.settings.roundSeconds,
      rounds: ctx.settings.rounds,
      log: ctx.log,
      probe: roundProbe(ctx, baseline, scenario),
    },
  );
  ctx.result.scenarios.push(result);
  noteRss(ctx, service);
  const baselineMemory = memoryOf(baseline.child.pid);
  if (baselineMemory && ctx.result.memory) ctx.result.memory.baselinePeakRssMiB = baselineMemory.peakRssMiB;
  const counted = (target: 'service' | 'baseline') => {
    const c = result.perRequest[target];
    return c ? `; ${describeCounts(c)} per request` : '';
  };
  ctx.log(
    `${scenario.key}: service ${result.service.reqPerSec} req/s (p50 ${result.service.p50Ms}, p99 ${result.service.p99Ms} ms${counted('service')}), baseline ${result.baseline.reqPerSec} req/s${counted('baseline')}, ratio ${result.ratio}`,
  );
  return result;
}

export async function patientScenarios(
  ctx: PassContext,
  service: RunningService,
  baseline: RunningBaseline,
  seeded: Seeded,
): Promise<void> {
  const key = seeded.practice.key;
  const ids = seeded.patients.map((p) => p.id);
  await runScenario(ctx, getPatient(key, ids), service, baseline);
  await runScenario(ctx, createPatient(key), service, baseline);
  await runScenario(
    ctx,
    findPatient(
      key,
      EXTERNAL_SYSTEM,
      seeded.patients.map((p) => p.externalValue),
    ),
    service,
    baseline,
  );
}

export async function pagingScenario(
  ctx: PassContext,
  label: string,
  invoices: number,
  plan: InvoicePlan,
  service: RunningService,
  baseline: RunningBaseline,
  key: string,
): Promise<AbResult | undefined> {
  const range = { from: plan.t0, to: new Date(plan.t0.getTime() + invoices * plan.stepMs) };
  const [servicePages, baselinePages] = await Promise.all([
    pageStarts(service.baseUrl, key, range, ctx.settings.pageStarts),
    pageStarts(baseline.baseUrl, key, range, ctx.settings.pageStarts),
  ]);
  return runScenario(
    ctx,
    invoicePages(key, label, { service: servicePages, baseline: baselinePages }),
    service,
    baseline,
  );
}

/**
 * The claim pipeline for one practice: its capacity by a step load, then the end-to-end latency at
 * 50 % and 80 % of that capacity, on visits the step load did not use.
 */
export async function claimScenario(
  ctx: PassContext,
  service: RunningService,
  adminToken: string,
  seeded: Seeded,
  encounterIds: string[],
): Promise<StepLoadResult | undefined> {
  const { settings } = ctx;
  let used = 0;
  const visits = async (count: number) => {
    const slice = encounterIds.slice(used, used + count);
    used += slice.length;
    return slice.map((encounterId) => ({ encounterId, key: seeded.practice.key }));
  };
  const receiver = await startReceiver();
  try {
    await registerWebhook(service.baseUrl, adminToken, seeded.practice.practiceId, receiver.url);
    const capacity = await stepLoad(ctx, service.baseUrl, receiver, visits, stepRates(ctx.result.database));
    if (!capacity) return undefined;
    ctx.result.capacity = capacity;
    noteRss(ctx, service);
    ctx.log(
      `capacity ${capacity.claimsPerSec} claims/s (completions followed up to ${capacity.followedUpTo}/s offered${capacity.saturated ? '' : ', not saturated at the highest step'})`,
    );
    ctx.result.latency = [];
    for (const share of LATENCY_SHARES) {
      const rate = Math.max(1, Math.round(share * capacity.claimsPerSec));
      if (!ctx.budget.fits(settings.latencySeconds * 1000 + settings.claimDrainMs * 1.5 + 5_000)) {
        ctx.result.notes.push(
          `claim latency at ${share * 100} % of capacity: skipped, the time budget ran out`,
        );
        continue;
      }
      const run = await measuredClaims(ctx, `latency at ${share * 100} % (${rate}/s)`, {
        baseUrl: service.baseUrl,
        visits: await visits(Math.round(rate * settings.latencySeconds)),
        receiver,
        warmup: { rate, seconds: 0 },
        measured: { rate, seconds: settings.latencySeconds },
        drainTimeoutMs: settings.claimDrainMs,
        connections: settings.connections,
        log: ctx.log,
      });
      ctx.result.latency.push({ share, ...run });
      noteRss(ctx, service);
      ctx.log(
        `claims at ${share * 100} % of capacity (${rate}/s): end to end p50 ${run.run.endToEndP50Ms} ms, p99 ${run.run.endToEndP99Ms} ms; completed ${run.completionsPerSec}/s; ${run.run.claimsAccepted}/${run.run.billsSent} accepted, ${run.run.unfinished} unfinished`,
      );
    }
    return capacity;
  } finally {
    await receiver.close();
  }
}

/**
 * The claim pipeline with the same offered rate spread over several practices (PostgreSQL): each is
 * provisioned through the API with a few covered patients and a template visit, its visits loaded by
 * SQL, and the bills sent round-robin across practices.
 */
export async function sharedClaimScenario(
  ctx: PassContext,
  service: RunningService,
  adminToken: string,
  sql: SqlTarget,
): Promise<ClaimResult | undefined> {
  const { settings } = ctx;
  const count = settings.sharedPractices;
  const needMs =
    count * 1500 +
    (settings.claimWarmup.seconds + settings.claimSeconds) * 1000 +
    settings.claimDrainMs * 1.5;
  if (count < 2 || !ctx.budget.fits(needMs)) {
    ctx.result.notes.push(`claim pipeline across ${count} practices: skipped, the time budget ran out`);
    return undefined;
  }
  // The capacity measured by the step load, spread over the practices (the fixed rate when none was).
  const rate = Math.max(1, Math.round(ctx.result.capacity?.claimsPerSec ?? settings.claimRate));
  const perPractice = Math.ceil(
    (Math.round(settings.claimWarmup.rate * settings.claimWarmup.seconds) +
      rate * settings.claimSeconds +
      100) /
      count,
  );
  const receiver = await startReceiver();
  try {
    const lists: { encounterId: string; key: string }[][] = [];
    for (let i = 0; i < count; i++) {
      const practice = await provisionPractice(service.baseUrl, adminToken);
      const covered = await createPatients(service.baseUrl, practice.key, 5);
      await addCoverages(
        service.baseUrl,
        practice.key,
        covered.map((p) => p.id),
      );
      const templateEncounterId = await createVisit(
        service.baseUrl,
        practice.key,
        covered[0]!.id,
        practice.practitionerId,
      );
      await billVisit(service.baseUrl, practice.key, templateEncounterId);
      const seeded: Seeded = {
        practice,
        patients: covered,
        covered,
        templateEncounterId,
        templateInvoiceId: '',
      };
      const ids = await loadClaimVisits(ctx, sql, seeded, perPractice);
      await registerWebhook(service.baseUrl, adminToken, practice.practiceId, receiver.url);
      lists.push(ids.map((encounterId) => ({ encounterId, key: practice.key })));
    }
    const visits = Array.from({ length: perPractice }, (_, j) => lists.map((list) => list[j]!)).flat();
    const result = await runClaimPipeline({
      baseUrl: service.baseUrl,
      visits,
      receiver,
      warmup: settings.claimWarmup,
      measured: { rate, seconds: settings.claimSeconds },
      drainTimeoutMs: settings.claimDrainMs,
      connections: settings.connections,
      log: ctx.log,
    });
    ctx.result.claimsShared = { practices: count, ...result };
    noteRss(ctx, service);
    ctx.log(
      `claims across ${count} practices: offered ${result.offeredRate}/s, sustained ${result.sustainedClaimsPerSec} accepted/s, end to end p50 ${result.endToEndP50Ms} ms p99 ${result.endToEndP99Ms} ms; ${result.claimsAccepted}/${result.billsSent} accepted`,
    );
    return result;
  } finally {
    await receiver.close();
  }
}

export { noteRss };
