// Builds the Fastify application: plugins and hooks in order, then the public API (/api/v1), the
// operator API (/admin/v1) with its console (/console/), the docs and the health checks. Owns no rules
// of its own.
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify';
import { sql } from 'kysely';
import { accountRoutes } from './accounts/routes.ts';
import { allAdminRoutes } from './admin-routes.ts';
import { registerAdminScope } from './api/admin-route.ts';
import { registerApiScope } from './api/api-scope.ts';
import type { Deps } from './api/deps.ts';
import { frameworkErrorHandler, installErrorHandler } from './api/error-handler.ts';
import { claimRoutes } from './claims/routes.ts';
import { queueClaimFromBill } from './claims/service.ts';
import { codeSystemRoutes } from './code-systems/routes.ts';
import { registerConsole } from './console/serve.ts';
import { dataRightsRoutes } from './data-rights/routes.ts';
import { errorsPageHtml } from './docs/errors-page.ts';
import { declareOptionalBodies } from './docs/openapi-bodies.ts';
import { shareErrorResponses, shareNamedSchemas } from './docs/openapi-components.ts';
import { declareResponseHeaders } from './docs/openapi-headers.ts';
import { openApiInfo } from './docs/openapi-info.ts';
import { encounterRoutes } from './encounters/routes.ts';
import { eventRoutes } from './events/routes.ts';
import { insuranceRoutes } from './insurance/routes.ts';
import { invoiceRoutes } from './invoices/routes.ts';
import { registerMetricsEndpoint } from './metrics-endpoint.ts';
import { patientRecordRoutes } from './patients/record-routes.ts';
import { patientRoutes } from './patients/routes.ts';
import { callOperatorFunction } from './platform/db/transaction.ts';
import { clientErrorHandler } from './platform/http/client-error.ts';
import { buildSerializerOnFirstUse } from './platform/http/lazy-compile.ts';
import { trackRoutesForMethodCheck } from './platform/http/not-found.ts';
import { limitSourceOrRefuse } from './platform/http/rate-limit.ts';
import { OneLinePerRequest } from './platform/http/request-log.ts';
import { observeRequests } from './platform/http/request-observation.ts';
import { validatorCompiler } from './platform/http/validation.ts';
import { randomToken } from './platform/ids.ts';
import { practitionerRoutes } from './practices/practitioner-routes.ts';

export const BODY_LIMIT_BYTES = 256 * 1024;

export const apiRoutes = [
  ...patientRoutes,
  ...patientRecordRoutes,
  ...dataRightsRoutes,
  ...insuranceRoutes,
  ...practitionerRoutes,
  ...encounterRoutes,
  ...invoiceRoutes(queueClaimFromBill),
  ...accountRoutes,
  ...claimRoutes,
  ...codeSystemRoutes,
  ...eventRoutes,
];

export interface AppOptions {
  /** A pino logger shared with the rest of the process; none means silent. */
  logger?: FastifyBaseLogger;
  /** Serve the admin API (needs a token). */
  adminToken?: string | undefined;
  /** Further admin tokens accepted beside adminToken (ADMIN_TOKENS: a new one rolled out before the old goes). */
  adminTokens?: readonly string[] | undefined;
  /** Why the process must not be sent work (a newer schema under it); undefined while it may. */
  notReadyReason?: (() => string | undefined) | undefined;
}

export function loggerOptions(level: string): FastifyServerOptions['logger'] {
  return {
    level,
    // Keys, tokens and anything a client sent are never logged; request lines carry no query string.
    redact: {
      paths: ['req.headers.authorization', 'headers.authorization', 'key', 'secret'],
      censor: '[redacted]',
    },
    serializers: {
      // The practice and client when the caller was authenticated (ids only).
      req: (req: {
        method: string;
        routeOptions?: { url?: string };
        url: string;
        id: string;
        auth?: { practice: { id: string }; clientId: string } | null;
      }) => ({
        method: req.method,
        route: req.routeOptions?.url ?? req.url.split('?')[0],
        requestId: req.id,
        ...(req.auth ? { practiceId: req.auth.practice.id, clientId: req.auth.clientId } : {}),
      }),
    },
  };
}

export async function buildApp(deps: Deps, options: AppOptions = {}): Promise<FastifyInstance> {
  const app = fastifyOf(deps, options);
  acceptJsonOnly(app);
  observeRequests(app);
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    reply.header('cache-control', 'no-store');
    reply.header('x-content-type-options', 'nosniff');
    done();
  });
  await registerDocs(app);
  registerHealthChecks(app, deps, options);
  await app.register(
    async (api) => {
      // Before anything else: an overloaded service refuses at once, having done nothing.
      deps.loadShedder.start();
      api.addHook('onClose', async () => deps.loadShedder.stop());
      api.addHook('onRequest', deps.loadShedder.admit);
      registerApiScope(api, deps, apiRoutes);
    },
    { prefix: '/api/v1' },
  );
  await registerOperatorApi(app, deps, options);
  return app;
}

/** The Fastify instance: its request ids, limits, router and error handling; no route yet. */
function fastifyOf(deps: Deps, options: AppOptions): FastifyInstance {
  const limitSource = (request: FastifyRequest, reply: FastifyReply) =>
    limitSourceOrRefuse(deps.rateLimits, reply, request.ip, deps.config.unauthenticatedRateLimitPerMinute);
  const app = Fastify({
    ...(options.logger ? { loggerInstance: options.logger } : { logger: false }),
    bodyLimit: BODY_LIMIT_BYTES,
    genReqId: () => `req_${randomToken(12)}`,
    logController: new OneLinePerRequest(),
    requestIdHeader: false,
    trustProxy: deps.config.trustProxy,
    return503OnClosing: true,
    frameworkErrors: frameworkErrorHandler(deps.config, limitSource),
    clientErrorHandler: clientErrorHandler(deps.config, options.logger),
    // Node's parser bounds the whole request line (16 KB); a path parameter is checked by its route's
    // schema, after authentication, so an over-long id without a valid key answers 401 like any other.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 16 * 1024 },
    schemaController: { compilersFactory: { buildSerializer: buildSerializerOnFirstUse } },
  });
  app.setValidatorCompiler(validatorCompiler);
  const refuseUnrouted = trackRoutesForMethodCheck(app, limitSource);
  installErrorHandler(app, deps.config, refuseUnrouted);
  return app;
}

/** JSON only. An empty body counts as no body, so operations with an optional body accept none. */
function acceptJsonOnly(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser(
    ['application/json', 'application/merge-patch+json'],
    { parseAs: 'string', bodyLimit: BODY_LIMIT_BYTES },
    (request, body, done) => {
      const text = typeof body === 'string' ? body : body.toString('utf8');
      if (text.trim() === '') return done(null, undefined);
      parseJson(request, text, done);
    },
  );
}

/** The OpenAPI document (built from the routes as they register) and its pages at /docs. */
async function registerDocs(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: openApiInfo(),
    // Only OpenAPI 3 is produced here.
    transformObject: (built) =>
      shareErrorResponses(
        declareResponseHeaders(
          declareOptionalBodies(shareNamedSchemas('openapiObject' in built ? built.openapiObject : {})),
        ),
      ),
  });
  await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: true, uiConfig: { deepLinking: true } });
}

/** The errors page, /healthz, /readyz and the OpenAPI document's address. */
function registerHealthChecks(app: FastifyInstance, deps: Deps, options: AppOptions): void {
  app.get('/errors', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('text/html; charset=utf-8').send(errorsPageHtml()),
  );
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  // Ready only where a request could be served: the key look-up every request starts with must run (a
  // restore that lost its grant answers every request 500 while the database itself answers).
  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    const stopped = options.notReadyReason?.();
    if (stopped)
      return reply.code(503).send({ status: 'not ready', database: deps.db.kind, reason: stopped });
    try {
      await callOperatorFunction(deps.db, sql`SELECT key_id FROM api_key_for_request('')`);
    } catch (error) {
      return reply.code(503).send({
        status: 'not ready',
        database: deps.db.kind,
        reason: `the API key look-up cannot run: ${error instanceof Error ? error.message : String(error)}`,
      });
    }
    return reply.send({ status: 'ready', database: deps.db.kind });
  });
  app.get('/api/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}

/**
 * /metrics, read with METRICS_TOKEN where it is set, else with any admin token; and, given an admin
 * token, the operator API (/admin/v1) and its console.
 */
async function registerOperatorApi(app: FastifyInstance, deps: Deps, options: AppOptions): Promise<void> {
  const adminTokens = [
    ...new Set([...(options.adminToken ? [options.adminToken] : []), ...(options.adminTokens ?? [])]),
  ];
  const metricsTokens = deps.config.metricsToken ? [deps.config.metricsToken] : adminTokens;
  if (metricsTokens.length > 0) await registerMetricsEndpoint(app, deps, metricsTokens);
  if (adminTokens.length === 0) return;
  await app.register(
    async (adminScope) => {
      registerAdminScope(adminScope, deps, adminTokens, allAdminRoutes);
    },
    { prefix: '/admin/v1' },
  );
  // The console is a client of the admin API, so it is served only where that API is.
  await app.register(async (consoleScope) => registerConsole(consoleScope));
}
