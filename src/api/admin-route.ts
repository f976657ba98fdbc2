// Owns how an operator (admin API) operation is declared and run: bearer ADMIN_TOKEN, the handler in
// one operator transaction that sees every practice, and an audit row in the practice it touched.
// Every POST takes an Idempotency-Key (those that move money require it), held by the operator and
// run by the public API's own mechanism (src/idempotency/keyed-request.ts); the stored answer of one
// that answers a secret shown once is sealed with the configured SecretBox (answerHoldsSecret).
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type Static, type TSchema, Type } from 'typebox';
import {
  headerValue,
  IDEMPOTENCY_HEADER,
  idempotencyKeyHeader,
  type KeyUse,
  keyStillRunning,
  readIdempotencyKey,
  runKeyed,
  sendAnswer,
  successAnswer,
} from '../idempotency/keyed-request.ts';
import { asOperator, asOperatorHolding, holdsNoLock, type Trx } from '../platform/db/transaction.ts';
import { AppError } from '../platform/http/errors.ts';
import { BODY_OPTIONAL, ProblemSchema } from '../platform/http/schema.ts';
import { nullBodyRefused } from '../platform/http/validation.ts';
import { adminKeyUse } from './admin-key-use.ts';
import { type AnswerFile, afterCommitOf, sendAfterCommit, successResponse } from './answer-file.ts';
import type { Deps } from './deps.ts';

export interface AdminContext<P, Q, B> {
  trx: Trx;
  deps: Deps;
  params: P;
  query: Q;
  body: B;
  requestId: string;
  now: Date;
  /**
   * Who is calling, as the admin API knows it: `operator:` and the first 12 hex digits of the admin
   * token's SHA-256 that let the request in (each token of ADMIN_TOKENS is an identity of its own).
   * Never the token itself.
   */
  operator: string;
}

/**
 * What an operation answers: a body, or (a document too large to hold, such as a patient's whole
 * record) `stream`, the body's JSON text written piece by piece once the work's transaction committed.
 */
export type AdminResult<R> = AdminAnswer &
  ({ body: R; stream?: undefined } | { body?: undefined; stream: () => AsyncIterable<string> });

interface AdminAnswer {
  /** The practice the operation touched, for its audit log. */
  audit?: {
    practiceId: string;
    resourceType: string;
    resourceId: string;
    /** Why, in the operator's words, when the operation asks for it (closing an invoice). */
    reason?: string;
    /** The patient the operation read or changed: a read naming a patient is audited too. */
    patientId?: string;
  };
  /** Path (under the service's base address) of the record created, where one can be read. */
  location?: string;
  /** A document answered instead of JSON (the route declares `produces`), drawn after the commit. */
  file?: AnswerFile;
}

/**
 * What the operator's CLI calls the operation (`practice-billing admin <resource> <action>`). Only the
 * name is said here: the CLI reads its positional id, its flags, their kinds, whether they are required
 * and their help from the route's path and schemas (src/cli/command.ts).
 */
export interface AdminCliName {
  /** `<resource> <action>`, e.g. `clients create`. */
  command: `${string} ${string}`;
  /**
   * A flag named otherwise than its field's own name (a field `allowedIps` is `--allowed-ips`, one
   * ending in Id drops it: `invoiceId` is `--invoice`), by the field's dotted path: `{ url: 'webhook-url' }`.
   */
  flags?: Record<string, string>;
}

export interface AdminRouteSpec<P extends TSchema, Q extends TSchema, B extends TSchema, R extends TSchema> {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: string;
  operationId: string;
  summary: string;
  description?: string;
  params?: P;
  querystring?: Q;
  body?: B;
  /** The body may be left out entirely (every field of it is optional): no body counts as `{}`. */
  bodyOptional?: boolean;
  successStatus: number;
  response: R;
  /** The content type of a success that is a document (AdminResult.file), not JSON; `response` describes it. */
  produces?: string;
  /**
   * The operation moves money (a payment, a write-off): an Idempotency-Key is required, so that an
   * operator's retry can never count it twice. Every other POST accepts one.
   */
  movesMoney?: boolean;
  /**
   * The success answer holds a secret shown once (an API key, a webhook signing secret): the answer
   * kept for an Idempotency-Key's replay is stored sealed with SECRET_ENCRYPTION_KEY (deps.secrets),
   * never readable in the database; with no such key it is not kept, and a repeat is refused with 422.
   */
  answerHoldsSecret?: boolean;
  handler: (ctx: AdminContext<Static<P>, Static<Q>, Static<B>>) => Promise<AdminResult<Static<R>>>;
  cli: AdminCliName;
}

// biome-ignore lint/suspicious/noExplicitAny: a heterogeneous list of routes, each typed at declaration
export type AnyAdminRoute = AdminRouteSpec<any, any, any, any>;

export function defineAdminRoute<P extends TSchema, Q extends TSchema, B extends TSchema, R extends TSchema>(
  spec: AdminRouteSpec<P, Q, B, R>,
): AdminRouteSpec<P, Q, B, R> {
  return spec;
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/** Who each admin request is, by the token that let it in. */
const operators = new WeakMap<FastifyRequest, string>();

export function registerAdminScope(
  app: FastifyInstance,
  deps: Deps,
  adminTokens: string | readonly string[],
  routes: AnyAdminRoute[],
) {
  // Several tokens may be valid at once (ADMIN_TOKENS): each compared in constant time, every one tried.
  const expected = (typeof adminTokens === 'string' ? [adminTokens] : adminTokens).map(digest);
  app.addHook('onRequest', async (request: FastifyRequest, reply) => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
    const given = match ? digest(match[1]!) : undefined;
    const matched = given ? expected.filter((e) => timingSafeEqual(given, e)) : [];
    if (matched.length === 0) {
      reply.header('www-authenticate', 'Bearer');
      throw new AppError('unauthenticated', 'The admin API needs Authorization: Bearer <ADMIN_TOKEN>.');
    }
    operators.set(request, `operator:${matched[0]!.toString('hex').slice(0, 12)}`);
    // A repeat of a request still running here is answered at once, as on the public API: with the
    // embedded database it would otherwise wait for the one connection the first request holds.
    const key = headerValue(request.headers[IDEMPOTENCY_HEADER]);
    if (request.method === 'POST' && deps.inFlight.isRunning(request.headers.authorization, key)) {
      throw keyStillRunning();
    }
  });
  for (const spec of routes) registerAdminRoute(app, deps, spec);
}

function registerAdminRoute(app: FastifyInstance, deps: Deps, spec: AnyAdminRoute): void {
  const keyUse = adminKeyUse(spec);
  app.route({
    method: spec.method,
    url: spec.url,
    schema: adminRouteSchema(spec, keyUse),
    ...(spec.body
      ? {
          preValidation: async (request: FastifyRequest) => {
            if (spec.bodyOptional && (request.body === undefined || request.body === null)) request.body = {};
            else if (request.body === null) throw nullBodyRefused();
          },
        }
      : {}),
    handler: (request, reply) => runAdminHandler(deps, spec, keyUse, request, reply),
  });
}

/** The operation's schema: what it takes and answers, as validation and the OpenAPI document read it. */
function adminRouteSchema(spec: AnyAdminRoute, keyUse: KeyUse) {
  return {
    operationId: spec.operationId,
    summary: spec.summary,
    ...(spec.description ? { description: spec.description } : {}),
    tags: ['Admin'],
    security: [{ adminToken: [] }],
    ...(keyUse === 'none'
      ? {}
      : { headers: Type.Object(idempotencyKeyHeader(keyUse), { additionalProperties: true }) }),
    ...(spec.params ? { params: spec.params } : {}),
    ...(spec.querystring ? { querystring: spec.querystring } : {}),
    ...(spec.body ? { body: spec.body } : {}),
    ...(spec.bodyOptional && spec.body ? { [BODY_OPTIONAL]: true } : {}),
    response: {
      [spec.successStatus]: successResponse(spec.response, spec.produces),
      '4xx': ProblemSchema,
      '5xx': ProblemSchema,
    },
  };
}

/**
 * Runs an operation: its work under its Idempotency-Key in one operator transaction with its audit row
 * (runKeyed), the practice's remembered API keys dropped when it changed something, and the answer.
 */
async function runAdminHandler(
  deps: Deps,
  spec: AnyAdminRoute,
  keyUse: KeyUse,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const key = readIdempotencyKey(request, keyUse);
  let done: AdminResult<unknown> | undefined;
  const { answer, replayed } = await runKeyed({
    request,
    scope: key === undefined ? undefined : { holder: 'operator', key },
    inFlight: deps.inFlight,
    errorsDocUrl: deps.config.errorsDocUrl,
    changes: spec.method !== 'GET',
    // Without a key a refusal leaves nothing to keep (the operator's refusals are not audited).
    keepsRefusals: key !== undefined,
    secretAnswer: spec.answerHoldsSecret ? { box: deps.secrets } : undefined,
    transaction: (lockName, fn) =>
      lockName
        ? asOperatorHolding(deps.db, lockName, fn)
        : asOperator(deps.db, (trx) => fn(trx, holdsNoLock)),
    perform: async (trx) => {
      done = await spec.handler(adminContextOf(trx, deps, request));
      if (afterCommitOf(done)) return { status: spec.successStatus, headers: {}, body: '' };
      const location = done.location && `${deps.config.publicBaseUrl}${done.location}`;
      return successAnswer(reply, spec.successStatus, done.body, location);
    },
    // What the operator changed is audited in the practice it touched; a replay changes nothing.
    record: async (trx, _answer, outcome) => {
      if (outcome.kind !== 'succeeded' || !done?.audit) return;
      if (spec.method === 'GET' && !done.audit.patientId) return;
      await auditChange(deps, spec, request, trx, done.audit, key);
    },
  });
  // A change may concern who may call: the practice's remembered keys go before the answer does.
  // (The writing transaction's NOTIFY says so too, to every process, but here it could arrive
  // after the caller's next request.)
  if (spec.method !== 'GET' && done && !replayed) {
    if (done.audit) deps.keyCache.forgetPractice(done.audit.practiceId);
    else deps.keyCache.flush();
  }
  const later = done && afterCommitOf(done);
  if (later && answer.status === spec.successStatus) {
    return sendAfterCommit(reply, answer.status, answer.headers, later);
  }
  return sendAnswer(reply, answer, replayed);
}

function adminContextOf(
  trx: Trx,
  deps: Deps,
  request: FastifyRequest,
): AdminContext<unknown, unknown, unknown> {
  return {
    trx,
    deps,
    params: request.params,
    query: request.query,
    body: request.body,
    requestId: request.id,
    now: deps.clock.now(),
    operator: operators.get(request) ?? 'operator:unknown',
  };
}

/** The audit row of what the operator did, in the practice it touched, in the operation's transaction. */
async function auditChange(
  deps: Deps,
  spec: AnyAdminRoute,
  request: FastifyRequest,
  trx: Trx,
  audit: NonNullable<AdminAnswer['audit']>,
  key: string | undefined,
): Promise<void> {
  await deps.audit.write(trx, {
    practiceId: audit.practiceId,
    actor: 'operator',
    clientId: null,
    keyId: null,
    performerId: null,
    sourceIp: request.ip,
    method: request.method,
    route: `/admin/v1${spec.url}`,
    status: spec.successStatus,
    outcome: 'succeeded',
    reason: audit.reason ?? null,
    resourceType: audit.resourceType,
    resourceId: audit.resourceId,
    patientId: audit.patientId ?? null,
    requestId: request.id,
    idempotencyKey: key ?? null,
  });
}
