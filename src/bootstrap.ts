// Owns assembling the running service from a Config: open the database (PostgreSQL or embedded),
// migrate it, and build the dependencies every module receives.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { type Kysely, sql } from 'kysely';
import { useRolePrefix } from '../migrations/security.ts';
import type { Deps } from './api/deps.ts';
import { apiKeyCache } from './auth/authenticate.ts';
import { catalogueHash, loadCatalogue, SHIPPED_CATALOGUE_DIR } from './catalogue/loader.ts';
import { InFlightRequests } from './idempotency/in-flight.ts';
import { planRatesOf } from './insurance/store.ts';
import type { Insurer } from './insurer/port.ts';
import { SandboxInsurer } from './insurer/sandbox.ts';
import { laneBacklogMs } from './jobs/queue-figures.ts';
import { type AuditFault, AuditLog } from './platform/audit-log.ts';
import { type Clock, systemClock } from './platform/clock.ts';
import { type Config, ConfigError } from './platform/config.ts';
import { citusClusterReady, distributeOnCitus } from './platform/db/citus.ts';
import { type Database, openPglite, openPostgres } from './platform/db/database.ts';
import type { ListenLog } from './platform/db/listen.ts';
import { migrateToLatest } from './platform/db/migrate.ts';
import { reachDatabase } from './platform/db/reach.ts';
import type { Tables } from './platform/db/tables.ts';
import { advisoryLockKey } from './platform/db/transaction.ts';
import { CursorCodec } from './platform/http/cursor.ts';
import { LoadShedder } from './platform/http/load-shedding.ts';
import { RateLimits } from './platform/http/rate-limit.ts';
import { SecretBox } from './platform/secret-box.ts';

export async function openConfiguredDatabase(
  config: Config,
  applicationName = 'practice-billing',
  log?: ListenLog,
): Promise<Database> {
  useRolePrefix(config.databaseRolePrefix);
  if (config.databaseUrl) {
    return openPostgres({
      url: config.databaseUrl,
      poolSize: config.databasePoolSize,
      statementTimeoutMs: config.statementTimeoutMs,
      preparedStatements: config.preparedStatements,
      applicationName,
      ...(config.databaseListenUrl ? { listenUrl: config.databaseListenUrl } : {}),
      listenHeartbeatMs: config.listenHeartbeatMs,
      ...(log ? { log } : {}),
    });
  }
  return openPglite({ dataDir: config.dataDir, sharedBuffersMb: config.embeddedSharedBuffersMb });
}

/**
 * Waits (up to DATABASE_CONNECT_TIMEOUT_S) until PostgreSQL answers on DATABASE_URL, and on
 * MIGRATION_DATABASE_URL when that is another; a failure names the variable. Nothing to do embedded.
 */
export async function reachConfiguredDatabases(
  config: Config,
  log?: { warn(message: string): void },
): Promise<void> {
  const urls: [string, string | undefined][] = [
    ['DATABASE_URL', config.databaseUrl],
    ['MIGRATION_DATABASE_URL', config.migrationDatabaseUrl],
  ];
  const seen = new Set<string>();
  for (const [variable, url] of urls) {
    if (!url || seen.has(url)) continue;
    seen.add(url);
    await reachDatabase({
      url,
      variable,
      timeoutS: config.databaseConnectTimeoutS,
      ...(log ? { onWait: (message: string) => log.warn(message) } : {}),
    });
  }
}

const CATALOGUE_HASH_SETTING = 'catalogue_hash';

/** The session lock held while the catalogue is judged and loaded (a name no transaction lock uses). */
const CATALOGUE_LOCK_KEY = advisoryLockKey('practice-billing:catalogue-load');

/**
 * Brings the schema to the latest migration and loads the published catalogue (the shipped one, then
 * `extraCatalogueDir` laid over it) unless the same content was loaded last time and no migration ran.
 * Runs as the connection's own role, the schema owner. Processes starting together on one database
 * (the API and the worker on a fresh one) judge and load the catalogue one at a time, under a session
 * lock: the second finds the first's hash and loads nothing (two loads at once collided on the code
 * systems' keys, and one process failed to start).
 */
export async function prepareSchema(kysely: Kysely<Tables>, extraCatalogueDir?: string): Promise<string[]> {
  const applied = await migrateToLatest(kysely as unknown as Kysely<unknown>);
  await distributeOnCitus(kysely as unknown as Kysely<unknown>);
  const dirs = extraCatalogueDir ? [SHIPPED_CATALOGUE_DIR, extraCatalogueDir] : [SHIPPED_CATALOGUE_DIR];
  const hash = catalogueHash(dirs);
  await kysely.connection().execute(async (one) => {
    await sql`SELECT pg_advisory_lock(${sql.lit(CATALOGUE_LOCK_KEY)}::bigint)`.execute(one);
    try {
      const loaded = await one
        .selectFrom('service_settings')
        .select('value')
        .where('name', '=', CATALOGUE_HASH_SETTING)
        .executeTakeFirst();
      if (applied.length === 0 && loaded?.value === hash) return;
      for (const dir of dirs) await loadCatalogue(one, dir);
      // Written once every directory is in: a start that stops half-way loads again next time.
      await one
        .insertInto('service_settings')
        .values({ name: CATALOGUE_HASH_SETTING, value: hash })
        .onConflict((oc) => oc.column('name').doUpdateSet({ value: hash }))
        .execute();
    } finally {
      await sql`SELECT pg_advisory_unlock(${sql.lit(CATALOGUE_LOCK_KEY)}::bigint)`.execute(one);
    }
  });
  return applied;
}

/** Prepares the schema with the owner connection (MIGRATION_DATABASE_URL, else the service's own). */
export async function migrateConfigured(config: Config, db: Database): Promise<string[]> {
  if (
    db.kind === 'postgres' &&
    config.migrationDatabaseUrl &&
    config.migrationDatabaseUrl !== config.databaseUrl
  ) {
    const owner = openPostgres({
      url: config.migrationDatabaseUrl,
      poolSize: 1,
      statementTimeoutMs: 600_000,
    });
    try {
      return await prepareSchema(owner.kysely, config.catalogueDir);
    } finally {
      await owner.close();
    }
  }
  return prepareSchema(db.kysely, config.catalogueDir);
}

/** Refuses a process whose DATABASE_ROLE_PREFIX is not the one this database's roles were made with. */
export async function requireRolePrefix(config: Config, db: Database): Promise<void> {
  const row = await db.kysely
    .selectFrom('service_settings')
    .select('value')
    .where('name', '=', 'role_prefix')
    .executeTakeFirst();
  if (row && row.value !== config.databaseRolePrefix) {
    throw new ConfigError(
      `DATABASE_ROLE_PREFIX is "${config.databaseRolePrefix}", but this database's service roles are ${row.value}_app and ${row.value}_operator: set DATABASE_ROLE_PREFIX=${row.value}`,
    );
  }
}

export async function loadCursorSecret(db: Database): Promise<string> {
  const row = await db.kysely
    .selectFrom('service_settings')
    .select('value')
    .where('name', '=', 'cursor_secret')
    .executeTakeFirstOrThrow();
  return row.value;
}

/**
 * The box that encrypts webhook secrets, and the stored answers that show a secret (an API key, a
 * signing secret) for an Idempotency-Key's replay: SECRET_ENCRYPTION_KEY, or for the embedded sandbox a
 * key kept in DATA_DIR/secret-encryption.key (mode 0600). With PostgreSQL and no key, webhooks are
 * unavailable and say so, and such answers are not kept (a repeat is refused with 422).
 */
export function secretBoxFor(config: Config, db: Database): SecretBox | undefined {
  if (config.secretEncryptionKey)
    return new SecretBox(config.secretEncryptionKey, config.secretEncryptionPreviousKeys);
  if (db.kind !== 'pglite' || !fs.existsSync(config.dataDir)) return undefined;
  const file = path.join(config.dataDir, 'secret-encryption.key');
  if (!fs.existsSync(file))
    fs.writeFileSync(file, randomBytes(32).toString('hex'), { mode: 0o600, flag: 'wx' });
  return new SecretBox(Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'hex'));
}

export async function buildDeps(
  config: Config,
  db: Database,
  options: {
    clock?: Clock;
    auditFault?: AuditFault;
    insurer?: Insurer;
    log?: { warn(details: object, message: string): void };
  } = {},
): Promise<Deps> {
  const clock = options.clock ?? systemClock;
  const { log } = options;
  db.distributed =
    db.kind === 'postgres' && (await citusClusterReady(db.kysely as unknown as Kysely<unknown>));
  // On PostgreSQL every API process counts in one table; on the embedded database, in memory.
  const rateLimits = db.poolQuery
    ? new RateLimits({
        store: { query: db.poolQuery },
        onStoreFailure: (err, failures) =>
          log?.warn({ err, failures }, 'rate-limit store failed or too slow; counting in this process'),
      })
    : new RateLimits();
  return {
    config,
    db,
    clock,
    cursors: new CursorCodec(await loadCursorSecret(db)),
    audit: new AuditLog(options.auditFault, { readsApart: db.distributed }),
    rateLimits,
    inFlight: new InFlightRequests(),
    keyCache: apiKeyCache(config.apiKeyCacheSeconds, clock),
    insurer: options.insurer ?? new SandboxInsurer(db, config.insurerDelayMs, planRatesOf),
    secrets: secretBoxFor(config, db),
    loadShedder: new LoadShedder(db, config, {
      claimBacklogMs: () => laneBacklogMs(db, 'claims'),
    }),
  };
}
