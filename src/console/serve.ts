// Serves the operator console (built from console/ into console/dist) at /console/. The console is a
// client of the admin API only; without a build, /console/ says how to make one.
import fs from 'node:fs';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';

export const CONSOLE_DIST = path.resolve(import.meta.dirname, '..', '..', 'console', 'dist');

const POLICY =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

export async function registerConsole(app: FastifyInstance, dist = CONSOLE_DIST): Promise<void> {
  if (!fs.existsSync(path.join(dist, 'index.html'))) {
    app.get('/console/*', { schema: { hide: true } }, async (_request, reply) =>
      reply
        .code(503)
        .type('text/plain; charset=utf-8')
        .send('The console is not built: run `npm run build:console` (npm install and npm start do it).\n'),
    );
    return;
  }
  await app.register(fastifyStatic, {
    root: dist,
    prefix: '/console/',
    index: 'index.html',
    // One route per built file (read at start): an unknown path is a plain 404.
    wildcard: false,
    setHeaders: (reply) => {
      reply.header('content-security-policy', POLICY);
      reply.header('referrer-policy', 'no-referrer');
    },
  });
}
