// Owns one A/B comparison: the same autocannon load (32 connections by default) on the service (A) and
// the baseline (B): a warm-up run on each, discarded, then alternating rounds A B A B ..., so that
// whatever else the shared machine is doing falls on both alike. Summaries are medians over rounds;
// the ratio is the median of the per-round service/baseline throughput ratios.
import autocannon from 'autocannon';
import type { CpuUse } from './cpu-window.ts';
import { type DbCounts, per, plus, ZERO } from './db-counts.ts';
import type { Scenario } from './scenarios.ts';
import { median, round } from './stats.ts';

export type TargetName = 'service' | 'baseline';

export interface RoundResult {
  target: TargetName;
  /** 0 for the warm-up. */
  round: number;
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  okResponses: number;
  otherResponses: number;
  errors: number;
  statusCodes: Record<string, number>;
  /** The database work of the round's requests (when the target counts it), and how many were sent. */
  counts?: DbCounts;
  sent?: number;
  /** Who used the CPU during the round (measured rounds). */
  cpu?: CpuUse;
}

/** Measures around one round: begun just before it, ended with the number of requests it sent. */
export interface RoundProbe {
  begin(): Promise<void>;
  end(sent: number): Promise<{ counts?: DbCounts; sent?: number; cpu?: CpuUse }>;
}

export interface TargetSummary {
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
}

/** CPU ms per request sent over the measured rounds, by who used it. */
export interface CpuPerRequest {
  /** The target's own processes: the service's API and worker, or the baseline server. */
  server: number;
  /** The PostgreSQL backends of the target's database (on PGlite, inside the server). */
  postgres: number;
  /** The bench: the load generator, the rest of the bench's process, PostgreSQL's background processes. */
  bench: number;
}

export interface AbResult {
  key: string;
  title: string;
  rounds: RoundResult[];
  service: TargetSummary;
  baseline: TargetSummary;
  /** Median over rounds of service req/s ÷ baseline req/s. */
  ratio: number;
  /** Non-2xx answers and socket errors over all measured rounds, per target. */
  failures: Record<TargetName, number>;
  /** Statements, round trips and transactions per answer over the measured rounds, per target that counts. */
  perRequest: Partial<Record<TargetName, DbCounts>>;
  cpuPerRequest: Partial<Record<TargetName, CpuPerRequest>>;
}

export interface AbOptions {
  connections: number;
  warmupSeconds: number;
  roundSeconds: number;
  rounds: number;
  log: (line: string) => void;
  probe?: (target: TargetName, round: number) => RoundProbe;
}

async function once(
  scenario: Scenario,
  target: TargetName,
  url: string,
  seconds: number,
  connections: number,
  roundNumber: number,
  probe?: RoundProbe,
): Promise<RoundResult> {
  await probe?.begin();
  const result = await autocannon({
    url,
    connections,
    duration: seconds,
    timeout: 30,
    requests: scenario.requests(target),
  });
  const statusCodes = Object.fromEntries(
    Object.entries(result.statusCodeStats ?? {}).map(([code, stat]) => [code, stat.count]),
  );
  const extras = probe ? await probe.end(result.requests.sent) : {};
  return {
    ...extras,
    target,
    round: roundNumber,
    reqPerSec: round(result['2xx'] / result.duration, 1),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    okResponses: result['2xx'],
    otherResponses: result.non2xx,
    errors: result.errors + result.timeouts,
    statusCodes,
  };
}

function summary(rounds: RoundResult[]): TargetSummary {
  return {
    reqPerSec: round(median(rounds.map((r) => r.reqPerSec)), 1),
    p50Ms: median(rounds.map((r) => r.p50Ms)),
    p99Ms: median(rounds.map((r) => r.p99Ms)),
  };
}

export async function runAb(
  scenario: Scenario,
  urls: Record<TargetName, string>,
  options: AbOptions,
): Promise<AbResult> {
  const all: RoundResult[] = [];
  const describe = (r: RoundResult) =>
    `${scenario.key} ${r.round === 0 ? 'warm-up' : `round ${r.round}`} ${r.target}: ${r.reqPerSec} req/s, p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms${r.otherResponses + r.errors > 0 ? `, ${r.otherResponses} non-2xx ${JSON.stringify(r.statusCodes)}, ${r.errors} errors` : ''}`;
  for (const target of ['service', 'baseline'] as const) {
    const warm = await once(scenario, target, urls[target], options.warmupSeconds, options.connections, 0);
    options.log(describe(warm));
    all.push(warm);
  }
  for (let i = 1; i <= options.rounds; i++) {
    for (const target of ['service', 'baseline'] as const) {
      const r = await once(
        scenario,
        target,
        urls[target],
        options.roundSeconds,
        options.connections,
        i,
        options.probe?.(target, i),
      );
      options.log(describe(r));
      all.push(r);
    }
  }
  const measured = all.filter((r) => r.round > 0);
  const of = (target: TargetName) => measured.filter((r) => r.target === target);
  const ratios = Array.from({ length: options.rounds }, (_, i) => {
    const a = measured.find((r) => r.target === 'service' && r.round === i + 1)!;
    const b = measured.find((r) => r.target === 'baseline' && r.round === i + 1)!;
    return a.reqPerSec / b.reqPerSec;
  });
  const failures = (target: TargetName) => of(target).reduce((n, r) => n + r.otherResponses + r.errors, 0);
  const perRequest: Partial<Record<TargetName, DbCounts>> = {};
  for (const target of ['service', 'baseline'] as const) {
    const counted = of(target).filter((r) => r.counts);
    if (counted.length === 0) continue;
    const sent = counted.reduce((n, r) => n + (r.sent ?? 0), 0);
    perRequest[target] = per(
      counted.reduce((sum, r) => plus(sum, r.counts!), ZERO),
      sent,
    );
  }
  const cpuPerRequest: Partial<Record<TargetName, CpuPerRequest>> = {};
  for (const target of ['service', 'baseline'] as const) {
    const watched = of(target).filter((r) => r.cpu && r.sent);
    const sent = watched.reduce((n, r) => n + r.sent!, 0);
    if (sent === 0) continue;
    const total = (ms: (cpu: CpuUse) => number) =>
      round(watched.reduce((n, r) => n + ms(r.cpu!), 0) / sent, 3);
    cpuPerRequest[target] = {
      server: total((c) => c.apiMs + c.workerMs),
      postgres: total((c) => c.postgresMs),
      bench: total((c) => c.benchMs),
    };
  }
  return {
    key: scenario.key,
    title: scenario.title,
    rounds: all,
    service: summary(of('service')),
    baseline: summary(of('baseline')),
    ratio: round(median(ratios), 3),
    failures: { service: failures('service'), baseline: failures('baseline') },
    perRequest,
    cpuPerRequest,
  };
}
