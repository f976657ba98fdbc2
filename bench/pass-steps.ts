// Owns the steps both database passes share: seeding through the API, loading visits and invoices by
// SQL, the A/B scenarios, the claim pipeline and the memory reading, each checked against the time
// budget before it starts (a step that no longer fits is skipped and noted, never half-run).
import { randomBytes } from 'node:crypto';
import { type AbResult, runAb } from './ab.ts';
import type { RunningBaseline } from './baseline.ts';
import type { Budget } from './budget.ts';
import { cloneId, cloneVisits, type SqlTarget } from './bulk-sql.ts';
import { memoryOf } from './children.ts';
import { type ClaimResult, runClaimPipeline } from './claim-pipeline.ts';
import { pageStarts } from './page-starts.ts';
import { type Practice, provisionPractice, registerWebhook } from './provision.ts';
import type { PassResult } from './results.ts';
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
import type { Settings } from './settings.ts';
import { startReceiver } from './webhook-receiver.ts';

export interface PassContext {
  settings: Settings;
  budget: Budget;
  log: (line: string) => void;
  result: PassResult;
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

export function claimVisitsNeeded(settings: Settings): number {
  return (
    Math.round(settings.claimWarmup.rate * settings.claimWarmup.seconds) +
    Math.round(settings.claimRate * settings.claimSeconds) +
    Math.round(settings.claimLatencyRate * settings.claimSeconds) +
    100
  );
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
    },
  );
  ctx.result.scenarios.push(result);
  noteRss(ctx, service);
  const baselineMemory = memoryOf(baseline.child.pid);
  if (baselineMemory && ctx.result.memory) ctx.result.memory.baselinePeakRssMiB = baselineMemory.peakRssMiB;
  ctx.log(
    `${scenario.key}: service ${result.service.reqPerSec} req/s (p50 ${result.service.p50Ms}, p99 ${result.service.p99Ms} ms), baseline ${result.baseline.reqPerSec} req/s, ratio ${result.ratio}`,
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

export async function claimScenario(
  ctx: PassContext,
  service: RunningService,
  adminToken: string,
  seeded: Seeded,
  encounterIds: string[],
): Promise<ClaimResult | undefined> {
  const { settings } = ctx;
  const needMs =
    (settings.claimWarmup.seconds + settings.claimSeconds) * 1000 + settings.claimDrainMs * 1.5 + 30_000;
  if (!ctx.budget.fits(needMs)) {
    ctx.result.notes.push('claim pipeline: skipped, the time budget ran out');
    return undefined;
  }
  const receiver = await startReceiver();
  try {
    await registerWebhook(service.baseUrl, adminToken, seeded.practice.practiceId, receiver.url);
    const result = await runClaimPipeline({
      baseUrl: service.baseUrl,
      visits: encounterIds.map((encounterId) => ({ encounterId, key: seeded.practice.key })),
      receiver,
      warmup: settings.claimWarmup,
      measured: { rate: settings.claimRate, seconds: settings.claimSeconds },
      drainTimeoutMs: settings.claimDrainMs,
      connections: settings.connections,
      log: ctx.log,
    });
    ctx.result.claims = result;
    noteRss(ctx, service);
    const describe = (r: ClaimResult) =>
      `offered ${r.offeredRate}/s, sent ${r.sendRate}/s, sustained ${r.sustainedClaimsPerSec} accepted/s (overall ${r.overallClaimsPerSec}/s), end to end p50 ${r.endToEndP50Ms} ms p99 ${r.endToEndP99Ms} ms, bill p50 ${r.billP50Ms} ms; ${r.claimsAccepted}/${r.billsSent} accepted, ${r.unfinished} unfinished`;
    ctx.log(`claims: ${describe(result)}`);
    // The latency target is judged at a lower offered rate, on visits the first run did not use.
    const used = result.billsSent + Math.round(settings.claimWarmup.rate * settings.claimWarmup.seconds);
    const latencyNeedMs = settings.claimSeconds * 1000 + settings.claimDrainMs * 1.5 + 10_000;
    if (ctx.result.database === 'postgres' && ctx.budget.fits(latencyNeedMs)) {
      const atRate = await runClaimPipeline({
        baseUrl: service.baseUrl,
        visits: encounterIds.slice(used).map((encounterId) => ({ encounterId, key: seeded.practice.key })),
        receiver,
        warmup: { rate: settings.claimLatencyRate, seconds: 0 },
        measured: { rate: settings.claimLatencyRate, seconds: settings.claimSeconds },
        drainTimeoutMs: settings.claimDrainMs,
        connections: settings.connections,
        log: ctx.log,
      });
      ctx.result.claimsAtLatencyRate = atRate;
      noteRss(ctx, service);
      ctx.log(`claims at the latency rate: ${describe(atRate)}`);
    } else if (ctx.result.database === 'postgres') {
      ctx.result.notes.push('claim pipeline at the latency rate: skipped, the time budget ran out');
    }
    return result;
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
  const perPractice = Math.ceil(claimVisitsNeeded(settings) / count);
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
      measured: { rate: settings.claimRate, seconds: settings.claimSeconds },
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
