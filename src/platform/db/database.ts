// Owns connections: PostgreSQL through a pg pool, or the embedded PGlite in a data directory guarded by
// a lock file. Everything else reaches the database only through transaction.ts.
import fs from 'node:fs';
import type { PGlite } from '@electric-sql/pglite';
import { Kysely, sql } from 'kysely';
import pg from 'pg';
import lockfile from 'proper-lockfile';
import { observePoolWait, reportPool } from '../observability/metrics.ts';
import { ConnectionGate } from './connection-waits.ts';
import { DEFAULT_HEARTBEAT_MS, type ListenLog, listenOn, quoted } from './listen.ts';
import { PgliteSessionDialect } from './pglite-session.ts';
import { PostgresSessionDialect } from './postgres-session.ts';
import { countRoundTrip } from './statement-counts.ts';
import type { Tables } from './tables.ts';

export { TransactionRolledBackError } from './postgres-session.ts';

export type DatabaseKind = 'postgres' | 'pglite';

export interface Database {
  kind: DatabaseKind;
  /**
   * PostgreSQL only: the database is distributed by Citus (src/platform/db/citus.ts), found when the
   * service starts (buildDeps); a few statements take another form there (docs/scale-out.md).
   */
  distributed?: boolean;
  kysely: Kysely<Tables>;
  /**
   * The queue for this database's connections (src/platform/db/connection-waits.ts): every statement
   * of kysely and poolQuery takes a place in it first.
   */
  connections: ConnectionGate;
  /**
   * Calls onSignal with the payload of every NOTIFY on channel, and with undefined whenever listening
   * starts or starts again (signals may have been missed meanwhile); onLost when it stops working,
   * until the next onSignal(undefined). On PostgreSQL it listens on a connection of its own
   * (src/platform/db/listen.ts), opened again a second after it breaks, and counts as listening only
   * while it hears its own heartbeat; on PGlite in its single session, where a commit's notifications
   * are heard before the commit returns. Returns how to stop listening.
   */
  listen?(
    channel: string,
    onSignal: (payload: string | undefined) => void,
    onLost?: () => void,
  ): () => Promise<void>;
  /**
   * PostgreSQL only: one statement on the pool, outside any transaction and so as the login role, for
   * a library that takes a pg client (the rate-limit store). A named statement is prepared once per
   * connection, unless prepared statements are off (a pooler in transaction mode): then it runs unnamed.
   */
  poolQuery?(query: PoolQuery): Promise<{ rows: unknown[]; rowCount: number | null }>;
  close(): Promise<void>;
}

export interface PoolQuery {
  name?: string;
  text: string;
  values?: unknown[];
}

const DATE_OID = 1082;
const INT8_OID = 20;
const NUMERIC_OID = 1700;

// Plain dates stay strings (a DATE has no time zone); counts and sums come back as numbers
// (they stay far below 2^53 for any practice).
const pgTypes = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === DATE_OID) return (value: string) => value;
    if (oid === INT8_OID || oid === NUMERIC_OID) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format ?? 'text');
  },
};

export interface PostgresOptions {
  url: string;
  poolSize: number;
  statementTimeoutMs: number;
  applicationName?: string;
  /**
   * Name each parameterised statement by a hash of its text, so that every connection parses and
   * plans it once (off for a pooler in transaction mode, which cannot keep them). A statement can opt
   * out with its `prepared` option (src/platform/db/query-options.ts).
   */
  preparedStatements?: boolean;
  /** The direct connection LISTEN runs on (DATABASE_LISTEN_URL); default url. */
  listenUrl?: string;
  /** How often each listener checks, with a NOTIFY to itself, that notifications arrive. */
  listenHeartbeatMs?: number;
  /** Where listening says that its heartbeat goes unheard, and is heard again. */
  log?: ListenLog;
}

export function openPostgres(options: PostgresOptions): Database {
  const pool = openPool(options);
  // How each statement travels (prepared, deferred to the COMMIT, pipelined with BEGIN) is decided in one
  // place, per statement: src/platform/db/postgres-session.ts.
  const connections = new ConnectionGate(options.poolSize);
  const unreport = observeGate(options.applicationName ?? 'practice-billing', connections);
  const kysely = new Kysely<Tables>({
    dialect: connections.dialect(
      new PostgresSessionDialect(pool, { preparedStatements: options.preparedStatements === true }),
    ),
  });
  return {
    kind: 'postgres',
    kysely,
    connections,
    listen: (channel, onSignal, onLost) =>
      listenOn(
        {
          url: options.listenUrl ?? options.url,
          applicationName: options.applicationName ?? 'practice-billing',
          heartbeatMs: options.listenHeartbeatMs ?? DEFAULT_HEARTBEAT_MS,
          notify: (name, payload) => sql`SELECT pg_notify(${name}, ${payload})`.execute(kysely),
          log: options.log,
        },
        channel,
        onSignal,
        onLost,
      ),
    poolQuery: ({ name, text, values }) =>
      // Counted once the place is had: a statement shed while waiting for it never went out.
      connections.using(() => {
        countRoundTrip(1);
        return pool.query({
          ...(name && options.preparedStatements ? { name } : {}),
          text,
          ...(values ? { values } : {}),
        });
      }),
    close: () => {
      unreport();
      return kysely.destroy();
    },
  };
}

/** The pool, with the errors of its clients (idle or checked out) reported instead of crashing the process. */
function openPool(options: PostgresOptions): pg.Pool {
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.poolSize,
    statement_timeout: options.statementTimeoutMs,
    query_timeout: options.statementTimeoutMs + 1000,
    connectionTimeoutMillis: 5000,
    application_name: options.applicationName ?? 'practice-billing',
    types: pgTypes,
    // A transaction's deferred frame and its first statement are written together (src/platform/db/postgres-session.ts).
    pipeline: true,
  });
  // A pool client that errors while idle (server restart, terminated session) must not crash the process.
  const outage = connectionOutage(options.log, options.applicationName ?? 'practice-billing');
  pool.on('error', outage.lost);
  // Nor one that errors while checked out between two queries of a transaction: the pool listens only
  // to idle clients, and an 'error' event nobody listens to kills the process. The transaction's next
  // query then fails (answered 503), and the pool drops the broken client when it is released.
  pool.on('connect', (client) => {
    outage.back();
    client.on('error', outage.lost);
  });
  return pool;
}

/**
 * Says once, at warn, that the pool lost a connection (and what follows: requests that need one fail
 * with 503 while the database is away, and the pool opens new connections as they are asked for), and
 * once that a new one was opened after the loss.
 */
function connectionOutage(log: ListenLog | undefined, pool: string) {
  let down = false;
  return {
    lost: (err: Error) => {
      if (down) return;
      down = true;
      log?.warn(
        { pool, err: { message: err.message } },
        'database connection lost: requests that need the database answer 503 until it is back; new connections are opened as they are asked for',
      );
    },
    back: () => {
      if (!down) return;
      down = false;
      log?.warn({ pool }, 'database connection re-established');
    },
  };
}

/** Reports a gate's figures as its pool's metrics until the returned function is called. */
function observeGate(pool: string, gate: ConnectionGate): () => void {
  gate.onWaited = (waitedMs) => observePoolWait(pool, waitedMs / 1000);
  return reportPool(pool, () => ({ size: gate.size, inUse: gate.inUse, waiting: gate.waiters }));
}

const pgliteParsers = {
  [DATE_OID]: (value: string) => value,
  [INT8_OID]: (value: string) => Number(value),
  [NUMERIC_OID]: (value: string) => Number(value),
};

export interface PgliteOptions {
  /** A directory to persist in, or undefined for memory only. */
  dataDir: string | undefined;
  /** A dump (from dumpDataDir) to start from, used by tests to skip initdb. */
  loadDataDir?: Blob;
  /** shared_buffers in MB (default 16). PostgreSQL zeroes them at start, which in WebAssembly is slow. */
  sharedBuffersMb?: number;
}

export class DataDirectoryInUseError extends Error {}

/**
 * Listening on PGlite: notifications of the single session are handed out while the statement that
 * carried them (a COMMIT) is answered, so a listener hears of a change before its writer goes on. LISTEN
 * runs in a transaction of its own: PGlite's single connection is shared, and a bare statement could
 * land inside another caller's transaction (and be undone with it). No heartbeat, unlike PostgreSQL
 * (src/platform/db/listen.ts): there is no connection to break or to pass through a pooler, and no
 * other process writes; once LISTEN is in place every commit's notifications reach it, so it says
 * onSignal(undefined) once and never onLost.
 */
function listenInSession(
  pglite: PGlite,
  kysely: Kysely<Tables>,
  channel: string,
  onSignal: (payload: string | undefined) => void,
): () => Promise<void> {
  let stopped = false;
  const hear = (from: string, payload: string) => {
    if (from === channel && !stopped) onSignal(payload);
  };
  pglite.onNotification(hear);
  const listening = kysely
    .transaction()
    .execute((trx) => sql.raw(`LISTEN ${quoted(channel)}`).execute(trx))
    .then(() => {
      if (!stopped) onSignal(undefined);
    });
  listening.catch(() => {});
  return async () => {
    stopped = true;
    pglite.offNotification(hear);
    await listening.catch(() => {});
    if (!pglite.closed)
      await kysely
        .transaction()
        .execute((trx) => sql.raw(`UNLISTEN ${quoted(channel)}`).execute(trx))
        .catch(() => {});
  };
}

export async function openPglite(options: PgliteOptions): Promise<Database & { pglite: PGlite }> {
  let release: (() => Promise<void>) | undefined;
  if (options.dataDir) {
    fs.mkdirSync(options.dataDir, { recursive: true });
    try {
      // PGlite has no lock of its own: two processes on one directory silently lose commits.
      release = await lockfile.lock(options.dataDir, { stale: 15_000, update: 5_000, realpath: false });
    } catch {
      throw new DataDirectoryInUseError(
        `The data directory ${options.dataDir} is in use by another process. Stop it first, or talk to it over HTTP (practice-billing admin ...).`,
      );
    }
  }
  // Imported here, not at the top: a PostgreSQL process never loads PGlite (its WebAssembly and memory).
  const { PGlite } = await import('@electric-sql/pglite');
  const pglite = await PGlite.create({
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
    ...(options.loadDataDir ? { loadDataDir: options.loadDataDir } : {}),
    parsers: pgliteParsers,
    startParams: [...PGlite.defaultStartParams, '-c', `shared_buffers=${options.sharedBuffersMb ?? 16}MB`],
  });
  // One session: one transaction at a time.
  const connections = new ConnectionGate(1);
  const unreport = observeGate('embedded', connections);
  const kysely = new Kysely<Tables>({ dialect: connections.dialect(new PgliteSessionDialect({ pglite })) });
  return {
    kind: 'pglite',
    kysely,
    connections,
    pglite,
    listen: (channel, onSignal) => listenInSession(pglite, kysely, channel, onSignal),
    async close() {
      unreport();
      await kysely.destroy();
      await release?.();
    },
  };
}
