// The dependencies every module receives, built once in main.ts (or by the test harness).
import type { AuditLog } from './audit/audit.ts';
import type { Config } from './config.ts';
import type { InFlightRequests } from './idempotency/in-flight.ts';
import type { Insurer } from './insurer/port.ts';
import type { Clock } from './platform/clock.ts';
import type { Database } from './platform/db/database.ts';
import type { CursorCodec } from './platform/http/cursor.ts';
import type { RateLimits } from './platform/http/rate-limit.ts';
import type { SecretBox } from './platform/secret-box.ts';

export interface Deps {
  config: Config;
  db: Database;
  clock: Clock;
  cursors: CursorCodec;
  audit: AuditLog;
  rateLimits: RateLimits;
  inFlight: InFlightRequests;
  insurer: Insurer;
  /** Encrypts webhook secrets at rest; undefined when no key is configured. */
  secrets: SecretBox | undefined;
}
