// Owns the two isolation scenarios, judged by the bench and never as timed tests:
//   noisy neighbour  practice A has BENCH_NOISY_DELIVERIES deliveries queued to two receivers that
//                    follow the contract slowly (one answers 200 after BENCH_NOISY_DELAY_MS, one never
//                    answers, so each attempt times out at 10 s) while practice B bills and claims at a
//                    steady rate; for B, bill sent → claim's answer webhook received: p50 and max.
//   overload         three times the claim capacity the step load measured in this pass (bench/step-load.ts;
//                    a step load of its own when the pass ran none; or BENCH_OVERLOAD_RATE),
//                    offered for BENCH_OVERLOAD_S: the answers that succeed (p99), every other answer
//                    a 503 with Retry-After, then every accepted bill's claim reaches its outcome and
//                    its webhook (nothing lost); then the capacity itself is offered for
//                    BENCH_RECOVERY_S, and the time from the overload's end to the end of the first
//                    whole second in which claims reached their outcome (answer webhook received) at
//                    90 % or more of the capacity is the time full throughput took to return.
// Load shedding is what the overload judges, and it is off by default on the embedded database, so the
// scenarios run on a service with the shedding bounds set explicitly (sheddingEnv, PostgreSQL's
// defaults): the embedded pass starts one for them.
// Visits are recorded through the public API (createVisit), so both passes run the scenarios on the
// running service.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { expect, mapConcurrent } from './api.ts';
import { answerArrival, lostClaims, queuedClaims, runClaimPipeline } from './claim-pipeline.ts';
import { onCleanup } from './cleanup.ts';
import { type PassContext, watchService } from './pass-context.ts';
import { registerWebhook } from './provision.ts';
import type { NoisyNeighbourResult, OverloadResult } from './results.ts';
import { practiceWithVisits } from './seed-api.ts';
import { type RunningService, type ServiceSpec, startService } from './service.ts';
import { stepLoad, stepRates } from './step-load.ts';
import { startReceiver } from './webhook-receiver.ts';

function count(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a number ≥ 0, got "${raw}"`);
  return value;
}

export const ISOLATION = {
  noisyDeliveries: count('BENCH_NOISY_DELIVERIES', 300),
  noisyDelayMs: count('BENCH_NOISY_DELAY_MS', 9_000),
  noisyClaims: count('BENCH_NOISY_CLAIMS', 40),
  noisyRate: count('BENCH_NOISY_RATE', 4),
  /** 0: three times the claim capacity measured in the pass. */
  overloadRate: count('BENCH_OVERLOAD_RATE', 0),
  overloadSeconds: count('BENCH_OVERLOAD_S', 60),
  recoverySeconds: count('BENCH_RECOVERY_S', 20),
  drainMs: count('BENCH_ISOLATION_DRAIN_S', 180) * 1000,
};

/**
 * The load-shedding bounds the isolation scenarios run with: PostgreSQL's defaults (the in-flight
 * limit twice the default pool of 10), and on the embedded database, where shedding is off by
 * default, the same bounds with an in-flight limit of 4, since its one session runs one transaction
 * at a time.
 */
export function sheddingEnv(database: ServiceSpec['database']): Record<string, string> {
  return {
    LOAD_SHED_CONNECTION_WAIT_MS: '500',
    LOAD_SHED_EVENT_LOOP_LAG_MS: '500',
    LOAD_SHED_MAX_IN_FLIGHT: 'url' in database ? '20' : '4',
    LOAD_SHED_CLAIM_BACKLOG_MS: '2000',
    LOAD_SHED_LATENCY_TARGET_MS: '250',
  };
}

/** Full throughput: claims reaching their outcome at this share of the capacity, per second. */
const FULL_THROUGHPUT = 0.9;

export const ISOLATION_TARGETS = {
  noisyP50Ms: 1000,
  noisyMaxMs: 5000,
  overloadSuccessP99Ms: 1000,
  recoveryMs: 10_000,
};

/**
 * Milliseconds from `from` to the end of the first whole second (counted from `from`) with at least
 * `perSecond` of the arrivals in it; null when none had.
 */
export function throughputBackMs(arrivals: number[], from: number, perSecond: number): number | null {
  const last = Math.max(from, ...arrivals);
  for (let start = from; start < last; start += 1000) {
    const inSecond = arrivals.filter((at) => at >= start && at < start + 1000).length;
    if (inSecond >= perSecond) return Math.round(start + 1000 - from);
  }
  return null;
}

/** Receivers that follow the contract slowly: /slow answers 200 after delayMs, /never never answers. */
async function slowReceivers(
  delayMs: number,
): Promise<{ url: (path: string) => string; close: () => Promise<void> }> {
  const server = http.createServer((request, response) => {
    request.resume();
    if (request.url === '/slow') setTimeout(() => response.writeHead(200).end(), delayMs).unref();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  const forget = onCleanup('close slow webhook receivers', close);
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    close: async () => {
      await close();
      forget();
    },
  };
}

async function pendingDeliveries(baseUrl: string, adminToken: string): Promise<number> {
  const metrics = await expect(200, baseUrl, 'GET', '/admin/v1/metrics', { token: adminToken });
  const lane = (metrics.body.lanes as { lane: string; waiting: number; running: number }[]).find(
    (l) => l.lane === 'webhooks',
  );
  return (lane?.waiting ?? 0) + (lane?.running ?? 0);
}

export async function noisyNeighbourScenario(
  ctx: PassContext,
  service: RunningService,
  adminToken: string,
): Promise<NoisyNeighbourResult | undefined> {
  const s = ISOLATION;
  const needMs = 60_000 + (s.noisyClaims / Math.max(s.noisyRate, 0.1)) * 1000 + 30_000;
  if (!ctx.budget.fits(needMs)) {
    ctx.result.notes.push('noisy neighbour: skipped, the time budget ran out');
    return undefined;
  }
  const slow = await slowReceivers(s.noisyDelayMs);
  const receiver = await startReceiver();
  try {
    // A: two endpoints that follow the contract slowly, and a backlog of deliveries to them (each
    // issued bill is one invoice.issued event, delivered to both).
    const bills = Math.ceil(s.noisyDeliveries / 2);
    const a = await practiceWithVisits(service.baseUrl, adminToken, bills);
    for (const path of ['/slow', '/never'])
      await expect(
        201,
        service.baseUrl,
        'POST',
        `/admin/v1/practices/${a.practice.practiceId}/webhook-endpoints`,
        {
          token: adminToken,
          body: { url: slow.url(path), eventTypes: ['invoice.issued'] },
        },
      );
    await mapConcurrent(a.encounterIds, 16, (encounterId) =>
      expect(201, service.baseUrl, 'POST', `/api/v1/encounters/${encounterId}/bill`, {
        token: a.practice.key,
        body: { issue: true },
        idempotent: true,
      }),
    );
    const queued = await pendingDeliveries(service.baseUrl, adminToken);
    ctx.log(`noisy neighbour: practice A has ${queued} deliveries queued or running to its slow receivers`);

    // B bills and claims meanwhile.
    const b = await practiceWithVisits(service.baseUrl, adminToken, s.noisyClaims);
    await registerWebhook(service.baseUrl, adminToken, b.practice.practiceId, receiver.url);
    const claims = await runClaimPipeline({
      baseUrl: service.baseUrl,
      visits: b.encounterIds.map((encounterId) => ({ encounterId, key: b.practice.key })),
      receiver,
      warmup: { rate: s.noisyRate, seconds: 0 },
      measured: { rate: s.noisyRate, seconds: s.noisyClaims / Math.max(s.noisyRate, 0.1) },
      drainTimeoutMs: 60_000,
      connections: 8,
      log: ctx.log,
    });
    const stillPending = await pendingDeliveries(service.baseUrl, adminToken);
    ctx.log(
      `noisy neighbour: B's bill → claim answer p50 ${claims.endToEndP50Ms} ms, max ${claims.endToEndMaxMs} ms (${claims.claimsAccepted}/${claims.billsSent} accepted); A still has ${stillPending} deliveries queued`,
    );
    const result = { deliveriesQueued: queued, deliveriesStillPending: stillPending, claims };
    ctx.result.noisyNeighbour = result;
    return result;
  } finally {
    await receiver.close();
    await slow.close();
  }
}

export async function overloadScenario(
  ctx: PassContext,
  service: RunningService,
  adminToken: string,
): Promise<OverloadResult | undefined> {
  const s = ISOLATION;
  const measured = ctx.result.capacity?.claimsPerSec;
  const receiver = await startReceiver();
  try {
    let capacity = measured ?? 0;
    const more = async (n: number) => {
      const made = await practiceWithVisits(service.baseUrl, adminToken, n);
      await registerWebhook(service.baseUrl, adminToken, made.practice.practiceId, receiver.url);
      return made;
    };
    let capacitySource = s.overloadRate ? 'BENCH_OVERLOAD_RATE ÷ 3' : 'the step load of this pass';
    if (s.overloadRate === 0 && !capacity) {
      // No capacity measured in this pass: a step load of its own, on new practices.
      const steps = await stepLoad(
        ctx,
        service.baseUrl,
        receiver,
        async (n) => {
          const made = await more(n);
          return made.encounterIds.map((encounterId) => ({ encounterId, key: made.practice.key }));
        },
        stepRates(ctx.result.database),
      );
      capacity = steps?.claimsPerSec ?? 0;
      capacitySource = 'a step load of its own';
      if (!ctx.result.capacity && steps) ctx.result.capacity = steps;
    }
    if (s.overloadRate) capacity = s.overloadRate / 3;
    const rate = s.overloadRate || Math.max(1, Math.round(3 * capacity));
    const recoveryRate = Math.max(1, Math.round(s.overloadRate ? s.overloadRate / 3 : capacity));
    const overloadVisits = Math.round(rate * s.overloadSeconds);
    const recoveryVisits = Math.round(recoveryRate * s.recoverySeconds);
    const needMs = (s.overloadSeconds + s.recoverySeconds) * 1000 + 2 * s.drainMs;
    if (!ctx.budget.fits(needMs + overloadVisits * 5)) {
      ctx.result.notes.push('overload: skipped, the time budget ran out');
      return undefined;
    }
    const { practice, encounterIds: visits } = await more(overloadVisits + recoveryVisits);
    const key = practice.key;
    ctx.log(
      `overload: ${rate}/s offered for ${s.overloadSeconds} s (capacity ${capacity}/s, from ${capacitySource})`,
    );
    const overload = await runClaimPipeline({
      baseUrl: service.baseUrl,
      visits: visits.slice(0, overloadVisits).map((encounterId) => ({ encounterId, key })),
      receiver,
      warmup: { rate, seconds: 0 },
      measured: { rate, seconds: s.overloadSeconds },
      drainTimeoutMs: 0,
      connections: ctx.settings.connections,
      log: ctx.log,
    });
    const overloadEndedAt = performance.now();
    const recovery = await runClaimPipeline({
      baseUrl: service.baseUrl,
      visits: visits.slice(overloadVisits).map((encounterId) => ({ encounterId, key })),
      receiver,
      warmup: { rate: recoveryRate, seconds: 0 },
      measured: { rate: recoveryRate, seconds: s.recoverySeconds },
      drainTimeoutMs: s.drainMs,
      connections: ctx.settings.connections,
      log: ctx.log,
    });
    // Every bill the overload accepted reaches its claim's outcome and its webhook.
    const lost = await lostClaims(service.baseUrl, receiver, queuedClaims(overload), s.drainMs);
    const otherRefusals: Record<string, number> = {};
    for (const [status, n] of Object.entries(overload.billFailures))
      if (status !== '503') otherRefusals[status] = n;
    if (overload.refusedWithoutRetryAfter > 0)
      otherRefusals['503 without Retry-After'] = overload.refusedWithoutRetryAfter;
    const lastRefusal = recovery.lastRefusalAt;
    // Claims reaching their outcome after the overload, those it accepted and those of the recovery.
    const arrivals = [...queuedClaims(overload), ...queuedClaims(recovery)]
      .map((claim) => answerArrival(receiver, claim.invoiceId))
      .filter((at): at is number => at !== undefined && at >= overloadEndedAt);
    const result: OverloadResult = {
      capacity,
      capacitySource,
      overload,
      otherRefusals,
      lost,
      recovery,
      recoveryMs: throughputBackMs(arrivals, overloadEndedAt, FULL_THROUGHPUT * capacity),
      lastRefusalMs: lastRefusal === undefined ? 0 : Math.round(lastRefusal - overloadEndedAt),
    };
    ctx.result.overload = result;
    ctx.log(
      `overload: ${overload.billsOk}/${overload.billsSent} bills accepted (p99 ${overload.billP99Ms} ms), refused ${JSON.stringify(overload.billFailures)}; lost ${lost}; full throughput (${Math.round(FULL_THROUGHPUT * 100)} % of ${capacity}/s claims reaching their outcome) back ${result.recoveryMs === null ? 'never' : `${result.recoveryMs} ms`} after the overload, the last refusal ${result.lastRefusalMs} ms after it`,
    );
    return result;
  } finally {
    await receiver.close();
  }
}

/** Both scenarios, in that order. */
export async function isolationScenarios(ctx: PassContext, service: RunningService, adminToken: string) {
  await noisyNeighbourScenario(ctx, service, adminToken);
  await overloadScenario(ctx, service, adminToken);
}

/** BENCH_ONLY=isolation: both scenarios on a service of their own, started and stopped here. */
export async function isolationOnly(
  ctx: PassContext,
  spec: Omit<ServiceSpec, 'adminToken' | 'jobPollMs' | 'env'>,
): Promise<void> {
  const adminToken = `adm_bench_${randomBytes(12).toString('hex')}`;
  noteShedding(ctx, spec.database);
  const service = await startService({
    ...spec,
    adminToken,
    jobPollMs: ctx.settings.jobPollMs,
    env: sheddingEnv(spec.database),
  });
  try {
    const url = 'url' in spec.database ? new URL(spec.database.url) : undefined;
    await watchService(
      ctx,
      service,
      adminToken,
      url && ctx.settings.databaseUrl
        ? { adminUrl: ctx.settings.databaseUrl, serviceDatabase: url.pathname.slice(1) }
        : undefined,
    );
    await isolationScenarios(ctx, service, adminToken);
  } finally {
    await service.stop();
  }
}

/** Says in the run's notes which shedding bounds the isolation scenarios ran with. */
export function noteShedding(ctx: PassContext, database: ServiceSpec['database']): void {
  ctx.result.notes.push(
    `isolation scenarios: load shedding bounds set explicitly (${Object.entries(sheddingEnv(database))
      .map(([name, value]) => `${name}=${value}`)
      .join(', ')}); on the embedded database shedding is off by default`,
  );
}
