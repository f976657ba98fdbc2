// Owns named fault points: places in the service where, for crash-consistency tests, the process
// kills itself with SIGKILL (no cleanup, no flush, no answer sent) the n-th time the place is
// reached. Inert unless FAULT_POINTS is configured (config.ts parses it, server.ts arms it at start):
// an unarmed point is one map look-up and does nothing.
import fs from 'node:fs';

export const FAULT_POINT_NAMES = [
  /** The Idempotency-Key row is claimed, before the work. */
  'idempotency.after_claim',
  /** The work, its audit row and stored answer are written, before the transaction commits. */
  'request.before_commit',
  /** The request's transaction committed, before the answer is sent. */
  'request.after_commit',
  /** The insurer answered a submission, before the answer is recorded. */
  'claim.after_insurer_answer',
  /** A webhook receiver answered 2xx, before the delivery is recorded. */
  'webhook.after_2xx',
] as const;

export type FaultPointName = (typeof FAULT_POINT_NAMES)[number];

/** Which point kills the process, and on which time it is reached (1 = the first). */
export type FaultPoints = ReadonlyMap<FaultPointName, number>;

let armed: FaultPoints = new Map();
const reached = new Map<FaultPointName, number>();

export function armFaultPoints(points: FaultPoints): void {
  armed = points;
  reached.clear();
}

export function faultPoint(name: FaultPointName): void {
  const killAt = armed.get(name);
  if (killAt === undefined) return;
  const count = (reached.get(name) ?? 0) + 1;
  reached.set(name, count);
  if (count < killAt) return;
  fs.writeSync(2, `fault point ${name} reached (time ${count}): killing the process\n`);
  process.kill(process.pid, 'SIGKILL');
  // The signal is on its way; make sure not one more statement of the caller runs meanwhile.
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
}
