// Owns finding the claim pipeline's capacity by a step load, and measuring a claim run's CPU:
//   step load    the offered claim rate is raised step by step (from BENCH_STEP_START, × BENCH_STEP_FACTOR,
//                BENCH_STEP_S each, up to BENCH_STEP_MAX) until completions (the claim's answer webhook
//                received) stop following it: fewer than 90 % of the offered rate completed within the
//                step's window (its sending, less the first second, while the pipeline fills). Each
//                step starts on an empty queue (the one before drained). The capacity is the highest
//                completion rate of any step.
//   CPU          during each step's window, the utime + stime (from /proc) of the API, the worker and
//                the PostgreSQL backends serving the service's database, ÷ the claims completed in
//                that window: CPU ms per claim. "At saturation" is the first step that did not follow.
import {
  answerArrival,
  type ClaimOptions,
  type ClaimResult,
  queuedClaims,
  runClaimPipeline,
} from './claim-pipeline.ts';
import { CpuWindow } from './cpu-window.ts';
import { type PassContext, recordWindow } from './pass-context.ts';
import type { MeasuredClaims, StepLoadResult } from './results.ts';
import type { PassName } from './settings.ts';
import { round } from './stats.ts';
import type { Receiver } from './webhook-receiver.ts';

/** A window opens this long after the first send, once the pipeline has filled. */
const RAMP_MS = 1_000;

/** Completions follow the offered rate while at least this share of it completes. */
export const FOLLOWING = 0.9;

export const STEPS = {
  start: { postgres: number('BENCH_STEP_START', 30), pglite: number('BENCH_STEP_START', 8) },
  factor: number('BENCH_STEP_FACTOR', 1.25),
  seconds: number('BENCH_STEP_S', 6),
  /** The embedded database runs on one thread: its steps stop lower (its visits are loaded in advance). */
  max: { postgres: number('BENCH_STEP_MAX', 400), pglite: number('BENCH_STEP_MAX', 100) },
  drainMs: number('BENCH_STEP_DRAIN_S', 20) * 1000,
};

function number(name: string, fallback: number): number {
  const raw = process.env[name];
  const value = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isFinite(value) || value <= 0)
    throw new Error(`${name} must be a positive number, got "${raw}"`);
  return value;
}

/** The offered rates of a full step load on a database, from its start up to its maximum. */
export function stepRates(database: PassName): number[] {
  const rates: number[] = [];
  for (let rate = STEPS.start[database]; rate <= STEPS.max[database]; rate *= STEPS.factor)
    if (Math.round(rate) !== rates.at(-1)) rates.push(Math.round(rate));
  return rates;
}

/** Runs one claim pipeline with a CPU window around its sending. */
export async function measuredClaims(
  ctx: PassContext,
  label: string,
  options: Omit<ClaimOptions, 'window'>,
): Promise<MeasuredClaims> {
  const window = await CpuWindow.open({ ...ctx.cpu, label });
  let begunAt: number | undefined;
  let endedAt = 0;
  let ramp: NodeJS.Timeout | undefined;
  const begin = () => {
    begunAt = performance.now();
    window.begin();
  };
  let run: ClaimResult;
  try {
    run = await runClaimPipeline({
      ...options,
      window: {
        // The window opens once the pipeline has filled: its first claims complete a latency later.
        begin: () => {
          ramp = setTimeout(begin, RAMP_MS);
        },
        end: () => {
          clearTimeout(ramp);
          if (begunAt === undefined) begin();
          endedAt = performance.now();
          window.end();
        },
      },
    });
  } catch (error) {
    clearTimeout(ramp);
    if (begunAt === undefined) begin();
    window.end();
    await window.close().catch(() => {});
    throw error;
  }
  const cpu = recordWindow(ctx, await window.close());
  const completed = queuedClaims(run)
    .map((claim) => answerArrival(options.receiver, claim.invoiceId))
    .filter((at) => at !== undefined && at >= begunAt! && at <= endedAt).length;
  const seconds = (endedAt - begunAt!) / 1000;
  const perClaim = (ms: number) => round(ms / completed, 2);
  return {
    run,
    cpu,
    completionsPerSec: round(seconds > 0 ? completed / seconds : 0, 1),
    cpuMsPerClaim:
      completed > 0
        ? {
            api: perClaim(cpu.apiMs),
            worker: perClaim(cpu.workerMs),
            postgres: perClaim(cpu.postgresMs),
            total: perClaim(cpu.apiMs + cpu.workerMs + cpu.postgresMs),
          }
        : undefined,
  };
}

/**
 * Raises the offered rate until completions stop following it. `visits(n)` answers n visits not billed
 * yet (with their practice's key); the receiver is registered for their practice.
 */
export async function stepLoad(
  ctx: PassContext,
  baseUrl: string,
  receiver: Receiver,
  visits: (count: number) => Promise<ClaimOptions['visits']>,
  rates: number[],
): Promise<StepLoadResult | undefined> {
  const steps: StepLoadResult['steps'] = [];
  // Warmed up at the first step's rate: a faster warm-up would leave a backlog for the first step.
  let warmup = { rate: rates[0] ?? 1, seconds: ctx.settings.claimWarmup.seconds };
  for (const rate of rates) {
    const needMs = STEPS.seconds * 1000 + STEPS.drainMs * 1.5 + 5_000;
    if (!ctx.budget.fits(needMs)) {
      ctx.result.notes.push(`step load: stopped before ${rate}/s, the time budget ran out`);
      break;
    }
    const warmCount = Math.round(warmup.rate * warmup.seconds);
    const step = await measuredClaims(ctx, `step ${rate}/s`, {
      baseUrl,
      visits: await visits(warmCount + Math.round(rate * STEPS.seconds)),
      receiver,
      warmup,
      measured: { rate, seconds: STEPS.seconds },
      drainTimeoutMs: STEPS.drainMs,
      connections: ctx.settings.connections,
      log: ctx.log,
    });
    warmup = { rate, seconds: 0 };
    const following = step.completionsPerSec >= FOLLOWING * rate;
    steps.push({ ...step, offeredRate: rate, following });
    ctx.log(
      `step ${rate}/s: sent ${step.run.sendRate}/s, completed ${step.completionsPerSec}/s (${following ? 'following' : 'not following'}), bill p50 ${step.run.billP50Ms} ms, end to end p50 ${step.run.endToEndP50Ms} ms; CPU per claim ${step.cpuMsPerClaim ? `${step.cpuMsPerClaim.total} ms (API ${step.cpuMsPerClaim.api}, worker ${step.cpuMsPerClaim.worker}, PostgreSQL ${step.cpuMsPerClaim.postgres})` : '-'}; others ${step.cpu.othersPctOfCore} % of a core`,
    );
    if (!following) break;
  }
  if (steps.length === 0) return undefined;
  const followed = steps.filter((s) => s.following);
  const saturation = steps.find((s) => !s.following);
  return {
    steps,
    claimsPerSec: Math.max(...steps.map((s) => s.completionsPerSec)),
    followedUpTo: followed.length ? Math.max(...followed.map((s) => s.offeredRate)) : 0,
    saturated: saturation !== undefined,
    cpuMsPerClaimAtSaturation: (saturation ?? steps[steps.length - 1]!).cpuMsPerClaim,
  };
}
