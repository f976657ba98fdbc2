// Owns producing the OpenAPI 3.1 document from the route schemas, without a database: the document
// depends only on the declarations. `npm run openapi` writes it to docs/openapi.json.
import type { Deps } from './api/deps.ts';
import { buildApp } from './app.ts';
import { apiKeyCache } from './auth/authenticate.ts';
import { InFlightRequests } from './idempotency/in-flight.ts';
import { planRatesOf } from './insurance/store.ts';
import { SandboxInsurer } from './insurer/sandbox.ts';
import { AuditLog } from './platform/audit-log.ts';
import { systemClock } from './platform/clock.ts';
import { loadConfig } from './platform/config.ts';
import type { Database } from './platform/db/database.ts';
import { CursorCodec } from './platform/http/cursor.ts';
import { LoadShedder } from './platform/http/load-shedding.ts';
import { RateLimits } from './platform/http/rate-limit.ts';

const noDatabase = new Proxy({} as Database, {
  get() {
    throw new Error('the OpenAPI document is built without a database');
  },
});

export async function openApiDocument(): Promise<unknown> {
  const deps: Deps = {
    config: loadConfig({ LOG_LEVEL: 'silent' }),
    db: noDatabase,
    clock: systemClock,
    cursors: new CursorCodec('00'),
    audit: new AuditLog(),
    rateLimits: new RateLimits(),
    inFlight: new InFlightRequests(),
    // Off: it would listen on the database.
    keyCache: apiKeyCache(0, systemClock),
    insurer: new SandboxInsurer(noDatabase, 0, planRatesOf),
    secrets: undefined,
    loadShedder: new LoadShedder(noDatabase, loadConfig({ LOG_LEVEL: 'silent' })),
  };
  const app = await buildApp(deps, { adminToken: 'document-only' });
  await app.ready();
  const document = app.swagger();
  await app.close();
  return document;
}

export function serialiseDocument(document: unknown): string {
  return `${JSON.stringify(document, null, 2)}\n`;
}
