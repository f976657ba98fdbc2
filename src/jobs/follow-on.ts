// Owns follow-on jobs: a job that a running job queues, due at once, is leased to the worker running
// it as it is inserted, and that worker runs it as soon as the transaction that queued it commits,
// with no take of its own (a claim's answer queues its remittance and its webhook; a submission's
// answer its delivery). Only when the worker has a slot free for it in its lane (not one a take on its
// way may fill), and its concurrency key (a delivery's endpoint) is below the lane's cap: in this
// worker (the jobs of the key it runs or holds slots for), and in the database, which the insert
// itself asks (src/jobs/queue.ts: leased only while fewer of the key's jobs than the cap run under a
// live lease, in any worker); otherwise it is queued as any job, for the next take. Leased as a take
// leases (locked_by, locked_until, one attempt), so a worker that dies before or while running it
// leaves it to be taken again once the lease runs out, and its end is recorded only while the lease is
// still this worker's (finishJob). A follow-on handed over once its lane has stopped is not run: its
// lease is given back, so that another worker takes it at its next take, not once the lease runs out.
// What the queuing transaction already knows for the job (a delivery's endpoint and event) can be
// handed over with it (src/jobs/handoff.ts), so that the job need not read it again.
import { AsyncLocalStorage } from 'node:async_hooks';
import { handOver } from './handoff.ts';
import type { JobRow } from './job-row.ts';
import type { JobLane } from './lanes.ts';

/** A worker that runs follow-on jobs of the jobs it runs. */
export interface FollowOnRunner {
  workerId: string;
  leaseMs: number;
  /** Jobs of one concurrency key that may run at once in the lane, in all workers; null for no cap. */
  keyCap(lane: JobLane): number | null;
  /** Jobs of one practice that may run at once in the lane, in all workers; null for no cap. */
  practiceCap(lane: JobLane): number | null;
  /** Holds a slot of the lane (and of the key, '' for none) for a job about to be queued; false when none is free. */
  reserve(lane: JobLane, key: string): boolean;
  /** Gives back a slot held by reserve whose job was not queued (its transaction rolled back). */
  release(lane: JobLane, key: string): void;
  /** Runs a committed follow-on job in the slot reserve held for it. */
  run(job: JobRow): void;
}

interface Reserved {
  lane: JobLane;
  key: string;
  /** The job as the take would have answered it; set when the row is built. */
  row?: JobRow;
}

interface Scope {
  runner: FollowOnRunner;
  /** Slots held for rows built and not yet handed to the runner. */
  reserved: Set<Reserved>;
  /** Rows built since the last announcement, by the row object their insert carries. */
  built: Map<object, Reserved>;
}

const scope = new AsyncLocalStorage<Scope>();

/**
 * Runs a job's handler so that the jobs it queues due at once may follow on in this worker; any slot
 * held for a follow-on whose transaction did not commit is given back when the handler ends.
 */
export async function runWithFollowOns<T>(runner: FollowOnRunner, fn: () => Promise<T>): Promise<T> {
  const current: Scope = { runner, reserved: new Set(), built: new Map() };
  try {
    return await scope.run(current, fn);
  } finally {
    for (const held of current.reserved) runner.release(held.lane, held.key);
  }
}

/**
 * For a job about to be queued due at once from inside a running job: the lease that makes it this
 * worker's follow-on (a slot held for it), or undefined when it is queued for any worker. keyCap,
 * when not null, is the cap the insert must find its key below for the lease to hold. `insert` is the
 * row object the caller inserts; `row` completes it as the take would answer it.
 */
export function followOnLease(
  lane: JobLane,
  key: string,
  delayMs: number,
):
  | {
      locked_by: string;
      attempts: number;
      leaseMs: number;
      keyCap: number | null;
      practiceCap: number | null;
      claim: (insert: object, row: JobRow, handoff: unknown) => void;
    }
  | undefined {
  const current = scope.getStore();
  if (!current || delayMs > 0 || !current.runner.reserve(lane, key)) return undefined;
  const held: Reserved = { lane, key };
  current.reserved.add(held);
  return {
    locked_by: current.runner.workerId,
    attempts: 1,
    leaseMs: current.runner.leaseMs,
    keyCap: key === '' ? null : current.runner.keyCap(lane),
    practiceCap: current.runner.practiceCap(lane),
    claim: (insert, row, handoff) => {
      held.row = row;
      if (handoff !== undefined) handOver(row, handoff);
      current.built.set(insert, held);
    },
  };
}

/**
 * Of the rows a transaction inserted, the follow-on jobs (built by followOnLease) that the insert
 * leased (their ids in `leased`): `hand` gives them to the runner, to call once that transaction has
 * committed; a row built as one that the insert did not lease (its key at the cap) gives its slot
 * back. `others` is true when some row is not a follow-on, and its lane must be woken for it.
 */
export function takeFollowOns(
  inserted: readonly object[],
  leased: ReadonlySet<string>,
): {
  hand: (() => void) | undefined;
  others: boolean;
} {
  const current = scope.getStore();
  const held: Reserved[] = [];
  let others = false;
  for (const insert of inserted) {
    const found = current?.built.get(insert);
    if (!found?.row) {
      others = true;
      continue;
    }
    current!.built.delete(insert);
    if (leased.has(found.row.id)) {
      held.push(found);
      continue;
    }
    others = true;
    if (current!.reserved.delete(found)) current!.runner.release(found.lane, found.key);
  }
  if (!current || held.length === 0) return { hand: undefined, others };
  const hand = () => {
    for (const one of held) {
      if (!current.reserved.delete(one)) continue;
      current.runner.run(one.row!);
    }
  };
  return { hand, others };
}
