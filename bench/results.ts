// Owns the shape of what a run records: per database pass the A/B scenarios, the invoice-paging sizes,
// the claim pipeline, start-up times and memory, plus the machine and the target verdicts.
import type { AbResult } from './ab.ts';
import type { ClaimResult } from './claim-pipeline.ts';
import type { NoisyNeighbourResult, OverloadResult } from './isolation.ts';
import type { RateLimitStoreResult } from './rate-limit-store.ts';
import type { PassName } from './settings.ts';

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
  claims?: ClaimResult;
  /** The same pipeline at the lower rate its end-to-end latency is judged at (PostgreSQL). */
  claimsAtLatencyRate?: ClaimResult;
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
  notes: string[];
  error?: string;
  seconds: number;
}

export type Verdict = 'met' | 'not met' | 'not measured';

export interface TargetResult {
  target: string;
  database: PassName;
  value: string;
  verdict: Verdict;
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
