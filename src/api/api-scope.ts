// Owns the gate in front of every public API route: authentication, the per-client rate limit, the
// Integrations add-on and the route's permission, in that order; and the audit row for requests that
// were answered before their handler ran (refusals, validation errors). Each request's row is owned
// by its RequestAudit (src/api/request-state.ts), made when the request arrives; the hooks below only
// tell it when to write.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type AuthContext, type AuthResult, authenticate } from '../auth/authenticate.ts';
import type { Permission } from '../auth/permissions.ts';
import {
  headerValue,
  IDEMPOTENCY_HEADER,
  type KeyUse,
  keyStillRunning,
} from '../idempotency/keyed-request.ts';
import { outsideConnectionBound } from '../platform/db/connection-waits.ts';
import { AppError, problemOf } from '../platform/http/errors.ts';
import { limitOrRefuse, limitSourceOrRefuse } from '../platform/http/rate-limit.ts';
import { annotateActiveSpan, CLIENT_ID, PRACTICE_ID } from '../platform/observability/spans.ts';
import { type AnyApiRoute, registerApiRoute } from './api-route.ts';
import type { Deps } from './deps.ts';
import { RequestAudit } from './request-state.ts';

const UNAUTHENTICATED_DETAIL =
  'A valid API key is required: send Authorization: Bearer <API key> with an active key of this practice.';

export function registerApiScope(app: FastifyInstance, deps: Deps, routes: AnyApiRoute[]): void {
  app.decorateRequest('auth', null);
  app.decorateRequest('auditState', null as never);
  // Remembered keys are served only while their changes are heard; listening ends with the app.
  const stopFollowingKeys = deps.keyCache.follow(deps.db);
  app.addHook('onClose', async () => {
    await stopFollowingKeys();
  });
  // Callback hooks: a request that needs nothing from the database passes them without a promise.
  app.addHook('onRequest', (request, reply, done) => {
    request.auditState = new RequestAudit();
    settle(() => admitCaller(deps, request, reply), done);
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    if (!request.auditState?.open) return done(null, payload);
    auditUnrecordedAnswer(deps, request, reply, payload).then((sent) => done(null, sent), done);
  });
  app.addHook('onResponse', (request, _reply, done) => {
    if (!request.auditState?.holdsAfterAnswer) return done();
    // A moment later, so that its work does not compete for the CPU with the answer on its way to the
    // caller: on a busy machine that made a refused known key's 401 arrive measurably later.
    setTimeout(() => auditAfterAnswer(deps, request).then(() => done(), done), AFTER_ANSWER_DELAY_MS);
  });
  for (const route of routes) registerApiRoute(app, deps, route);
}

/** How long after a refused known key's 401 has been sent its audit row is written. */
const AFTER_ANSWER_DELAY_MS = 2;

/** Calls a hook's step and then done: at once when the step needs no promise, else once it settles. */
function settle(step: () => Promise<void> | undefined, done: (error?: Error) => void): void {
  let pending: Promise<void> | undefined;
  try {
    pending = step();
  } catch (error) {
    done(error as Error);
    return;
  }
  if (pending) pending.then(() => done(), done);
  else done();
}

interface RouteGate {
  /** Whether the route takes an Idempotency-Key (src/api/api-route.ts keyUseOf). */
  keyUse?: KeyUse;
  permission?: Permission;
}

function takesKey(gate: RouteGate): boolean {
  return gate.keyUse !== undefined && gate.keyUse !== 'none';
}

/**
 * The gate: throws the refusal of a caller that may not run the route, in the header's order. Runs
 * without a promise when the key is remembered and the count comes from this process's reservation.
 */
function admitCaller(deps: Deps, request: FastifyRequest, reply: FastifyReply): Promise<void> | undefined {
  const gate = request.routeOptions.config as RouteGate;
  if (takesKey(gate) && runningHolder(deps, request)) return refuseKeyStillRunning(deps, request, reply);
  const result = authenticate(
    deps.db,
    deps.keyCache,
    request.headers.authorization,
    request.ip,
    deps.clock.now(),
  );
  return result instanceof Promise
    ? result.then((known) => admitAuthenticated(deps, request, reply, gate, known))
    : admitAuthenticated(deps, request, reply, gate, result);
}

function admitAuthenticated(
  deps: Deps,
  request: FastifyRequest,
  reply: FastifyReply,
  gate: RouteGate,
  result: AuthResult,
): Promise<void> | undefined {
  if (!result.ok) return refuseUnauthenticated(deps, request, reply, result);
  const auth = result.auth;
  request.auth = auth;
  annotateActiveSpan({ [PRACTICE_ID]: auth.practice.id, [CLIENT_ID]: auth.clientId });
  if (takesKey(gate) && request.headers.authorization) {
    deps.inFlight.noteClient(request.headers.authorization, {
      clientId: auth.clientId,
      rateLimitPerMinute: auth.rateLimitPerMinute,
    });
  }
  const counting = limitOrRefuse(
    deps.rateLimits,
    reply,
    `client:${auth.clientId}`,
    auth.rateLimitPerMinute ?? deps.config.rateLimitPerMinute,
  );
  if (counting) return counting.then(() => admitToRoute(auth, gate));
  admitToRoute(auth, gate);
  return undefined;
}

/** The add-on and the route's permission, once the caller is known and counted. */
function admitToRoute(auth: AuthContext, gate: RouteGate): void {
  if (!auth.practice.integrationsEnabled) {
    throw new AppError(
      'addon_inactive',
      "The practice's Integrations add-on is switched off; the practice owner can turn it on.",
    );
  }
  const permission = gate.permission;
  if (permission && !auth.permissions.has(permission)) {
    throw new AppError(
      'forbidden',
      `This client lacks the permission ${permission} that this operation needs.`,
    );
  }
}

async function refuseUnauthenticated(
  deps: Deps,
  request: FastifyRequest,
  reply: FastifyReply,
  result: Extract<AuthResult, { ok: false }>,
): Promise<never> {
  if (result.known) request.auditState.refusedKey = { ...result.known, reason: result.reason };
  await limitSourceOrRefuse(
    deps.rateLimits,
    reply,
    request.ip,
    deps.config.unauthenticatedRateLimitPerMinute,
  );
  reply.header('www-authenticate', 'Bearer');
  throw new AppError('unauthenticated', UNAUTHENTICATED_DETAIL);
}

function runningHolder(deps: Deps, request: FastifyRequest) {
  return deps.inFlight.runningFor(
    request.headers.authorization,
    headerValue(request.headers[IDEMPOTENCY_HEADER]),
  );
}

/**
 * A request whose Idempotency-Key this process is running already: refused 409 before it is
 * authenticated again, counted against its client's rate limit.
 */
async function refuseKeyStillRunning(
  deps: Deps,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<never> {
  const holder = runningHolder(deps, request)!;
  await limitOrRefuse(
    deps.rateLimits,
    reply,
    `client:${holder.clientId}`,
    holder.rateLimitPerMinute ?? deps.config.rateLimitPerMinute,
  );
  throw keyStillRunning();
}

/**
 * onSend: writes the row of a request answered before its work ran. A refused known key's row waits
 * until its 401 is sent, so that neither the answer's timing nor a failing audit log tells a caller
 * that the key it tried exists. When the row cannot be written the answer becomes a 503. The row is
 * written outside the request's bound on connection waits (load shedding): the answer is decided.
 */
async function auditUnrecordedAnswer(
  deps: Deps,
  request: FastifyRequest,
  reply: FastifyReply,
  payload: unknown,
): Promise<unknown> {
  const audit = request.auditState;
  const entry = audit?.unrecordedEntry(request, reply.statusCode);
  if (!entry) return payload;
  if (!request.auth) {
    audit.writeAfterAnswer(entry);
    return payload;
  }
  try {
    await outsideConnectionBound(() => audit.writeAlone(deps.audit, deps.db, entry));
    return payload;
  } catch (error) {
    request.log.error({ err: error }, 'audit write failed; answer withheld');
    return auditUnavailableAnswer(deps, request, reply);
  }
}

function auditUnavailableAnswer(deps: Deps, request: FastifyRequest, reply: FastifyReply): string {
  reply.code(503).header('retry-after', '1').type('application/json; charset=utf-8');
  reply.removeHeader('location');
  reply.removeHeader('idempotent-replayed');
  return JSON.stringify(
    problemOf(
      new AppError(
        'service_unavailable',
        'The request could not be recorded in the audit log; nothing was done. Retry shortly.',
      ),
      request.id,
      deps.config.errorsDocUrl,
    ),
  );
}

/**
 * onResponse: writes the row held until the answer was sent (a refused known key), outside the
 * request's bound on connection waits, as auditUnrecordedAnswer does.
 */
async function auditAfterAnswer(deps: Deps, request: FastifyRequest): Promise<void> {
  const entry = request.auditState?.takeAfterAnswer();
  if (!entry) return;
  try {
    await outsideConnectionBound(() => request.auditState.writeAlone(deps.audit, deps.db, entry));
  } catch (error) {
    request.log.error({ err: error }, 'audit write of a refused key failed');
  }
}
