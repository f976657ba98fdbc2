// Owns how a public API operation is declared and run. A route is declared once (schemas, permission,
// whether it creates) and its handler receives a transaction already scoped to the caller's practice.
// Around the handler this module runs, in order: Idempotency-Key claim or replay, the work in one
// transaction with its audit row and stored answer, and release of the claim if nothing committed.
import { createHash } from 'node:crypto';
import type { ErrorObject, ValidateFunction } from 'ajv';
import canonicalize from 'canonicalize';
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifySchemaCompiler } from 'fastify';
import { type Static, type TSchema, Type } from 'typebox';
import type { AuthContext } from '../auth/authenticate.ts';
import { practitionerExists } from '../auth/performer-store.ts';
import type { Permission } from '../auth/permissions.ts';
import {
  keyLockName,
  type StoredAnswer,
  storeAnswer,
  storedAnswer,
} from '../idempotency/idempotency-store.ts';
import type { AuditEntry } from '../platform/audit-log.ts';
import { inPractice, inPracticeHolding, type Trx, withSavepoint } from '../platform/db/transaction.ts';
import { faultPoint } from '../platform/fault-points.ts';
import {
  AppError,
  type FieldError,
  fieldErrors,
  invalidParameters,
  problemOf,
} from '../platform/http/errors.ts';
import {
  mergeFieldErrors,
  type Partly,
  type WrongField,
  withoutWrongFields,
  wrongFieldsOf,
} from '../platform/http/field-rules.ts';
import { ProblemSchema } from '../platform/http/schema.ts';
import { toFieldErrors, validatorCompiler } from '../platform/http/validation.ts';
import { idPattern } from '../platform/ids.ts';
import type { Deps } from './deps.ts';

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
}

/** What a route's field rules get: the body without the fields its schema refused, and those fields. */
export interface RuleContext<P, Q, B> extends HandlerContext<P, Q, Partly<B>> {
  wrong: WrongField;
}

export interface HandlerResult<R> {
  body: R;
  /** Path of the created record, below the public base URL (for Location). */
  location?: string;
  resource?: { id: string; patientId?: string | null };
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
  resourceType: string;
  params?: P;
  querystring?: Q;
  body?: B;
  /** The whole body may be left out; no body then counts as `{}`. */
  bodyOptional?: boolean;
  /** Content types accepted for the body besides application/json. */
  consumes?: string[];
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

export function defineApiRoute<P extends TSchema, Q extends TSchema, B extends TSchema, R extends TSchema>(
  spec: ApiRouteSpec<P, Q, B, R>,
): ApiRouteSpec<P, Q, B, R> {
  return spec;
}

export const IDEMPOTENCY_HEADER = 'idempotency-key';
const MAX_IDEMPOTENCY_KEY_LENGTH = 255;
const PERFORMER_HEADER = 'x-service-performer';

/** Refusals decided by the service's own rules after the work ran: stored and replayed like a success. */
function isStoredRefusal(error: AppError): boolean {
  return error.status === 404 || error.code === 'duplicate' || error.status === 422;
}

function fingerprintOf(request: FastifyRequest): string {
  return createHash('sha256')
    .update(`${request.method} ${request.url}\n${canonicalize(request.body ?? null) ?? 'null'}`)
    .digest('hex');
}

/** The 409 for a creating request whose Idempotency-Key another request, here or elsewhere, is running. */
export function keyStillRunning(): AppError {
  return new AppError(
    'conflict',
    'A request with this Idempotency-Key is still running. Wait and retry with the same key.',
  );
}

export function headerValue(raw: string | string[] | undefined): string | undefined {
  return Array.isArray(raw) ? raw[0] : raw;
}

function readIdempotencyKey(request: FastifyRequest): string {
  const raw = request.headers[IDEMPOTENCY_HEADER];
  const value = headerValue(raw);
  if (value === undefined || value === '') {
    throw invalidParameters([
      {
        field: 'Idempotency-Key',
        code: 'required',
        message: 'Idempotency-Key is required on creating operations',
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

function sendAnswer(reply: FastifyReply, answer: StoredAnswer, replayed: boolean): FastifyReply {
  reply.code(answer.status).headers(answer.headers).type('application/json; charset=utf-8');
  if (replayed) reply.header('idempotent-replayed', 'true');
  return reply.send(answer.body);
}

export function registerApiRoute(app: FastifyInstance, deps: Deps, spec: AnyApiRoute): void {
  // Every operation reads X-Service-Performer, and a wrong one is 400 invalid_request on any of them.
  const problemStatuses = [...new Set([400, ...spec.errorStatuses])];
  const problemResponses = Object.fromEntries(problemStatuses.map((s) => [s, ProblemSchema]));
  const headers = Type.Object(
    {
      ...(spec.creates
        ? {
            [IDEMPOTENCY_HEADER]: Type.String({
              minLength: 1,
              maxLength: MAX_IDEMPOTENCY_KEY_LENGTH,
              description:
                'Required. Unique per intended request; a retry with the same key and body replays the first answer (kept 24 hours).',
            }),
          }
        : {}),
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
  // A route with field rules checks its body in the handler, after authentication, params, query and
  // headers, so that the schema's errors and the rules' errors make one answer.
  const bodyCheck =
    spec.fieldRules && spec.body
      ? (validatorCompiler({
          schema: spec.body,
          method: spec.method,
          url: spec.url,
          httpPart: 'body',
        }) as ValidateFunction)
      : undefined;
  app.route({
    method: spec.method,
    url: spec.url,
    schema: {
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
      response: { [spec.successStatus]: spec.response, ...problemResponses },
      'x-permission': spec.permission,
    },
    ...(bodyCheck
      ? {
          validatorCompiler: (route: Parameters<FastifySchemaCompiler<unknown>>[0]) =>
            route.httpPart === 'body' ? () => true : validatorCompiler(route),
        }
      : {}),
    config: { permission: spec.permission, creates: spec.creates === true, resourceType: spec.resourceType },
    preValidation: async (request) => {
      if (spec.bodyOptional && (request.body === undefined || request.body === null)) request.body = {};
    },
    preHandler: async (request) => {
      if (spec.extraPermissions && request.auth) {
        const missing = spec.extraPermissions(request.body).filter((p) => !request.auth?.permissions.has(p));
        if (missing.length > 0) {
          throw new AppError(
            'forbidden',
            `This client lacks the permission ${missing.join(', ')} that this request needs.`,
          );
        }
      }
    },
    handler: (request, reply) => runApiHandler(deps, spec, request, reply, bodyCheck),
  });
}

function contextOf(
  trx: Trx,
  deps: Deps,
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
  };
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
    const ctx = contextOf(trx, deps, auth, request, performerId);
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

async function runApiHandler(
  deps: Deps,
  spec: AnyApiRoute,
  request: FastifyRequest,
  reply: FastifyReply,
  bodyCheck: ValidateFunction | undefined,
): Promise<FastifyReply> {
  const auth = request.auth;
  if (!auth) throw new AppError('unauthenticated', 'A valid API key is required.');
  const state = request.auditState;
  state.resourceType = spec.resourceType;
  const params = (request.params ?? {}) as Record<string, string>;
  state.resourceId = Object.values(params)[0] ?? null;
  const performerId = readPerformer(request);
  state.performerId = performerId;
  if (bodyCheck && !bodyCheck(request.body)) {
    await refuseWrongFields(deps, spec, request, auth, performerId, bodyCheck.errors ?? []);
  }

  const scope = spec.creates
    ? { practiceId: auth.practice.id, clientId: auth.clientId, key: readIdempotencyKey(request) }
    : undefined;
  if (scope) state.idempotencyKey = scope.key;
  const fingerprint = scope ? fingerprintOf(request) : '';

  const work = async (
    trx: Trx,
    holdsKey: boolean,
    undoable: boolean,
  ): Promise<{ answer: StoredAnswer; replayed: boolean }> => {
    if (scope) {
      if (!holdsKey) throw keyStillRunning();
      faultPoint('idempotency.after_claim');
      const stored = await storedAnswer(trx, scope);
      if (stored) {
        if (stored.fingerprint !== fingerprint) {
          throw new AppError(
            'idempotency_key_reused',
            'This Idempotency-Key was first used with a different method, path or body. Use a new key for a new request.',
          );
        }
        state.outcome = 'replayed';
        const answer = stored.answer;
        await deps.audit.write(trx, auditEntryOf(request, identityOf(auth), answer.status));
        // A replayed Problem names this request, so requestId keeps matching X-Request-Id.
        const body = answer.status >= 400 ? replaceRequestId(answer.body, request.id) : answer.body;
        return { answer: { ...answer, body }, replayed: true };
      }
    }
    if (performerId) await assertPerformerExists(trx, auth.practice.id, performerId);
    const ctx = contextOf(trx, deps, auth, request, performerId);
    let answer: StoredAnswer;
    try {
      const result = undoable ? await withSavepoint(trx, () => spec.handler(ctx)) : await spec.handler(ctx);
      const answerHeaders: Record<string, string> = {};
      if (result.location) answerHeaders.location = `${deps.config.publicBaseUrl}${result.location}`;
      reply.code(spec.successStatus);
      answer = {
        status: spec.successStatus,
        headers: answerHeaders,
        body: String(reply.serialize(result.body)),
      };
      state.outcome = 'succeeded';
      if (result.resource) {
        state.resourceId = result.resource.id;
        state.patientId = result.resource.patientId ?? null;
      }
    } catch (error) {
      if (!(error instanceof AppError) || !isStoredRefusal(error)) throw error;
      if (!undoable && spec.method !== 'GET') throw new RunAgainUndoable();
      answer = {
        status: error.status,
        headers: {},
        body: JSON.stringify(problemOf(error, request.id, deps.config.errorsDocUrl)),
      };
      state.outcome = 'refused';
      state.reason = error.code;
    }
    await deps.audit.write(trx, auditEntryOf(request, identityOf(auth), answer.status));
    if (scope) await storeAnswer(trx, scope, fingerprint, answer);
    if (spec.method !== 'GET') faultPoint('request.before_commit');
    return { answer, replayed: false };
  };

  const leaveInFlight =
    scope && request.headers.authorization
      ? deps.inFlight.add(request.headers.authorization, scope.key)
      : undefined;
  const attempt = (undoable: boolean) =>
    scope
      ? inPracticeHolding(deps.db, auth.practice.id, keyLockName(scope), (trx, holdsKey) =>
          work(trx, holdsKey, undoable),
        )
      : inPractice(deps.db, auth.practice.id, (trx) => work(trx, true, undoable));
  try {
    // Changes run first without a savepoint. A refusal the service decides is stored with its audit
    // row, but its partial work must not be: then the whole transaction is rolled back and the
    // request runs once more with the handler inside a savepoint, which that refusal rolls back to.
    const { answer, replayed } = await attempt(false).catch((error: unknown) => {
      if (error instanceof RunAgainUndoable) return attempt(true);
      throw error;
    });
    state.written = true;
    if (spec.method !== 'GET' && !replayed) faultPoint('request.after_commit');
    return sendAnswer(reply, answer, replayed);
  } finally {
    leaveInFlight?.();
  }
}

/** A refusal came from a handler run without a savepoint; the request runs again with one. */
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

export interface CallerIdentity {
  practiceId: string;
  clientId: string;
  keyId: string;
}

export function identityOf(auth: AuthContext): CallerIdentity {
  return { practiceId: auth.practice.id, clientId: auth.clientId, keyId: auth.keyId };
}

export function auditEntryOf(request: FastifyRequest, who: CallerIdentity, status: number): AuditEntry {
  const s = request.auditState;
  return {
    practiceId: who.practiceId,
    actor: 'client',
    clientId: who.clientId,
    keyId: who.keyId,
    performerId: s.performerId,
    sourceIp: request.ip,
    method: request.method,
    route: request.routeOptions.url ?? request.url.split('?')[0] ?? '',
    status,
    outcome: s.outcome ?? (status < 400 ? 'succeeded' : 'refused'),
    reason: s.reason,
    resourceType: s.resourceType,
    resourceId: s.resourceId,
    patientId: s.patientId,
    requestId: request.id,
    idempotencyKey: s.idempotencyKey,
  };
}
