// The dependencies every route and the request pipeline receive, built once by buildDeps in
// src/bootstrap.ts (or by the test harness).
import type { ApiKeyCache } from '../auth/authenticate.ts';
import type { InFlightRequests } from '../idempotency/in-flight.ts';
import type { Insurer } from '../insurer/port.ts';
import type { AuditLog } from '../platform/audit-log.ts';
import type { Clock } from '../platform/clock.ts';
import type { Config } from '../platform/config.ts';
import type { Database } from '../platform/db/database.ts';
import type { CursorCodec } from '../platform/http/cursor.ts';
import type { LoadShedder } from '../platform/http/load-shedding.ts';
import type { RateLimits } from '../platform/http/rate-limit.ts';
import type { SecretBox } from '../platform/secret-box.ts';

export interface Deps {
  config: Config;
  db: Database;
  clock: Clock;
  cursors: CursorCodec;
  audit: AuditLog;
  rateLimits: RateLimits;
  inFlight: InFlightRequests;
  /** Key rows that authenticated, answered from memory until they change (API_KEY_CACHE_SECONDS). */
  keyCache: ApiKeyCache;
  insurer: Insurer;
  /** Encrypts webhook secrets and answers showing a secret at rest; undefined when no key is configured. */
  secrets: SecretBox | undefined;
  /** Refuses public API requests at once while the service is overloaded. */
  loadShedder: LoadShedder;
}
