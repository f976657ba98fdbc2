// Owns connections: PostgreSQL through a pg pool, or the embedded PGlite in a data directory guarded by
// a lock file. Everything else reaches the database only through transaction.ts.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import type { PGlite } from '@electric-sql/pglite';
import { Kysely, PGliteDialect, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import lockfile from 'proper-lockfile';
import { DEFAULT_HEARTBEAT_MS, type ListenLog, listenOn, quoted } from './listen.ts';
import { SENT_WITH_COMMIT_MARK } from './sent-with-commit.ts';
import type { Tables } from './tables.ts';

export type DatabaseKind = 'postgres' | 'pglite';

export interface Database {
  kind: DatabaseKind;
  kysely: Kysely<Tables>;
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
   * plans it once (off for a pooler in transaction mode, which cannot keep them).
   */
  preparedStatements?: boolean;
  /** The direct connection LISTEN runs on (DATABASE_LISTEN_URL); default url. */
  listenUrl?: string;
  /** How often each listener checks, with a NOTIFY to itself, that notifications arrive. */
  listenHeartbeatMs?: number;
  /** Where listening says that its heartbeat goes unheard, and is heard again. */
  log?: ListenLog;
}

/** A COMMIT that PostgreSQL answered with ROLLBACK: the transaction had failed, nothing was kept. */
export class TransactionRolledBackError extends Error {
  constructor() {
    super('COMMIT was answered with ROLLBACK: the transaction had failed and nothing of it was kept');
  }
}

type Query = (...args: unknown[]) => unknown;

/** Puts `around` in front of a pool client's query; it calls the query it was given to go on. */
function wrapQuery(client: pg.PoolClient, around: (query: Query, args: unknown[]) => unknown): void {
  const query = client.query.bind(client) as Query;
  (client as unknown as { query: Query }).query = (...args: unknown[]) => around(query, args);
}

/**
 * Two guards on how a transaction ends. PostgreSQL answers COMMIT of a failed transaction with
 * ROLLBACK and no error: make that an error, so that no caller reports as done what was undone. And a
 * connection whose ROLLBACK fails (stalled, or broken) may still be inside the transaction: close it,
 * so that the pool drops it instead of handing it to the next request.
 */
function guardTransactionEnds(client: pg.PoolClient): void {
  wrapQuery(client, (query, args) => {
    const pending = query(...args);
    const text = typeof args[0] === 'string' ? args[0].trim().toLowerCase() : '';
    if (!(pending instanceof Promise)) return pending;
    if (text === 'commit') {
      return pending.then((result: { command?: string }) => {
        if (result.command === 'ROLLBACK') throw new TransactionRolledBackError();
        return result;
      });
    }
    if (text === 'rollback') {
      return pending.catch((error: unknown) => {
        client.end().catch(() => {});
        throw error;
      });
    }
    return pending;
  });
}

/** Distinct statements named per connection; the rest run unnamed. */
const MAX_NAMED_STATEMENTS = 500;
const MAX_NAMED_STATEMENT_LENGTH = 8000;

/**
 * Sends each parameterised statement Kysely issues as a named prepared statement: pg parses it on a
 * connection's first use of the name and afterwards only binds and executes. The name is a hash of the
 * text, computed once per text; a connection names at most MAX_NAMED_STATEMENTS texts.
 */
function prepareStatements(client: pg.PoolClient): void {
  const names = new Map<string, string>();
  wrapQuery(client, (query, args) => {
    const [text, values] = args;
    if (
      typeof text !== 'string' ||
      !Array.isArray(values) ||
      values.length === 0 ||
      text.length > MAX_NAMED_STATEMENT_LENGTH
    ) {
      return query(...args);
    }
    let name = names.get(text);
    if (name === undefined) {
      if (names.size >= MAX_NAMED_STATEMENTS) return query(...args);
      name = `pb_${createHash('sha1').update(text).digest('base64url').slice(0, 22)}`;
      names.set(text, name);
    }
    return query({ name, text, values }, ...args.slice(2));
  });
}

type QueryResultLike = { command: string; rowCount: number | null; rows: unknown[]; fields: unknown[] };

function emptyResult(command: string): QueryResultLike {
  return { command, rowCount: null, rows: [], fields: [] };
}

/**
 * Sends `args` once `first` has been answered, and fails with `first`'s error without sending them
 * when it failed. A query is asked of pg only when the client runs none: queueing one behind a running
 * query is deprecated in pg 8 and removed in pg 9.
 */
function sendAfter(first: Promise<unknown>, query: Query, args: unknown[]): Promise<unknown> {
  return first.then(() => query(...args));
}

/**
 * Saves a round trip per transaction: Kysely's BEGIN is held back and sent in one simple-protocol
 * message with the transaction's first statement when that statement has no parameters (the frame of
 * src/platform/db/transaction.ts, whose settings are literals), the answer of that statement being the
 * last of the message's. Any other first statement is sent once its own BEGIN is answered (if BEGIN
 * fails, so does the statement, unsent); a transaction that ends before its first statement sends
 * nothing at all.
 */
function joinBeginWithFirstStatement(client: pg.PoolClient): void {
  let beginHeld = false;
  wrapQuery(client, (query, args) => {
    const [text, values] = args;
    const command = typeof text === 'string' ? text.trim().toLowerCase() : '';
    const parameterless = values === undefined || (Array.isArray(values) && values.length === 0);
    if (command === 'begin' && parameterless && args.length <= 2) {
      if (beginHeld) return query(...args);
      beginHeld = true;
      return Promise.resolve(emptyResult('BEGIN'));
    }
    if (!beginHeld) return query(...args);
    beginHeld = false;
    if (command === 'commit' || command === 'rollback')
      return Promise.resolve(emptyResult(command.toUpperCase()));
    if (typeof text === 'string' && parameterless && args.length <= 2) {
      const answer = query(`BEGIN;\n${text}`) as Promise<QueryResultLike | QueryResultLike[]>;
      return answer.then((results) => (Array.isArray(results) ? results[results.length - 1]! : results));
    }
    return sendAfter(query('BEGIN') as Promise<unknown>, query, args);
  });
}

/**
 * Saves a round trip per write: a statement ending in SENT_WITH_COMMIT_MARK (src/platform/db/
 * sent-with-commit.ts, literals only) is answered at once and held, then sent in one simple-protocol
 * message with the COMMIT that follows; a ROLLBACK drops it with the transaction. Should another
 * statement come first, the held ones go before it, in order, in one message of their own; that
 * statement is sent once they are answered. If one of them fails, the transaction is aborted and that
 * statement fails with the held statement's error, unsent.
 */
function joinHeldStatementsWithCommit(client: pg.PoolClient): void {
  let held: string[] = [];
  wrapQuery(client, (query, args) => {
    const [text, values] = args;
    const parameterless = values === undefined || (Array.isArray(values) && values.length === 0);
    if (
      typeof text === 'string' &&
      parameterless &&
      args.length <= 2 &&
      text.trimEnd().endsWith(SENT_WITH_COMMIT_MARK)
    ) {
      held.push(text);
      // No row count: what the statement will do is not known yet, and its answer is not read.
      return Promise.resolve(emptyResult(''));
    }
    if (held.length === 0) return query(...args);
    const statements = held;
    held = [];
    const command = typeof text === 'string' ? text.trim().toLowerCase() : '';
    if (command === 'rollback') return query(...args);
    if (command === 'commit') {
      const answer = query(`${statements.join(';\n')};\nCOMMIT`) as Promise<QueryResultLike[]>;
      return answer.then((results) => results[results.length - 1]!);
    }
    return sendAfter(query(statements.join(';\n')) as Promise<unknown>, query, args);
  });
}

export function openPostgres(options: PostgresOptions): Database {
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.poolSize,
    statement_timeout: options.statementTimeoutMs,
    query_timeout: options.statementTimeoutMs + 1000,
    connectionTimeoutMillis: 5000,
    application_name: options.applicationName ?? 'practice-billing',
    types: pgTypes,
  });
  // A pool client that errors while idle (server restart, terminated session) must not crash the process.
  pool.on('error', () => {});
  // Nor one that errors while checked out between two queries of a transaction: the pool listens only
  // to idle clients, and an 'error' event nobody listens to kills the process. The transaction's next
  // query then fails (answered 503), and the pool drops the broken client when it is released.
  pool.on('connect', (client) => {
    client.on('error', () => {});
    if (options.preparedStatements) prepareStatements(client);
    joinHeldStatementsWithCommit(client);
    guardTransactionEnds(client);
    joinBeginWithFirstStatement(client);
  });
  const kysely = new Kysely<Tables>({ dialect: new PostgresDialect({ pool }) });
  return {
    kind: 'postgres',
    kysely,
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
      pool.query({
        ...(name && options.preparedStatements ? { name } : {}),
        text,
        ...(values ? { values } : {}),
      }),
    close: () => kysely.destroy(),
  };
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
  const kysely = new Kysely<Tables>({ dialect: new PGliteDialect({ pglite }) });
  return {
    kind: 'pglite',
    kysely,
    pglite,
    listen: (channel, onSignal) => listenInSession(pglite, kysely, channel, onSignal),
    async close() {
      await kysely.destroy();
      await release?.();
    },
  };
}
