// Owns the rate-limit store comparison (PostgreSQL pass; alone with BENCH_ONLY=rate-limits): what
// counting one request costs in the shared PostgreSQL store (src/platform/http/rate-limit.ts, table
// rate_limits, migration 0016) against the process's memory, which is what the embedded database and
// earlier builds use. Measured in the bench process itself on a database of its own, through the
// service's own RateLimits on a pool of the service's size: 32 callers counting one client's requests
// (as the patient scenarios do: one key, 32 connections), a warm-up on each store discarded, then
// alternating rounds memory, PostgreSQL, ... The ratio is PostgreSQL's throughput ÷ memory's; the
// p50 difference is what each API request pays for a count that every process shares. The shared
// store is asked as the service asks it: a process reserves a hundredth of the allowance at a time and
// counts from its reservation in memory, so at the allowance below nearly every count is served from a
// reservation, and the figure is what a request pays for a shared count, not what one upsert costs.
import type { Kysely } from 'kysely';
import { openPostgres } from '../src/platform/db/database.ts';
import { migrateToLatest } from '../src/platform/db/migrate.ts';
import { RateLimits } from '../src/platform/http/rate-limit.ts';
import type { PassContext } from './pass-context.ts';
import { createDatabase, randomSuffix } from './postgres.ts';
import type { RateLimitStoreResult, StoreName, StoreRound, StoreSummary } from './results.ts';
import { median, percentile, round } from './stats.ts';

/** An allowance no caller reaches: no count is refused (its reservations are a hundredth of it). */
const UNREACHED = 1_000_000_000;

async function countFor(limits: RateLimits, seconds: number, callers: number): Promise<StoreSummary> {
  const latencies: number[] = [];
  const until = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (performance.now() < until) {
        const at = performance.now();
        await limits.consume('client:cli_bench', UNREACHED);
        latencies.push(performance.now() - at);
        // The memory store answers without I/O: let timers and sockets have the thread as in a server.
        if (latencies.length % 256 === 0) await new Promise((resolve) => setImmediate(resolve));
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  return {
    countsPerSec: round(latencies.length / elapsed, 0),
    p50Ms: round(percentile(latencies, 50), 3),
    p99Ms: round(percentile(latencies, 99), 3),
  };
}

function summary(rounds: StoreRound[], store: StoreName): StoreSummary {
  const measured = rounds.filter((r) => r.store === store && r.round > 0);
  return {
    countsPerSec: round(median(measured.map((r) => r.countsPerSec)), 0),
    p50Ms: round(median(measured.map((r) => r.p50Ms)), 3),
    p99Ms: round(median(measured.map((r) => r.p99Ms)), 3),
  };
}

export async function rateLimitStoreScenario(ctx: PassContext, databaseUrl: string): Promise<void> {
  const { settings } = ctx;
  const seconds = settings.roundSeconds;
  const needMs = (2 * (settings.warmupSeconds + settings.rounds * seconds) + 10) * 1000;
  if (!ctx.budget.fits(needMs)) {
    ctx.result.notes.push('rate-limit store: skipped, the time budget ran out');
    ctx.log('rate-limit store: skipped (time budget)');
    return;
  }
  const database = await createDatabase(databaseUrl, `pb_bench_${randomSuffix()}_rl`);
  const db = openPostgres({
    url: database.url,
    poolSize: settings.poolSize,
    statementTimeoutMs: 15_000,
    preparedStatements: true,
  });
  try {
    await migrateToLatest(db.kysely as unknown as Kysely<unknown>);
    const stores: Record<StoreName, RateLimits> = {
      memory: new RateLimits(),
      postgres: new RateLimits({ store: { query: db.poolQuery! } }),
    };
    const rounds: StoreRound[] = [];
    const order: StoreName[] = ['memory', 'postgres'];
    for (let n = 0; n <= settings.rounds; n++) {
      for (const store of order) {
        const result = await countFor(stores[store], n === 0 ? settings.warmupSeconds : seconds, 32);
        rounds.push({ store, round: n, ...result });
      }
    }
    const ratios = Array.from({ length: settings.rounds }, (_, i) => {
      const of = (store: StoreName) => rounds.find((r) => r.store === store && r.round === i + 1)!;
      return of('postgres').countsPerSec / of('memory').countsPerSec;
    });
    const memory = summary(rounds, 'memory');
    const postgres = summary(rounds, 'postgres');
    const result: RateLimitStoreResult = {
      rounds,
      memory,
      postgres,
      ratio: round(median(ratios), 4),
      addedP50Ms: round(postgres.p50Ms - memory.p50Ms, 3),
      basis: `one client's counts from 32 callers in the bench process, pool of ${settings.poolSize}, ${settings.rounds} rounds of ${seconds} s after a ${settings.warmupSeconds} s warm-up on each store`,
    };
    ctx.result.rateLimitStore = result;
    ctx.log(
      `rate-limit store: memory ${memory.countsPerSec}/s (p50 ${memory.p50Ms} ms), PostgreSQL ${postgres.countsPerSec}/s (p50 ${postgres.p50Ms} ms, p99 ${postgres.p99Ms} ms): ${result.ratio}×`,
    );
  } finally {
    await db.close();
    await database.drop();
  }
}
