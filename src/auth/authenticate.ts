// Owns deciding who is calling: the key, its client and practice, and why a call is refused. Every
// refusal gives the caller the same 401; the reason goes to the practice audit log when the key is
// known. Keys that let a request in are remembered for a while (src/auth/key-cache.ts); refusals are
// always decided by the database. Never logs or returns the key itself.
import { sql } from 'kysely';
import type { Clock } from '../platform/clock.ts';
import { asBookkeeping, outsideConnectionBound } from '../platform/db/connection-waits.ts';
import type { Database } from '../platform/db/database.ts';
import { asOperator, callOperatorFunction } from '../platform/db/transaction.ts';
import { parseApiKey, secretMatches } from './api-keys.ts';
import { isAddressAllowed } from './ip-allow-list.ts';
import { KeyCache } from './key-cache.ts';
import { stampKeyUse } from './key-use-store.ts';
import type { Permission } from './permissions.ts';

export interface PracticeContext {
  id: string;
  name: string;
  currency: string;
  timezone: string;
  integrationsEnabled: boolean;
}

export interface AuthContext {
  practice: PracticeContext;
  clientId: string;
  keyId: string;
  permissions: ReadonlySet<Permission>;
  rateLimitPerMinute: number | null;
}

export type AuthRefusalReason =
  | 'missing_key'
  | 'malformed_key'
  | 'unknown_key'
  | 'wrong_secret'
  | 'revoked_key'
  | 'expired_key'
  | 'suspended_client'
  | 'address_not_allowed';

export type AuthResult =
  | { ok: true; auth: AuthContext }
  | {
      ok: false;
      reason: AuthRefusalReason;
      /** Set when the key is known: the refusal is audited in this practice. */
      known?: { practiceId: string; clientId: string; keyId: string };
    };

interface KeyRow {
  key_id: string;
  secret_hash: Buffer;
  expires_at: Date | null;
  revoked_at: Date | null;
  client_id: string;
  permissions: string[];
  allowed_ips: string[];
  rate_limit_per_minute: number | null;
  suspended_at: Date | null;
  practice_id: string;
  practice_name: string;
  currency: string;
  timezone: string;
  integrations_enabled: boolean;
  last_used_at: Date | null;
}

/**
 * One key's row, through the operator-owned look-up function (migration 0006), one statement outside
 * any transaction on PostgreSQL (callOperatorFunction). Bookkeeping before the request's work: load
 * shedding bounds its wait for a connection, as it bounds the work's.
 */
async function lookUpKey(db: Database, keyId: string): Promise<KeyRow | undefined> {
  const query = sql<KeyRow>`SELECT * FROM api_key_for_request(${keyId})`;
  const result = await asBookkeeping(() => callOperatorFunction(db, query));
  return result.rows[0];
}

/** How stale a key's lastUsedAt may grow: it is written at most this often. */
export const LAST_USED_STEP_MS = 60_000;

/**
 * Records that the key let a request in, when what is known of its last use (the row as looked up or
 * remembered) is a minute old or more: one write a minute per key, not one per request. The row in
 * hand is stamped first, so this process's next requests in that minute write nothing; the UPDATE's
 * own condition keeps other processes from writing it again within the minute. It sends no key-change
 * NOTIFY, so no process forgets its keys for it. A failed write loses one timestamp and never
 * the request (but a write shed by load shedding means the request's own work is shed next).
 */
function noteUse(db: Database, row: KeyRow, now: Date): Promise<void> | undefined {
  if (row.last_used_at && now.getTime() - row.last_used_at.getTime() < LAST_USED_STEP_MS) return undefined;
  row.last_used_at = now;
  const due = new Date(now.getTime() - LAST_USED_STEP_MS);
  return asBookkeeping(() =>
    asOperator(db, (trx) => stampKeyUse(trx, row.practice_id, row.key_id, now, due)),
  ).catch(() => {
    // Only the usage stamp is lost; the next request after a minute writes it again.
  });
}

export type ApiKeyCache = KeyCache<KeyRow>;

/** The cache of key rows authenticate uses: API_KEY_CACHE_SECONDS on the service clock (0: none). */
export function apiKeyCache(ttlSeconds: number, clock: Clock): ApiKeyCache {
  return new KeyCache<KeyRow>({ ttlMs: ttlSeconds * 1000, clock });
}

/**
 * Decides a presented key against its row (undefined: no such key). The secret is compared in
 * constant time, against a dummy hash when there is no row, before anything else is looked at.
 */
function judge(row: KeyRow | undefined, secret: string, sourceAddress: string, now: Date): AuthResult {
  const secretOk = secretMatches(secret, row?.secret_hash);
  if (!row) return { ok: false, reason: 'unknown_key' };
  const known = { practiceId: row.practice_id, clientId: row.client_id, keyId: row.key_id };
  if (!secretOk) return { ok: false, reason: 'wrong_secret', known };
  if (row.revoked_at) return { ok: false, reason: 'revoked_key', known };
  if (row.expires_at && row.expires_at.getTime() <= now.getTime())
    return { ok: false, reason: 'expired_key', known };
  if (row.suspended_at) return { ok: false, reason: 'suspended_client', known };
  if (!isAddressAllowed(sourceAddress, row.allowed_ips))
    return { ok: false, reason: 'address_not_allowed', known };

  return {
    ok: true,
    auth: {
      practice: {
        id: row.practice_id,
        name: row.practice_name,
        currency: row.currency,
        timezone: row.timezone,
        integrationsEnabled: row.integrations_enabled,
      },
      clientId: row.client_id,
      keyId: row.key_id,
      permissions: new Set(row.permissions as Permission[]),
      rateLimitPerMinute: row.rate_limit_per_minute,
    },
  };
}

/** Refusals that are about the key itself, whoever presents it: a remembered row of it is dropped. */
const KEY_STATE_REFUSALS: ReadonlySet<AuthRefusalReason> = new Set([
  'unknown_key',
  'revoked_key',
  'expired_key',
  'suspended_client',
]);

function usable(row: KeyRow, now: Date): boolean {
  return (
    !row.revoked_at && !row.suspended_at && (!row.expires_at || row.expires_at.getTime() > now.getTime())
  );
}

/**
 * Looks a remembered row up again without holding up the request that found it due: outside that
 * request's bound on connection waits, so that the look-up neither refuses the request nor is cut.
 */
function refreshInBackground(db: Database, keys: ApiKeyCache, keyId: string, now: Date): void {
  const fill = keys.claimRefresh(keyId);
  if (!fill) return;
  outsideConnectionBound(() => lookUpKey(db, keyId)).then(
    (row) => keys.settle(fill, keyId, row && usable(row, now) ? row : null),
    () => keys.settle(fill, keyId, undefined),
  );
}

/**
 * Who is calling. A key that let a request in may be answered from memory (keys), at once unless its
 * use is due to be stamped; a refusal never is: when the remembered row does not let this request
 * in, the database decides, exactly as for a key never seen, so a refusal costs the same look-up
 * whatever this process remembers.
 */
export function authenticate(
  db: Database,
  keys: ApiKeyCache,
  authorization: string | undefined,
  sourceAddress: string,
  now: Date,
): AuthResult | Promise<AuthResult> {
  if (!authorization) return { ok: false, reason: 'missing_key' };
  const match = BEARER.exec(authorization);
  const parsed = match ? parseApiKey(match[1]!) : undefined;
  if (!parsed) return { ok: false, reason: 'malformed_key' };

  const remembered = keys.peek(parsed.id);
  if (remembered) {
    const result = judge(remembered.row, parsed.secret, sourceAddress, now);
    if (result.ok) {
      if (remembered.stale) refreshInBackground(db, keys, parsed.id, now);
      const noting = noteUse(db, remembered.row, now);
      return noting ? noting.then(() => result) : result;
    }
  }
  return authenticateByLookUp(db, keys, parsed, sourceAddress, now);
}

const BEARER = /^Bearer\s+(\S+)\s*$/i;

async function authenticateByLookUp(
  db: Database,
  keys: ApiKeyCache,
  parsed: { id: string; secret: string },
  sourceAddress: string,
  now: Date,
): Promise<AuthResult> {
  const fill = keys.startFill();
  let row: KeyRow | undefined;
  try {
    row = await lookUpKey(db, parsed.id);
  } catch (error) {
    keys.settle(fill, parsed.id, undefined);
    throw error;
  }
  const result = judge(row, parsed.secret, sourceAddress, now);
  if (result.ok) {
    keys.settle(fill, parsed.id, row);
    await noteUse(db, row!, now);
  } else keys.settle(fill, parsed.id, KEY_STATE_REFUSALS.has(result.reason) ? null : undefined);
  return result;
}
