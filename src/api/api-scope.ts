// Owns the gate in front of every public API route: authentication, the per-client rate limit, the
// Integrations add-on and the route's permission, in that order; and the audit row for requests that
// were answered before their handler ran (refusals, validation errors, replays).
import type { FastifyInstance } from 'fastify';
import { authenticate } from '../auth/authenticate.ts';
import type { Permission } from '../auth/permissions.ts';
import { headerValue, IDEMPOTENCY_HEADER, keyStillRunning } from '../idempotency/keyed-request.ts';
import { AppError, problemOf } from '../platform/http/errors.ts';
import { limitOrRefuse, limitSourceOrRefuse } from '../platform/http/rate-limit.ts';
import { type AnyApiRoute, auditEntryOf, identityOf, registerApiRoute } from './api-route.ts';
import type { Deps } from './deps.ts';
import { freshAuditState } from './request-state.ts';

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

  app.addHook('onRequest', async (request, reply) => {
    request.auditState = freshAuditState();
    const creates = (request.routeOptions.config as { creates?: boolean }).creates === true;
    const holder = creates
      ? deps.inFlight.runningFor(
          request.headers.authorization,
          headerValue(request.headers[IDEMPOTENCY_HEADER]),
        )
      : undefined;
    if (holder) {
      await limitOrRefuse(
        deps.rateLimits,
        reply,
        `client:${holder.clientId}`,
        holder.rateLimitPerMinute ?? deps.config.rateLimitPerMinute,
      );
      throw keyStillRunning();
    }
    const now = deps.clock.now();
    const result = await authenticate(deps.db, deps.keyCache, request.headers.authorization, request.ip, now);
    if (!result.ok) {
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
    request.auth = result.auth;
    if (creates && request.headers.authorization) {
      deps.inFlight.noteClient(request.headers.authorization, {
        clientId: result.auth.clientId,
        rateLimitPerMinute: result.auth.rateLimitPerMinute,
      });
    }
    await limitOrRefuse(
      deps.rateLimits,
      reply,
      `client:${result.auth.clientId}`,
      result.auth.rateLimitPerMinute ?? deps.config.rateLimitPerMinute,
    );
    if (!result.auth.practice.integrationsEnabled) {
      throw new AppError(
        'addon_inactive',
        "The practice's Integrations add-on is switched off; the practice owner can turn it on.",
      );
    }
    const permission = (request.routeOptions.config as { permission?: Permission }).permission;
    if (permission && !result.auth.permissions.has(permission)) {
      throw new AppError(
        'forbidden',
        `This client lacks the permission ${permission} that this operation needs.`,
      );
    }
  });

  app.addHook('onSend', async (request, reply, payload) => {
    const state = request.auditState;
    if (!state || state.written || state.failed) return payload;
    const auth = request.auth;
    const refused = state.refusedKey;
    if (!auth && !refused) return payload;
    const entry = auth
      ? auditEntryOf(request, identityOf(auth), reply.statusCode)
      : { ...auditEntryOf(request, refused!, reply.statusCode), outcome: 'refused', reason: refused!.reason };
    if (!entry.reason && reply.statusCode >= 400) entry.reason = problemCodeOf(payload);
    if (!auth) {
      // A refused known key is recorded just after its 401 is sent, so that neither the answer's
      // timing nor a failing audit log tells a caller that the key it tried exists.
      state.afterAnswer = entry;
      return payload;
    }
    try {
      await deps.audit.writeAlone(deps.db, entry);
      state.written = true;
      return payload;
    } catch (error) {
      state.failed = true;
      request.log.error({ err: error }, 'audit write failed; answer withheld');
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
  });

  app.addHook('onResponse', async (request) => {
    const entry = request.auditState?.afterAnswer;
    if (!entry) return;
    try {
      await deps.audit.writeAlone(deps.db, entry);
      request.auditState.written = true;
    } catch (error) {
      request.log.error({ err: error }, 'audit write of a refused key failed');
    }
  });

  for (const route of routes) registerApiRoute(app, deps, route);
}

function problemCodeOf(payload: unknown): string | null {
  if (typeof payload !== 'string') return null;
  const match = /"code":"([a-z_]+)"/.exec(payload);
  return match?.[1] ?? null;
}
