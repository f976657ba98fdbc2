// Owns what a kind of background job is: its name, the TypeBox schema of its payload and the lane
// whose slots run it. A payload is checked when the job is enqueued (a wrong one is a bug in the
// caller: the transaction fails) and again when it runs (a row written by an older version, or by
// hand, that no longer fits is failed for good instead of being retried).
import type { Static, TSchema } from 'typebox';
import { Check, Errors } from 'typebox/value';
import type { JobLane } from './lanes.ts';

export interface JobKind<S extends TSchema = TSchema> {
  readonly name: string;
  readonly payload: S;
  /** The lane whose slots run it (src/jobs/lanes.ts). */
  readonly lane: JobLane;
}

export function jobKind<S extends TSchema>(name: string, payload: S, lane: JobLane = 'claims'): JobKind<S> {
  return { name, payload, lane };
}

/** A payload that does not fit its kind's schema; the worker fails such a job without retrying. */
export class JobPayloadError extends Error {}

/** The payload checked against its kind's schema, typed. */
export function checkedPayload<S extends TSchema>(kind: JobKind<S>, payload: unknown): Static<S> {
  if (!Check(kind.payload, payload)) {
    const first = [...Errors(kind.payload, payload)][0];
    throw new JobPayloadError(
      `payload of ${kind.name} does not fit its schema${first ? `: ${first.instancePath || '/'} ${first.message}` : ''}`,
    );
  }
  return payload as Static<S>;
}
