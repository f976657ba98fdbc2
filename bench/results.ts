// Owns the shape of what a run records: per database pass the A/B scenarios, the invoice-paging sizes,
// the claim pipeline, start-up times and memory, plus the machine and the target verdicts.
import type { AbResult } from './ab.ts';
import type { ClaimResult } from './claim-pipeline.ts';
import type { CountedClaims } from './counted-claims.ts';
import type { CpuUse } from './cpu-window.ts';
import type { NoisyNeighbourResult, OverloadResult } from './isolation.ts';
import type { RateLimitStoreResult } from './rate-limit-store.ts';
import type { PassName } from './settings.ts';
import type { MeasuredClaims, StepLoadResult } from './step-load.ts';

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
