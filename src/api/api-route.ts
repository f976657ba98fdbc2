// Owns how a public API operation is declared and run. A route is declared once (schemas, permission,
// whether it creates) and its handler receives a transaction already scoped to the caller's practice.
// Around the handler this module runs, in order: Idempotency-Key claim or replay, the work in one
// transaction with its audit row and stored answer, and release of the claim if nothing committed.
import type { ErrorObject, ValidateFunction } from 'ajv';
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifySchemaCompiler } from 'fastify';
import type { CompiledQuery } from 'kysely';
import { type Static, type TSchema, Type } from 'typebox';
import type { AuthContext } from '../auth/authenticate.ts';
import { practitionerExists } from '../auth/performer-store.ts';
import type { Permission } from '../auth/permissions.ts';
import type { KeyScope, StoredAnswer } from '../idempotency/idempotency-store.ts';
import {
  headerValue,
  idempotencyKeyHeader,
  type KeyUse,
  type Outcome,
  readIdempotencyKey,
  runKeyed,
  sendAnswer,
  successAnswer,
} from '../idempotency/keyed-request.ts';
import type { ReadRecord } from '../platform/audit-log.ts';
import {
  type HoldsLock,
  holdsNoLock,
  inPractice,
  inPracticeHolding,
  type TransactionPlans,
  type Trx,
} from '../platform/db/transaction.ts';
import {
  AppError,
  ERROR_CODES,
  type FieldError,
  fieldErrors,
  invalidParameters,
} from '../platform/http/errors.ts';
import {
  mergeFieldErrors,
  type Partly,
  type WrongField,
  withoutWrongFields,
  wrongFieldsOf,
} from '../platform/http/field-rules.ts';
import { BODY_OPTIONAL, ProblemSchema } from '../platform/http/schema.ts';
import { nullBodyRefused, toFieldErrors, validatorCompiler } from '../platform/http/validation.ts';
import { idPattern } from '../platform/ids.ts';
import {
  type AfterCommit,
  type AnswerFile,
  afterCommitOf,
  sendAfterCommit,
  successResponse,
} from './answer-file.ts';
import type { Deps } from './deps.ts';
import { identityOf } from './request-state.ts';

export interface HandlerContext<P, Q, B> {
  trx: Trx;
  deps: Deps;
  auth: AuthContext;
  practiceId: string;
  params: P;
  query: Q;
  body: B;
  requestId: string;
  performerId: string | null;
  now: Date;
  /**
   * Runs `read` as the work's last statement, the request's audit row written by that same statement
   * from what it finds and the COMMIT sent behind it (AuditLog.recordRead): a read in one round trip.
   * For a read whose answer follows from its rows alone: nothing may run after it, and a handler whose
   * rule is `not_found` answers 404 not_found (notFound) when it finds no row.
   */
  readRecorded<R>(read: CompiledQuery<R>, rule: ReadRule): Promise<R[]>;
}

/** HandlerContext.readRecorded, for the domain function a handler hands it to. */
export type ReadRecorded = HandlerContext<unknown, unknown, unknown>['readRecorded'];

/**
 * How a read that records itself reads what it finds (see HandlerContext.readRecorded): whether
 * finding nothing is answered 404 not_found or is a success (an empty list), and ReadRecord's columns.
 */
export type ReadRule = { none: 'not_found' | 'empty' } & Pick<ReadRecord, 'patientColumn' | 'orderBy'>;

/** What a route's field rules get: the body without the fields its schema refused, and those fields. */
export interface RuleContext<P, Q, B> extends HandlerContext<P, Q, Partly<B>> {
  wrong: WrongField;
}

/**
 * What a handler answers: a body, or (for a document too large to hold, such as a patient's whole
 * record) `stream`, the body's JSON text written piece by piece once the work's transaction has
 * committed, each piece read as the caller takes the previous ones.
 */
export type HandlerResult<R> = HandlerAnswer &
  ({ body: R; stream?: undefined } | { body?: undefined; stream: () => AsyncIterable<string> });

interface HandlerAnswer {
  /** Path of the created record, below the public base URL (for Location). */
  location?: string;
  resource?: { id: string; patientId?: string | null };
  /** Why, in the caller's words, when the operation asks for it (closing an invoice): the audit row's reason. */
  reason?: string;
  /**
   * A document answered instead of JSON (the route declares `produces`): drawn after the transaction
   * has committed, from what the handler read in it, so no connection waits on the drawing.
   */
  file?: AnswerFile;
}

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface ApiRouteSpec<P extends TSchema, Q extends TSchema, B extends TSchema, R extends TSchema> {
  method: Method;
  /** Path below /api/v1, Fastify syntax (`/patients/:patientId`). */
  url: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  permission: Permission;
  /** Further permissions that depend on the body (checked before any work). */
  extraPermissions?: (body: Static<B>) => Permission[];
  /** A creating operation: Idempotency-Key required, answers replayed. */
  creates?: boolean;
  /**
   * An action that is not a creation but that a client may retry: an Idempotency-Key is honoured when
   * sent (answers replayed as on creating operations) and not required.
   */
  acceptsIdempotencyKey?: boolean;
  resourceType: string;
  params?: P;
  querystring?: Q;
  body?: B;
  /** The whole body may be left out; no body then counts as `{}`. */
  bodyOptional?: boolean;
  /** The work's statements are planned once for any values (TransactionPlans in transaction.ts). */
  genericPlans?: boolean;
  /**
   * The operation queues claim work (a submission, a reversal): refused at once, before any of its
   * work, while the claims lane's backlog is past LOAD_SHED_CLAIM_BACKLOG_MS
   * (src/platform/http/load-shedding.ts). A bill with submitClaim is not such an operation: it creates
   * its invoice and skips the claim instead (LoadShedder.claimWorkHeldBack).
   */
  queuesClaimWork?: boolean;
  /** Content types accepted for the body besides application/json. */
  consumes?: string[];
  /** The content type of a success that is a document (HandlerResult.file), not JSON; `response` describes it. */
  produces?: string;
  successStatus: number;
  response: R;
  /** Problem statuses this operation can answer, for the OpenAPI document. */
  errorStatuses: number[];
  /**
   * The service's own checks of the body's fields, for a body the schema refused: they judge the
   * fields the schema let through, so one 422 names every wrong field. The handler runs the same
   * checks itself on a body the schema accepts. Throwing a refusal other than wrong fields (no such
   * record) means there is nothing more to check: the schema's errors are answered alone.
   */
  fieldRules?: (ctx: RuleContext<Static<P>, Static<Q>, Static<B>>) => Promise<FieldError[]>;
  handler: (ctx: HandlerContext<Static<P>, Static<Q>, Static<B>>) => Promise<HandlerResult<Static<R>>>;
}

// biome-ignore lint/suspicious/noExplicitAny: a heterogeneous list of routes, each typed at declaration
export type AnyApiRoute = ApiRouteSpec<any, any, any, any>;

/** Whether the operation requires an Idempotency-Key, honours one when sent, or ignores it. */
export function keyUseOf(spec: Pick<AnyApiRoute, 'creates' | 'acceptsIdempotencyKey'>): KeyUse {
  if (spec.creates) return 'required';
  return spec.acceptsIdempotencyKey ? 'optional' : 'none';
}

export function defineApiRoute<P extends TSchema, Q extends TSchema, B extends TSchema, R extends TSchema>(
  spec: ApiRouteSpec<P, Q, B, R>,
): ApiRouteSpec<P, Q, B, R> {
  return spec;
}

const PERFORMER_HEADER = 'x-service-performer';

function readPerformer(request: FastifyRequest): string | null {
  const value = headerValue(request.headers[PERFORMER_HEADER]);
  if (value === undefined || value === '') return null;
  if (value.length > 100) {
    throw invalidParameters([
      {
        field: 'X-Service-Performer',
        code: 'invalid',
        message: 'X-Service-Performer must be a practitioner id',
      },
    ]);
  }
  return value;
}

async function assertPerformerExists(trx: Trx, practiceId: string, performerId: string): Promise<void> {
  if (!(await practitionerExists(trx, practiceId, performerId))) {
    throw invalidParameters([
      {
        field: 'X-Service-Performer',
        code: 'invalid',
        message: 'X-Service-Performer must be the id of a practitioner of this practice',
      },
    ]);
  }
}

export function registerApiRoute(app: FastifyInstance, deps: Deps, spec: AnyApiRoute): void {
  const bodyCheck = bodyCheckOf(spec);
  app.route({
    method: spec.method,
    url: spec.url,
    schema: apiRouteSchema(spec),
    ...(bodyCheck
      ? {
          validatorCompiler: (route: Parameters<FastifySchemaCompiler<unknown>>[0]) =>
            route.httpPart === 'body' ? () => true : validatorCompiler(route),
        }
      : {}),
    config: {
      permission: spec.permission,
      keyUse: keyUseOf(spec),
      resourceType: spec.resourceType,
      queuesClaimWork: spec.queuesClaimWork === true,
    },
    // Route hooks only where the route needs them: each is a step of every request.
    preValidation:
      spec.bodyOptional || spec.body
        ? [
            async (request) => {
              if (spec.bodyOptional && (request.body === undefined || request.body === null))
                request.body = {};
              else if (spec.body && request.body === null) throw nullBodyRefused();
            },
          ]
        : [],
    preHandler: spec.extraPermissions
      ? [async (request) => refuseMissingExtraPermissions(spec, request.auth, request.body)]
      : [],
    handler: (request, reply) => runApiHandler(deps, spec, request, reply, bodyCheck),
  });
}

/**
 * The validator of a body with field rules: such a route checks its body in the handler, after
 * authentication, params, query and headers, so that the schema's errors and the rules' errors make
 * one answer. Undefined for any other route, whose body Fastify validates.
 */
function bodyCheckOf(spec: AnyApiRoute): ValidateFunction | undefined {
  if (!spec.fieldRules || !spec.body) return undefined;
  return validatorCompiler({
    schema: spec.body,
    method: spec.method,
    url: spec.url,
    httpPart: 'body',
  }) as ValidateFunction;
}

/** The route's schema: what it takes and answers, as validation and the OpenAPI document read it. */
function apiRouteSchema(spec: AnyApiRoute) {
  // Every operation reads X-Service-Performer, and a wrong one is 400 invalid_request on any of them.
  const problemStatuses = [...new Set([400, ...spec.errorStatuses])];
  const problemResponses = Object.fromEntries(problemStatuses.map((s) => [s, ProblemSchema]));
  const headers = Type.Object(
    {
      ...idempotencyKeyHeader(keyUseOf(spec)),
      [PERFORMER_HEADER]: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 100,
          pattern: idPattern('practitioner'),
          description:
            'Optional: id of a practitioner of this practice (`prt_...`) acting, recorded in the audit trail.',
        }),
      ),
    },
    { additionalProperties: true },
  );
  return {
    operationId: spec.operationId,
    summary: spec.summary,
    ...(spec.description ? { description: spec.description } : {}),
    tags: [spec.tag],
    security: [{ apiKey: [] }],
    headers,
    ...(spec.params ? { params: spec.params } : {}),
    ...(spec.querystring ? { querystring: spec.querystring } : {}),
    ...(spec.body ? { body: spec.body } : {}),
    ...(spec.consumes ? { consumes: ['application/json', ...spec.consumes] } : {}),
    response: {
      [spec.successStatus]: successResponse(spec.response, spec.produces),
      ...problemResponses,
    },
    'x-permission': spec.permission,
    ...(spec.bodyOptional && spec.body ? { [BODY_OPTIONAL]: true } : {}),
  };
}

/** Refuses a request whose body needs permissions (the route's extraPermissions) its client lacks. */
function refuseMissingExtraPermissions(spec: AnyApiRoute, auth: AuthContext | null, body: unknown): void {
  if (!auth || !spec.extraPermissions) return;
  const missing = spec.extraPermissions(body).filter((p) => !auth.permissions.has(p));
  if (missing.length > 0) {
    throw new AppError(
      'forbidden',
      `This client lacks the permission ${missing.join(', ')} that this request needs.`,
    );
  }
}

function contextOf(
  trx: Trx,
  deps: Deps,
  spec: AnyApiRoute,
  auth: AuthContext,
  request: FastifyRequest,
  performerId: string | null,
): HandlerContext<unknown, unknown, unknown> {
  return {
    trx,
    deps,
    auth,
    practiceId: auth.practice.id,
    params: request.params,
    query: request.query,
    body: request.body,
    requestId: request.id,
    performerId,
    now: deps.clock.now(),
    readRecorded: (read, rule) => readRecorded(deps, spec, request, auth, trx, read, rule),
  };
}

/** HandlerContext.readRecorded: the audit row for both outcomes, then the read that writes one of them. */
async function readRecorded<R>(
  deps: Deps,
  spec: AnyApiRoute,
  request: FastifyRequest,
  auth: AuthContext,
  trx: Trx,
  read: CompiledQuery<R>,
  rule: ReadRule,
): Promise<R[]> {
  const audit = request.auditState;
  const found = audit.entryOf(request, identityOf(auth), spec.successStatus);
  const none =
    rule.none === 'not_found'
      ? { ...found, status: ERROR_CODES.not_found.status, outcome: 'refused', reason: 'not_found' }
      : found;
  const { none: _whenNone, ...columns } = rule;
  const rows = await deps.audit.recordRead(trx, read, { found, none, ...columns });
  audit.written();
  return rows;
}

/**
 * Refuses a body its schema found wrong, naming also the fields the route's rules find wrong among
 * the rest. Answered before any work like any schema refusal: the rules run in a transaction that
 * is rolled back, no Idempotency-Key is claimed and the answer is not stored for replay.
 */
async function refuseWrongFields(
  deps: Deps,
  spec: AnyApiRoute,
  request: FastifyRequest,
  auth: AuthContext,
  performerId: string | null,
  schemaErrors: ErrorObject[],
): Promise<never> {
  const fromSchema = toFieldErrors(schemaErrors, 'body');
  const fieldRules = spec.fieldRules!;
  return inPractice(deps.db, auth.practice.id, async (trx) => {
    if (performerId) await assertPerformerExists(trx, auth.practice.id, performerId);
    const ctx = contextOf(trx, deps, spec, auth, request, performerId);
    let fromRules: FieldError[] = [];
    try {
      fromRules = await fieldRules({
        ...ctx,
        body: withoutWrongFields(request.body, schemaErrors),
        wrong: wrongFieldsOf(fromSchema),
      });
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      if (error.code === 'validation_failed') fromRules = error.errors ?? [];
    }
    throw fieldErrors(mergeFieldErrors(spec.body, fromSchema, fromRules));
  });
}

/**
 * Runs an authenticated route: what the audit row will say, the body's own field rules, then the work
 * under its Idempotency-Key in one transaction with its audit row (runKeyed), and the answer.
 */
async function runApiHandler(
  deps: Deps,
  spec: AnyApiRoute,
  request: FastifyRequest,
  reply: FastifyReply,
  bodyCheck: ValidateFunction | undefined,
): Promise<FastifyReply> {
  const auth = request.auth;
  if (!auth) throw new AppError('unauthenticated', 'A valid API key is required.');
  const performerId = describeForAudit(spec, request);
  if (bodyCheck && !bodyCheck(request.body)) {
    await refuseWrongFields(deps, spec, request, auth, performerId, bodyCheck.errors ?? []);
  }
  const scope = keyScopeOf(request, spec, auth);
  const changes = spec.method !== 'GET';
  let later: AfterCommit | undefined;
  const { answer, replayed } = await runKeyed({
    request,
    scope,
    inFlight: deps.inFlight,
    errorsDocUrl: deps.config.errorsDocUrl,
    changes,
    keepsRefusals: true,
    transaction: (lockName, fn) =>
      practiceTransaction(deps, auth.practice.id, lockName, fn, {
        genericPlans: spec.genericPlans === true,
        // A change may be stamped for the change feeds: the frame takes the stamp (TransactionPlans).
        stamps: changes,
      }),
    perform: async (trx) => {
      const performed = await performRoute(deps, spec, request, reply, auth, performerId, trx);
      later = performed.later;
      return performed.answer;
    },
    record: (trx, answer, outcome) => recordAnswer(deps, request, auth, trx, answer, outcome),
  });
  request.auditState.written();
  if (later && answer.status === spec.successStatus)
    return sendAfterCommit(reply, answer.status, answer.headers, later);
  return sendAnswer(reply, answer, replayed);
}

/** Notes what the audit row says before any work: the resource and the performer (who is returned). */
function describeForAudit(spec: AnyApiRoute, request: FastifyRequest): string | null {
  const audit = request.auditState;
  audit.resourceType = spec.resourceType;
  const params = (request.params ?? {}) as Record<string, string>;
  audit.resourceId = Object.values(params)[0] ?? null;
  const performerId = readPerformer(request);
  audit.performerId = performerId;
  return performerId;
}

/** The request's Idempotency-Key and its holder (the client), noted for the audit row. */
function keyScopeOf(request: FastifyRequest, spec: AnyApiRoute, auth: AuthContext): KeyScope | undefined {
  const key = readIdempotencyKey(request, keyUseOf(spec));
  if (key === undefined) return undefined;
  request.auditState.idempotencyKey = key;
  return { holder: { practiceId: auth.practice.id, clientId: auth.clientId }, key };
}

/** The practice's transaction, trying `lockName` (a key's lock) in its first statement when given. */
function practiceTransaction<T>(
  deps: Deps,
  practiceId: string,
  lockName: string | undefined,
  fn: (trx: Trx, holdsKey: HoldsLock) => Promise<T>,
  plans: TransactionPlans,
): Promise<T> {
  return lockName
    ? inPracticeHolding(deps.db, practiceId, lockName, fn, plans)
    : inPractice(deps.db, practiceId, (trx) => fn(trx, holdsNoLock), plans);
}

/** The route's work: its handler's result as the answer, the resource it touched noted for the audit. */
async function performRoute(
  deps: Deps,
  spec: AnyApiRoute,
  request: FastifyRequest,
  reply: FastifyReply,
  auth: AuthContext,
  performerId: string | null,
  trx: Trx,
): Promise<{ answer: StoredAnswer; later: AfterCommit | undefined }> {
  if (performerId) await assertPerformerExists(trx, auth.practice.id, performerId);
  const result = await spec.handler(contextOf(trx, deps, spec, auth, request, performerId));
  if (result.resource) {
    request.auditState.resourceId = result.resource.id;
    request.auditState.patientId = result.resource.patientId ?? null;
  }
  if (result.reason) request.auditState.reason = result.reason;
  const later = afterCommitOf(result);
  if (later) {
    reply.code(spec.successStatus);
    return { answer: { status: spec.successStatus, headers: {}, body: '' }, later };
  }
  const location = result.location && `${deps.config.publicBaseUrl}${result.location}`;
  return { answer: successAnswer(reply, spec.successStatus, result.body, location), later: undefined };
}

/** The audit row, written in the transaction of the answer it records. */
async function recordAnswer(
  deps: Deps,
  request: FastifyRequest,
  auth: AuthContext,
  trx: Trx,
  answer: StoredAnswer,
  outcome: Outcome,
): Promise<void> {
  const audit = request.auditState;
  // A read that recorded itself (readRecorded) has written its row, and its transaction has ended.
  if (!audit.open) return;
  audit.outcome = outcome.kind;
  if (outcome.kind === 'refused') audit.reason = outcome.error.code;
  await deps.audit.write(trx, audit.entryOf(request, identityOf(auth), answer.status));
}
