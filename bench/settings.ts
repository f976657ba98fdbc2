// Owns the bench's settings: the load shape the brief fixes (32 connections, warm-up, alternating
// rounds), data sizes, the claim rate and the time budget, each overridable by a BENCH_* variable for
// a quicker or narrower run.
function number(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0)
    throw new Error(`${name} must be a positive number, got "${raw}"`);
  return value;
}

export type PassName = 'postgres' | 'pglite';

/**
 * BENCH_ONLY=claims runs only the claim pipelines (with what they need), BENCH_ONLY=requests only the
 * patient request scenarios (GET, POST, search) against the baseline and the rate-limit store
 * comparison, BENCH_ONLY=rate-limits only that comparison (PostgreSQL), BENCH_ONLY=isolation only
 * the noisy-neighbour and overload scenarios (bench/isolation.ts) on a fresh service, BENCH_ONLY=processes
 * only the comparison of one API and worker process against two of each (bench/processes.ts,
 * PostgreSQL): quick looks at one part.
 */
const ONLY = ['claims', 'requests', 'rate-limits', 'isolation', 'processes'] as const;

function only(): (typeof ONLY)[number] | undefined {
  const raw = process.env.BENCH_ONLY;
  if (raw === undefined || raw === '') return undefined;
  const known = ONLY.find((name) => name === raw);
  if (known === undefined)
    throw new Error(`BENCH_ONLY must be one of ${ONLY.map((name) => `"${name}"`).join(', ')}, got "${raw}"`);
  return known;
}

function passes(): PassName[] {
  const wanted = (process.env.BENCH_PASSES ?? 'pglite,postgres').split(',').map((p) => p.trim());
  return (['pglite', 'postgres'] as const).filter(
    (p) =>
      wanted.includes(p) &&
      (p !== 'postgres' || Boolean(process.env.DATABASE_URL)) &&
      // The embedded database has no shared store to compare, and runs in one process only.
      (p !== 'pglite' || (only() !== 'rate-limits' && only() !== 'processes')),
  );
}

export const settings = {
  /** Everything, reports and cleanup included, ends within this (the brief: under 15 minutes). */
  budgetMs: number('BENCH_BUDGET_S', 14 * 60 + 20) * 1000,
  passes: passes(),
  only: only(),
  databaseUrl: process.env.DATABASE_URL,
  connections: 32,
  warmupSeconds: number('BENCH_WARMUP_S', 3),
  roundSeconds: number('BENCH_ROUND_S', 5),
  rounds: number('BENCH_ROUNDS', 2),
  /** The service's DATABASE_POOL_SIZE default, which the baseline's pool copies. */
  poolSize: 10,
  jobPollMs: 20,
  patients: number('BENCH_PATIENTS', 1000),
  coveredPatients: 200,
  smallInvoices: 10_000,
  largeInvoices: number('BENCH_LARGE_INVOICES', 1_000_000),
  /** The size the large load falls back to when 1,000,000 would not fit the budget. */
  fallbackInvoices: 200_000,
  /** Gap between the loaded invoices' change times (1,000,000 invoices span about a year). */
  invoiceStepMs: 30_000,
  pageStarts: 200,
  /** The rate the shared-practices run offers when no capacity was measured (else the capacity). */
  claimRate: number('BENCH_CLAIM_RATE', 300),
  claimSeconds: number('BENCH_CLAIM_S', 8),
  /** How long the end-to-end latency is measured at each share of the capacity. */
  latencySeconds: number('BENCH_LATENCY_S', 10),
  /** Claims counted one by one for the statements per claim and per job kind (PostgreSQL). */
  countedClaims: number('BENCH_COUNTED_CLAIMS', 40),
  /** Practices sharing the offered rate in the second PostgreSQL pipeline run. */
  sharedPractices: number('BENCH_SHARED_PRACTICES', 20),
  claimWarmup: { rate: 50, seconds: 2 },
  claimDrainMs: 30_000,
  existingStarts: 3,
  /** PostgreSQL pass: the worker runs as a process of its own beside the API (BENCH_SEPARATE_WORKER=false: one process). */
  separateWorker: process.env.BENCH_SEPARATE_WORKER !== 'false',
  /** When set, the service runs with --cpu-prof and writes its profile here. */
  cpuProfDir: process.env.BENCH_CPU_PROF_DIR,
  resultsDir: process.env.BENCH_RESULTS_DIR,
};

export type Settings = typeof settings;

/** The shares of the measured capacity at which the claim's end-to-end latency is measured. */
export const LATENCY_SHARES = [0.5, 0.8] as const;

export const TARGETS = {
  getPatientRatio: 0.8,
  getPatientP99Ms: 25,
  postPatientRatio: 0.65,
  /** Step-load capacity on two cores (the embedded database: the earlier 30/s). */
  claimsPerSec: { postgres: 130, pglite: 30 },
  /** At 50 % of the capacity. */
  claimsP50Ms: 50,
  claimsP99Ms: 250,
  statementsPerClaim: 60,
  transactionsPerClaim: 8,
  /** Service (API + worker) and PostgreSQL CPU per claim at saturation. */
  cpuMsPerClaim: 11,
  largePageLatencyRatio: 1.5,
  existingStartMs: 1000,
  peakRssMB: 250,
};
