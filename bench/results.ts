// Owns the shape of what a run records: per database pass the A/B scenarios, the invoice-paging sizes,
// the claim pipeline (its step load, counted claims and isolation scenarios), the rate-limit store,
// start-up times and memory, plus the machine and the target verdicts. The modules that measure
// import these shapes from here; this module imports none of them back.
import type { AbResult } from './ab.ts';
import type { ClaimResult } from './claim-pipeline.ts';
import type { CpuUse } from './cpu-window.ts';
import type { DbCounts } from './db-counts.ts';
import type { PassName } from './settings.ts';

export interface MeasuredClaims {
  run: ClaimResult;
  cpu: CpuUse;
  /** Answer webhooks of this run's claims received during its sending, per second. */
  completionsPerSec: number;
  /** Service (API + worker) and PostgreSQL CPU ms per claim completed during the sending. */
  cpuMsPerClaim: { api: number; worker: number; postgres: number; total: number } | undefined;
}

export interface StepLoadResult {
  steps: (MeasuredClaims & { offeredRate: number; following: boolean })[];
  /** The highest completion rate of any step, claims/s. */
  claimsPerSec: number;
  /** The highest offered rate the completions followed; 0 when not even the first. */
  followedUpTo: number;
  /** True when a step did not follow (the machine was saturated); false when the last step still did. */
  saturated: boolean;
  /** CPU per claim in the first step that did not follow (else the last step). */
  cpuMsPerClaimAtSaturation: MeasuredClaims['cpuMsPerClaim'];
}

export interface CountedClaims {
  claims: number;
  perClaim: { total: DbCounts; api: DbCounts; worker: DbCounts };
  /** Per job kind: jobs per claim, and the work of one job and of a claim's jobs of that kind. */
  byKind: Record<string, { jobsPerClaim: number; perJob: DbCounts; perClaim: DbCounts }>;
  /** The worker's work outside any job, per claim. */
  workerOutsideJobs: DbCounts;
  basis: string;
}

export interface NoisyNeighbourResult {
  deliveriesQueued: number;
  /** Deliveries of A still pending when B's last claim had its answer. */
  deliveriesStillPending: number;
  claims: ClaimResult;
}

export interface OverloadResult {
  /** The claim capacity the overload is three times, claims/s. */
  capacity: number;
  /** Where that capacity comes from. */
  capacitySource: string;
  overload: ClaimResult;
  /** Refusals that were not a 503 with Retry-After, by status. */
  otherRefusals: Record<string, number>;
  /** Accepted bills whose claim had no outcome, or whose webhook never came, after the drain. */
  lost: number;
  recovery: ClaimResult;
  /**
   * From the end of the overload until the end of the first whole second in which claims reached their
   * outcome at 90 % of the capacity or more; null when no second did.
   */
  recoveryMs: number | null;
  /** From the end of the overload until the last bill refused while the capacity was offered. */
  lastRefusalMs: number;
}

export type StoreName = 'memory' | 'postgres';

export interface StoreRound {
  store: StoreName;
  /** 0 for the warm-up. */
  round: number;
  countsPerSec: number;
  p50Ms: number;
  p99Ms: number;
}

export interface StoreSummary {
  countsPerSec: number;
  p50Ms: number;
  p99Ms: number;
}

export interface RateLimitStoreResult {
  rounds: StoreRound[];
  memory: StoreSummary;
  postgres: StoreSummary;
  /** Median over rounds of PostgreSQL counts/s ÷ memory counts/s. */
  ratio: number;
  /** Median p50 PostgreSQL − memory: what each request pays for a shared count. */
  addedP50Ms: number;
  basis: string;
}

export interface InvoiceLoad {
  invoices: number;
  loadSeconds: number;
  note?: string;
}

export interface PassResult {
  database: PassName;
  scenarios: AbResult[];
  invoices: { small?: InvoiceLoad; large?: InvoiceLoad };
  /** p50 page latency at the large size ÷ at 10,000 invoices (service; baseline for comparison). */
  pageLatencyRatio?: { service: number; baseline: number; basis: string };
  /** The claim pipeline's capacity, by a step load. */
  capacity?: StepLoadResult;
  /** The pipeline at 50 % and 80 % of that capacity. */
  latency?: (MeasuredClaims & { share: number })[];
  /** Statements, round trips and transactions per claim and per job kind. */
  counted?: CountedClaims;
  /** The pipeline at the same offered rate spread over several practices (PostgreSQL). */
  claimsShared?: ClaimResult & { practices: number };
  /** Another practice's claims while one practice's deliveries wait on slow receivers. */
  noisyNeighbour?: NoisyNeighbourResult;
  /** Three times the claim capacity offered, and what followed. */
  overload?: OverloadResult;
  /** Counting a request in the shared PostgreSQL store against in memory (PostgreSQL). */
  rateLimitStore?: RateLimitStoreResult;
  /** Spawn to first 200 from /healthz, ms. */
  start?: { newDataDirMs?: number; existingDataDirMs?: number[]; firstStartMs?: number };
  memory?: {
    servicePeakRssMiB: number;
    serviceRssMiB: number;
    baselinePeakRssMiB?: number;
    /** Set when the worker ran as a process of its own. */
    apiPeakRssMiB?: number;
    workerPeakRssMiB?: number;
  };
  /** The 1-minute load average when the pass began and ended. */
  loadAverage: { before: number; after?: number };
  /** Every measured window's CPU use, per user, and the load average around it. */
  windows: CpuUse[];
  notes: string[];
  error?: string;
  seconds: number;
}

export type Verdict = 'met' | 'not met' | 'not measured' | 'not judged: machine busy';

export interface TargetResult {
  target: string;
  database: PassName;
  value: string;
  verdict: Verdict;
  /** Why a timing figure was not judged (the quiet-machine rule), with the figures. */
  busy?: string[];
}

export interface RunResult {
  startedAt: string;
  finishedAt?: string;
  durationSeconds?: number;
  machine: {
    cpuModel: string;
    cpuCount: number;
    totalMemoryGiB: number;
    node: string;
    platform: string;
    loadAverageAtStart: number[];
    loadAverageAtEnd?: number[];
  };
  settings: Record<string, unknown>;
  passes: PassResult[];
  targets: TargetResult[];
  notes: string[];
}
