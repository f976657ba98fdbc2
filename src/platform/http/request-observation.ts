// Owns what the operator's tools learn of each HTTP request: the active trace span (the HTTP server
// span of OpenTelemetry's instrumentation) is named by the route's template with http.route set, and
// the answer's duration is counted by method, route template and status
// (http_request_duration_seconds). The practice and client are added where the caller is known
// (src/api/api-scope.ts). Paths as sent, query strings and bodies are never recorded.
import type { FastifyInstance } from 'fastify';
import { observeRequest } from '../observability/metrics.ts';
import { nameServerSpan } from '../observability/spans.ts';

export function observeRequests(app: FastifyInstance): void {
  app.addHook('onRequest', (request, _reply, done) => {
    const route = request.routeOptions.url;
    if (route) nameServerSpan(request.method, route);
    done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    observeRequest(
      request.method,
      request.routeOptions.url ?? '',
      reply.statusCode,
      reply.elapsedTime / 1000,
    );
    done();
  });
}
