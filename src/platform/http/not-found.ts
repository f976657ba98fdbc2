// Owns answers for paths no route serves: 405 with Allow when the path exists under another method,
// else 404. Fastify's router does not tell the two apart, so every route is mirrored here. Such a
// request names no operation and so no client: it counts against its source address's allowance.

import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';
import FindMyWay from 'find-my-way';
import { AppError } from './errors.ts';

const METHODS: HTTPMethods[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

export type SourceLimit = (request: FastifyRequest, reply: FastifyReply) => Promise<void>;

/** Refuses a request no route serves (404 or 405 with Allow), after counting it against its source. */
export type RefuseUnrouted = (request: FastifyRequest, reply: FastifyReply) => Promise<never>;

export function trackRoutesForMethodCheck(app: FastifyInstance, limitSource: SourceLimit): RefuseUnrouted {
  const router = FindMyWay();
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      if (!METHODS.includes(method as HTTPMethods)) continue;
      try {
        router.on(method as never, route.url, () => {});
      } catch {
        // the same path and method registered twice (HEAD mirrors of GET): one entry is enough
      }
    }
  });
  const refuseUnrouted: RefuseUnrouted = async (request, reply) => {
    await limitSource(request, reply);
    const path = request.url.split('?')[0] ?? '/';
    const allowed = METHODS.filter((m) => m !== request.method && router.find(m as never, path));
    if (allowed.length > 0) {
      reply.header('allow', allowed.join(', '));
      throw new AppError(
        'method_not_allowed',
        `${request.method} is not accepted here; use ${allowed.join(' or ')}.`,
      );
    }
    throw new AppError('not_found', `There is no ${path}. The API lives under /api/v1; see /docs.`);
  };
  app.setNotFoundHandler(refuseUnrouted);
  return refuseUnrouted;
}
