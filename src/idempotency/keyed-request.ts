// Owns how a request runs under an Idempotency-Key, one mechanism for the public API and the admin
// API: the header (its schema, required or optional), the request's fingerprint, the in-process
// register of running keys, and the one transaction that takes the key's lock first, replays a stored
// answer (or refuses a key reused for another request), else runs the work and stores its answer with
// it. Only committed work is stored: a success, or a refusal the service's own rules decide (404,
// 409 duplicate, 422), whose partial work is undone first. A success that holds a secret shown once
// (an API key, a webhook signing secret) is stored sealed, so the database never holds it readable
// (src/idempotency/idempotency-store.ts). It never authenticates nor decides who holds a key; its
// callers do (src/api/api-route.ts, src/api/admin-route.ts).
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type TSchema, Type } from 'typebox';
import { forgetLateTextsSince, lateTextCount, lateTextFinisher } from '../platform/db/late-text.ts';
import { type HoldsLock, type Trx, withSavepoint } from '../platform/db/transaction.ts';
import { faultPoint } from '../platform/fault-points.ts';
import { AppError, invalidParameters, problemOf } from '../platform/http/errors.ts';
import type { SecretBox } from '../platform/secret-box.ts';
import {
  type KeyScope,
  keyLockName,
  openAnswer,
  type StoredAnswer,
  sealAnswer,
  storeAnswer,
  storedAnswer,
} from './idempotency-store.ts';
import type { InFlightRequests } from './in-flight.ts';

export const IDEMPOTENCY_HEADER = 'idempotency-key';
const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/** Whether an operation requires an Idempotency-Key, accepts one, or ignores it. */
export type KeyUse = 'required' | 'optional' | 'none';

/** The Idempotency-Key property of an operation's header schema (none when it ignores the header). */
export function idempotencyKeyHeader(use: KeyUse): Record<string, TSchema> {
  if (use === 'none') return {};
  const schema = Type.String({
    minLength: 1,
    maxLength: MAX_IDEMPOTENCY_KEY_LENGTH,
    description: `${use === 'required' ? 'Required' : 'Optional'}. Unique per intended request; a retry with the same key and body replays the first answer (kept 24 hours).`,
  });
  return { [IDEMPOTENCY_HEADER]: use === 'required' ? schema : Type.Optional(schema) };
}

export function headerValue(raw: string | string[] | undefined): string | undefined {
  return Array.isArray(raw) ? raw[0] : raw;
}

/** The request's Idempotency-Key: refused with 400 when missing where required, or malformed. */
export function readIdempotencyKey(request: FastifyRequest, use: KeyUse): string | undefined {
  if (use === 'none') return undefined;
  const raw = request.headers[IDEMPOTENCY_HEADER];
  const value = headerValue(raw);
  if (value === undefined || value === '') {
    if (use === 'optional') return undefined;
    throw invalidParameters([
      {
        field: 'Idempotency-Key',
        code: 'required',
        message: 'Idempotency-Key is required on this operation',
      },
    ]);
  }
  if (value.length > MAX_IDEMPOTENCY_KEY_LENGTH || Array.isArray(raw)) {
    throw invalidParameters([
      {
        field: 'Idempotency-Key',
        code: 'invalid',
        message: 'Idempotency-Key must be one value of at most 255 characters',
      },
    ]);
  }
  return value;
}

/** SHA-256 of the method, the URL (path and query) and the body as canonical JSON. */
function fingerprintOf(request: FastifyRequest): string {
  return createHash('sha256')
    .update(`${request.method} ${request.url}\n${canonicalize(request.body ?? null) ?? 'null'}`)
    .digest('hex');
}

/** Seconds a repeat of a running request is told to wait: most requests finish well within it. */
export const KEY_RUNNING_RETRY_AFTER_SECONDS = 1;

/** The 409 for a request whose Idempotency-Key another request, here or elsewhere, is running. */
export function keyStillRunning(): AppError {
  return new AppError(
    'conflict',
    'A request with this Idempotency-Key is still running. Wait the seconds in Retry-After and retry with the same key.',
    { headers: { 'retry-after': String(KEY_RUNNING_RETRY_AFTER_SECONDS) } },
  );
}

/** Refusals decided by the service's own rules after the work ran: stored and replayed like a success. */
function isStoredRefusal(error: AppError): boolean {
  return error.status === 404 || error.code === 'duplicate' || error.status === 422;
}

/** How the answer written with the work came about. */
export type Outcome = { kind: 'succeeded' } | { kind: 'replayed' } | { kind: 'refused'; error: AppError };

export interface KeyedRequest {
  request: FastifyRequest;
  /** The key and its holder, when the request carries one. */
  scope: KeyScope | undefined;
  inFlight: InFlightRequests;
  errorsDocUrl: string;
  /** A change, not a read: a refusal's partial work is undone, fault points mark its commit. */
  changes: boolean;
  /** A refusal is answered from a committed transaction (its audit row); else it is only thrown. */
  keepsRefusals: boolean;
  /** Opens the request's one transaction; `lockName` (with a key) is tried in its first statement. */
  transaction<T>(lockName: string | undefined, fn: (trx: Trx, holdsKey: HoldsLock) => Promise<T>): Promise<T>;
  /** The work: its success answer. A refusal is thrown as an AppError. */
  perform(trx: Trx): Promise<StoredAnswer>;
  /** Written in the same transaction as each answer (the audit row). */
  record(trx: Trx, answer: StoredAnswer, outcome: Outcome): Promise<void>;
  /**
   * The success answer holds a secret shown once: it is stored sealed with `box` and opened for a
   * replay. With no box (PostgreSQL without SECRET_ENCRYPTION_KEY), or one that cannot open it, the
   * secret is not kept: a repeat is answered 422 `unprocessable` (secretNotKept) instead.
   */
  secretAnswer?: { box: SecretBox | undefined } | undefined;
}

/** The refusal a repeat gets when its first answer held a secret that was not kept. */
function secretNotKept(): AppError {
  return new AppError(
    'unprocessable',
    'The first request with this Idempotency-Key succeeded, but its answer held a secret shown once, which is kept for a repeat only encrypted with SECRET_ENCRYPTION_KEY, and none is set (or it has changed). What it made is listed without its secret: if the secret is lost, revoke it or rotate it, and use a new Idempotency-Key for a new request.',
  );
}

/** Runs a request as the module header says; the answer to send, and whether it is a replay. */
export async function runKeyed(keyed: KeyedRequest): Promise<{ answer: StoredAnswer; replayed: boolean }> {
  const { request, scope } = keyed;
  const fingerprint = scope ? fingerprintOf(request) : '';
  const work = async (trx: Trx, holdsKey: HoldsLock, undoable: boolean) =>
    (await replayStored(keyed, trx, holdsKey, fingerprint)) ??
    (await performOnce(keyed, trx, undoable, fingerprint));

  const authorization = request.headers.authorization;
  const lockName = scope && keyLockName(scope);
  const releaseKey = lockName ? keyed.inFlight.claim(lockName) : undefined;
  if (lockName && !releaseKey) throw keyStillRunning();
  const leaveInFlight = scope && authorization ? keyed.inFlight.add(authorization, scope.key) : undefined;
  const attempt = (undoable: boolean) =>
    keyed.transaction(scope && keyLockName(scope), (trx, holdsKey) => work(trx, holdsKey, undoable));
  try {
    // Changes run first without a savepoint. A refusal the service decides is stored with its audit
    // row, but its partial work must not be: then the whole transaction is rolled back and the
    // request runs once more with the work inside a savepoint, which that refusal rolls back to.
    const { finish, ...result } = await attempt(false).catch((error: unknown) => {
      if (error instanceof RunAgainUndoable) return attempt(true);
      throw error;
    });
    if (keyed.changes && !result.replayed) faultPoint('request.after_commit');
    // The answer may name a text the transaction gave with its COMMIT (a new invoice's number).
    if (finish) result.answer = { ...result.answer, body: await finish(result.answer.body) };
    return result;
  } finally {
    leaveInFlight?.();
    releaseKey?.();
  }
}

/** A refusal as the answer stored and sent for it. */
function refusalAnswer(keyed: KeyedRequest, error: AppError): StoredAnswer {
  return {
    status: error.status,
    headers: {},
    body: JSON.stringify(problemOf(error, keyed.request.id, keyed.errorsDocUrl)),
  };
}

/** With a key: the answer stored for it, replayed (undefined when there is none yet). */
async function replayStored(
  keyed: KeyedRequest,
  trx: Trx,
  holdsKey: HoldsLock,
  fingerprint: string,
): Promise<{ answer: StoredAnswer; replayed: true; finish?: undefined } | undefined> {
  const { request, scope } = keyed;
  if (!scope) return undefined;
  // Read with the frame that tries the key's lock, in its round trip; used only once it is held.
  const stored = await storedAnswer(trx, scope);
  if (!(await holdsKey())) throw keyStillRunning();
  faultPoint('idempotency.after_claim');
  if (!stored) return undefined;
  if (stored.fingerprint !== fingerprint) {
    throw new AppError(
      'idempotency_key_reused',
      'This Idempotency-Key was first used with a different method, path or body. Use a new key for a new request.',
    );
  }
  const answer = keyed.secretAnswer
    ? (openAnswer(stored.answer, keyed.secretAnswer.box) ?? refusalAnswer(keyed, secretNotKept()))
    : stored.answer;
  await keyed.record(trx, answer, { kind: 'replayed' });
  // A replayed Problem names this request, so requestId keeps matching X-Request-Id.
  const body = answer.status >= 400 ? replaceRequestId(answer.body, request.id) : answer.body;
  return { answer: { ...answer, body }, replayed: true };
}

/** The work itself, its answer (or stored refusal) recorded and, with a key, stored. */
async function performOnce(keyed: KeyedRequest, trx: Trx, undoable: boolean, fingerprint: string) {
  let answer: StoredAnswer;
  let outcome: Outcome;
  const lateTextsBefore = lateTextCount(trx);
  try {
    answer = undoable ? await withSavepoint(trx, () => keyed.perform(trx)) : await keyed.perform(trx);
    outcome = { kind: 'succeeded' };
  } catch (error) {
    if (!(error instanceof AppError) || !isStoredRefusal(error) || !keyed.keepsRefusals) throw error;
    if (!undoable && keyed.changes) throw new RunAgainUndoable();
    forgetLateTextsSince(trx, lateTextsBefore);
    answer = refusalAnswer(keyed, error);
    outcome = { kind: 'refused', error };
  }
  await keyed.record(trx, answer, outcome);
  if (keyed.scope) {
    const kept = keyed.secretAnswer
      ? (sealAnswer(answer, keyed.secretAnswer.box) ?? refusalAnswer(keyed, secretNotKept()))
      : answer;
    await storeAnswer(trx, keyed.scope, fingerprint, kept);
  }
  if (keyed.changes) faultPoint('request.before_commit');
  return { answer, replayed: false, finish: lateTextFinisher(trx) };
}

/** A refusal came from work run without a savepoint; the request runs again with one. */
class RunAgainUndoable extends Error {}

function replaceRequestId(body: string, requestId: string): string {
  try {
    const parsed = JSON.parse(body) as Record<string, unknown>;
    if (typeof parsed.requestId === 'string') parsed.requestId = requestId;
    return JSON.stringify(parsed);
  } catch {
    return body;
  }
}

/** A success's answer: the body as the route's schema writes it, and Location (absolute) when given. */
export function successAnswer(
  reply: FastifyReply,
  status: number,
  body: unknown,
  location: string | undefined,
): StoredAnswer {
  reply.code(status);
  return { status, headers: location ? { location } : {}, body: String(reply.serialize(body)) };
}

export function sendAnswer(reply: FastifyReply, answer: StoredAnswer, replayed: boolean): FastifyReply {
  reply.code(answer.status).headers(answer.headers).type('application/json; charset=utf-8');
  if (replayed) reply.header('idempotent-replayed', 'true');
  return reply.send(answer.body);
}
