// The test harness: a real service over real HTTP on a fresh database per test file, on PGlite always
// and on PostgreSQL too when DATABASE_URL is set. Migrated templates make a fresh database cheap:
// a PGlite dump loaded in memory, or CREATE DATABASE ... TEMPLATE on PostgreSQL. A describeEachBackend
// block that leaves a service it started running (its server, worker and database) fails when it ends.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import pino from 'pino';
import lockfile from 'proper-lockfile';
import type { Deps } from '../src/api/deps.ts';
import { buildApp } from '../src/app.ts';
import { PERMISSIONS, type Permission } from '../src/auth/permissions.ts';
import { buildDeps, prepareSchema } from '../src/bootstrap.ts';
import { startJobWorker } from '../src/job-catalogue.ts';
import type { Worker } from '../src/jobs/worker.ts';
import type { AuditFault } from '../src/platform/audit-log.ts';
import type { Clock } from '../src/platform/clock.ts';
import { loadConfig } from '../src/platform/config.ts';
import { type Database, openPglite, openPostgres } from '../src/platform/db/database.ts';

export type Backend = 'pglite' | 'postgres';

const silentLogger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

export function backends(): Backend[] {
  return process.env.DATABASE_URL ? ['pglite', 'postgres'] : ['pglite'];
}

/**
 * The times of day test clocks start at on a backend, from TEST_CLOCK_TIME (comma-separated): an entry
 * is a time for every backend (`23:55:00Z`) or for one (`postgres=23:55:00Z`). None listed: now.
 */
function clockTimesOfDay(backend?: Backend): Array<string | undefined> {
  const listed = (process.env.TEST_CLOCK_TIME?.split(',').filter(Boolean) ?? []).flatMap((entry) => {
    const [named, timeOfDay] = entry.includes('=') ? entry.split('=', 2) : [undefined, entry];
    if (named !== undefined && named !== 'pglite' && named !== 'postgres')
      throw new Error(`TEST_CLOCK_TIME names a backend as pglite or postgres, not ${named}`);
    return named === undefined || named === backend ? [timeOfDay] : [];
  });
  return listed.length > 0 ? listed : [undefined];
}

/** The time of day the services of the running describe block start their clocks at. */
let blockTimeOfDay: string | undefined;

/** What a running describeEachBackend block started and has not stopped yet, by where it started. */
let blockRunning: Map<object, string> | undefined;

/** The first frame of the stack outside this file: where a test asked for what runs. */
function callerOutsideHarness(): string | undefined {
  return new Error().stack
    ?.split('\n')
    .slice(1)
    .find((line) => line.includes('/test/') && !line.includes('/test/harness.ts'))
    ?.trim();
}

/**
 * Notes `what` as running in the current describeEachBackend block until the returned function is
 * called; the block fails if it ends first. Outside such a block nothing is noted.
 */
export function noteRunning(what: string, startedAt = callerOutsideHarness()): () => void {
  const running = blockRunning;
  if (!running) return () => {};
  const token = {};
  running.set(token, startedAt ? `${what}, started ${startedAt}` : what);
  return () => {
    running.delete(token);
  };
}

/**
 * One describe block per backend, titled `title (backend)`, and per time of day when TEST_CLOCK_TIME
 * lists several for the backend (`title (backend, 23:55:00Z)`). The body declares its own hooks and
 * tests and starts its own service in `before`, so each block gets one service, whose clock starts at
 * the block's time.
 */
export function describeEachBackend(title: string, body: (backend: Backend) => void): void {
  for (const backend of backends()) {
    const times = clockTimesOfDay(backend);
    for (const timeOfDay of times) {
      const name = times.length > 1 ? `${title} (${backend}, ${timeOfDay})` : `${title} (${backend})`;
      describe(name, () => {
        const running = new Map<object, string>();
        // Registered first, so it runs before the body's hooks start the block's service.
        before(() => {
          blockTimeOfDay = timeOfDay;
          blockRunning = running;
        });
        body(backend);
        // Registered last, so it runs after the body's own after hooks have stopped what they started.
        after(() => {
          blockRunning = undefined;
          const left = [...running.values()];
          running.clear();
          assert.deepEqual(left, [], `${name} ended with ${left.length} service(s) still running: stop them`);
        });
      });
    }
  }
}

const ROOT = path.resolve(import.meta.dirname, '..');
const TMP = path.join(ROOT, '.tmp');

/** Names a template by everything that shapes a fresh database: migrations, catalogue and its loader. */
function migrationsHash(): string {
  const hash = createHash('sha256');
  for (const dir of ['migrations', 'catalogue']) {
    const full = path.join(ROOT, dir);
    if (!fs.existsSync(full)) continue;
    for (const name of fs.readdirSync(full).sort())
      hash.update(name).update(fs.readFileSync(path.join(full, name)));
  }
  hash.update(fs.readFileSync(path.join(ROOT, 'src', 'catalogue', 'loader.ts')));
  return hash.digest('hex').slice(0, 12);
}

/** Computed once, when the migration code is loaded, so the name always matches the code that builds it. */
const TEMPLATE_HASH = migrationsHash();

async function withFileLock<T>(name: string, fn: () => Promise<T>): Promise<T> {
  fs.mkdirSync(TMP, { recursive: true });
  const target = path.join(TMP, name);
  fs.writeFileSync(target, '', { flag: 'a' });
  const release = await lockfile.lock(target, {
    retries: { retries: 600, minTimeout: 100, maxTimeout: 200 },
    stale: 60_000,
  });
  try {
    return await fn();
  } finally {
    await release();
  }
}

async function pgliteTemplate(): Promise<Blob> {
  const file = path.join(TMP, `pglite-template-${TEMPLATE_HASH}.tar.gz`);
  if (!fs.existsSync(file)) {
    await withFileLock('pglite-template.lock', async () => {
      if (fs.existsSync(file)) return;
      const db = await openPglite({ dataDir: undefined });
      await prepareSchema(db.kysely);
      const dump = await db.pglite.dumpDataDir('gzip');
      await db.close();
      fs.writeFileSync(`${file}.part`, Buffer.from(await dump.arrayBuffer()));
      fs.renameSync(`${file}.part`, file);
    });
  }
  return new Blob([fs.readFileSync(file)]);
}

function databaseUrlFor(base: string, database: string): string {
  const url = new URL(base);
  url.pathname = `/${database}`;
  return url.toString();
}

/** A fresh PostgreSQL database (on DATABASE_URL's server) cloned from the migrated template. */
export async function postgresDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const base = process.env.DATABASE_URL!;
  const template = `pb_tpl_${TEMPLATE_HASH}`;
  const name = `pb_t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  try {
    await admin.query('SELECT pg_advisory_lock(4242)');
    try {
      const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [template]);
      if (exists.rowCount === 0) {
        // Built under a temporary name and renamed when complete, so a half-built template is never used.
        const building = `${template}_b${randomBytes(3).toString('hex')}`;
        await admin.query(`CREATE DATABASE ${building}`);
        const db = openPostgres({
          url: databaseUrlFor(base, building),
          poolSize: 1,
          statementTimeoutMs: 60_000,
        });
        try {
          await prepareSchema(db.kysely);
        } finally {
          await db.close();
        }
        await admin.query(`ALTER DATABASE ${building} RENAME TO ${template}`);
      }
      await admin.query(`CREATE DATABASE ${name} TEMPLATE ${template}`);
    } finally {
      await admin.query('SELECT pg_advisory_unlock(4242)');
    }
  } finally {
    await admin.end();
  }
  return ownDatabase(base, name);
}

/** The database `name` on `base`'s server, with the drop that ends it and its sessions. */
function ownDatabase(base: string, name: string): { url: string; drop: () => Promise<void> } {
  return {
    url: databaseUrlFor(base, name),
    drop: async () => {
      const c = new pg.Client({ connectionString: base });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/** A new empty PostgreSQL database (on DATABASE_URL's server), named `<prefix>_<random>`: no schema yet. */
export async function emptyPostgresDatabase(
  prefix: string,
): Promise<{ url: string; drop: () => Promise<void> }> {
  const base = process.env.DATABASE_URL!;
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  return ownDatabase(base, name);
}

const DAY_MS = 86_400_000;

/**
 * Where a test service's clock starts: now, or at a time of day from TEST_CLOCK_TIME (`00:05:00Z`,
 * `23:55:00Z`; the describe block's, when it lists several) on the latest day it has already been,
 * so the suite can run as if just after or just before midnight. Read when each service starts.
 */
function startingOffsetMs(timeOfDay: string | undefined, realNow = Date.now()): number {
  if (!timeOfDay) return 0;
  const match = /^(\d{2}):(\d{2}):(\d{2})Z$/.exec(timeOfDay);
  if (!match) throw new Error(`TEST_CLOCK_TIME must look like 23:55:00Z, not ${timeOfDay}`);
  const [hours, minutes, seconds] = match.slice(1).map(Number) as [number, number, number];
  const midnight = realNow - (realNow % DAY_MS);
  let start = midnight + ((hours * 60 + minutes) * 60 + seconds) * 1000;
  if (start > realNow) start -= DAY_MS;
  return start - realNow;
}

/** The service clock of a test: it runs with real time from where it starts, and tests move it. */
export class TestClock implements Clock {
  readonly startOffsetMs: number;
  offsetMs: number;
  /** Started at the running describe block's time of day, else at the first TEST_CLOCK_TIME gives the backend. */
  constructor(backend?: Backend) {
    this.startOffsetMs = startingOffsetMs(blockTimeOfDay ?? clockTimesOfDay(backend)[0]);
    this.offsetMs = this.startOffsetMs;
  }
  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }
  advance(ms: number): void {
    this.offsetMs += ms;
  }
  /** Sets the clock to an instant; it runs on from there. */
  set(at: Date | number): void {
    this.offsetMs = (typeof at === 'number' ? at : at.getTime()) - Date.now();
  }
  /** Undoes every move: back where it started, plus the real time that has passed. */
  reset(): void {
    this.offsetMs = this.startOffsetMs;
  }
}

export interface TestPractice {
  practiceId: string;
  practitionerId: string;
  clientId: string;
  keyId: string;
  key: string;
}

export interface ServiceOptions {
  /** Let the worker poll on its own (default: only drain() runs jobs). */
  workerPolls?: boolean;
  auditFault?: AuditFault;
  poolSize?: number;
  env?: Record<string, string>;
  /** PostgreSQL only: DATABASE_LISTEN_URL, made from the test's database URL. */
  listenUrl?: (databaseUrl: string) => string;
  /** PostgreSQL only: serve this database, already migrated (left in place on close), not a fresh one. */
  databaseUrl?: string;
}

export interface TestService {
  backend: Backend;
  baseUrl: string;
  adminToken: string;
  deps: Deps;
  db: Database;
  clock: TestClock;
  /** The PostgreSQL connection string of this test's database (postgres backend only). */
  databaseUrl: string | undefined;
  /** The service's worker; its drain() first moves the queue's times with the clock (jobsFollowClock). */
  worker: Worker;
  /**
   * Moves the due times and leases of queued jobs back by as far as the clock moved since the last
   * call, as if the database's clock had moved with the service clock: the queue reads the database's
   * (src/jobs/queue.ts), which a test cannot move. drain() calls it; a test that takes jobs itself after
   * moving the clock calls it first.
   */
  jobsFollowClock(): Promise<void>;
  newPractice(options?: {
    permissions?: readonly Permission[];
    allowedIps?: string[];
    rateLimitPerMinute?: number;
  }): Promise<TestPractice>;
  /** Calls the admin API; a POST carries idempotencyKey, else a fresh key. */
  admin(method: string, path: string, body?: unknown, idempotencyKey?: string): Promise<Answer>;
  close(): Promise<void>;
}

export async function startService(backend: Backend, options: ServiceOptions = {}): Promise<TestService> {
  const startedAt = callerOutsideHarness();
  const adminToken = `adm_test_${randomBytes(16).toString('hex')}`;
  let db: Database | undefined;
  let databaseUrl: string | undefined;
  let drop: (() => Promise<void>) | undefined;
  if (backend === 'pglite') {
    db = await openPglite({ dataDir: undefined, loadDataDir: await pgliteTemplate() });
  } else if (options.databaseUrl) {
    databaseUrl = options.databaseUrl;
  } else {
    const created = await postgresDatabase();
    databaseUrl = created.url;
    drop = created.drop;
  }
  const config = loadConfig({
    PORT: '0',
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : { DATA_DIR: path.join(TMP, 'unused') }),
    ...(databaseUrl && options.listenUrl ? { DATABASE_LISTEN_URL: options.listenUrl(databaseUrl) } : {}),
    ADMIN_TOKEN: adminToken,
    LOG_LEVEL: 'silent',
    INSURER_DELAY_MS: '0',
    REMITTANCE_DELAY_MS: '0',
    SECRET_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
    WEBHOOK_ALLOW_PRIVATE: 'true',
    // Off unless a test turns it on: a loaded test machine must not make other tests' requests 503.
    LOAD_SHED_CONNECTION_WAIT_MS: '0',
    LOAD_SHED_EVENT_LOOP_LAG_MS: '0',
    LOAD_SHED_MAX_IN_FLIGHT: '0',
    LOAD_SHED_CLAIM_BACKLOG_MS: '0',
    ...options.env,
  });
  if (!db) {
    db = openPostgres({
      url: databaseUrl!,
      poolSize: options.poolSize ?? 10,
      statementTimeoutMs: 15_000,
      preparedStatements: true,
      ...(config.databaseListenUrl ? { listenUrl: config.databaseListenUrl } : {}),
      listenHeartbeatMs: config.listenHeartbeatMs,
    });
  }
  const clock = new TestClock(backend);
  const deps = await buildDeps(config, db, {
    clock,
    ...(options.auditFault ? { auditFault: options.auditFault } : {}),
  });
  const app = await buildApp(deps, {
    adminToken,
    ...(process.env.TEST_LOG_LEVEL ? { logger: silentLogger } : {}),
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const baseUrl = `http://127.0.0.1:${port}`;
  // Location headers and Problem types use the public base URL: point it at this server.
  // A test that configures PUBLIC_BASE_URL itself keeps it.
  if (!options.env?.PUBLIC_BASE_URL) {
    (deps.config as { publicBaseUrl: string }).publicBaseUrl = baseUrl;
    if (!options.env?.ERRORS_DOC_URL)
      (deps.config as { errorsDocUrl: string }).errorsDocUrl = `${baseUrl}/errors`;
  }
  // The worker does not poll: tests drive the queue with drain(), so outcomes are deterministic.
  const jobWorker = startJobWorker(
    { db, clock, config, insurer: deps.insurer, secrets: deps.secrets, log: silentLogger, random: () => 0.5 },
    { poll: options.workerPolls === true, tasks: [] },
  );
  const stopped = noteRunning(`a ${backend} service (server, worker and database)`, startedAt);
  let jobClockOffsetMs = clock.offsetMs;
  const jobsFollowClock = async () => {
    const movedMs = clock.offsetMs - jobClockOffsetMs;
    jobClockOffsetMs = clock.offsetMs;
    // Only a clock moved forward makes jobs due: a test that sets its clock back (to pin a date) before
    // queuing anything must not push the jobs it queues afterwards that far into the future.
    if (movedMs <= 0) return;
    const by = sql`make_interval(secs => ${movedMs / 1000})`;
    await sql`UPDATE jobs SET run_at = run_at - ${by}, locked_until = locked_until - ${by}
               WHERE state = 'queued'`.execute(db.kysely);
  };
  const worker: Worker = {
    drain: async () => {
      await jobsFollowClock();
      return jobWorker.drain();
    },
    takeOnce: async () => {
      await jobsFollowClock();
      return jobWorker.takeOnce();
    },
    stop: () => jobWorker.stop(),
  };

  // Like the console and the CLI, every POST carries an Idempotency-Key: a fresh one unless given.
  const admin = (method: string, p: string, body?: unknown, idempotencyKey?: string) =>
    call(baseUrl, method, `/admin/v1${p}`, {
      token: adminToken,
      ...(body !== undefined ? { body } : {}),
      ...(method === 'POST' ? { idempotencyKey: idempotencyKey ?? uniqueKey() } : {}),
    });

  return {
    backend,
    baseUrl,
    adminToken,
    deps,
    db,
    clock,
    databaseUrl,
    admin,
    async newPractice(opts = {}) {
      const practice = await admin('POST', '/practices', {
        name: `Practice ${randomBytes(3).toString('hex')}`,
      });
      const practiceId = practice.body.id as string;
      const practitioner = await admin('POST', `/practices/${practiceId}/practitioners`, { name: 'Dr Test' });
      const client = await admin('POST', `/practices/${practiceId}/clients`, {
        name: 'Test client',
        permissions: [...(opts.permissions ?? PERMISSIONS)],
        ...(opts.allowedIps ? { allowedIps: opts.allowedIps } : {}),
        ...(opts.rateLimitPerMinute ? { rateLimitPerMinute: opts.rateLimitPerMinute } : {}),
      });
      const key = await admin('POST', `/clients/${client.body.id}/keys`, {});
      if (key.status !== 201) throw new Error(`could not issue a key: ${JSON.stringify(key.body)}`);
      return {
        practiceId,
        practitionerId: practitioner.body.id as string,
        clientId: client.body.id as string,
        keyId: key.body.id as string,
        key: key.body.key as string,
      };
    },
    worker,
    jobsFollowClock,
    async close() {
      await worker.stop();
      await app.close();
      await db.close();
      await drop?.();
      stopped();
    },
  };
}

/**
 * An answer over HTTP. Its body is any JSON unless typed from a route's schema (`Answer<Invoice>`):
 * typed, it is the success's body, and a test reads it so only after checking the status.
 */
// biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON answers
export interface Answer<Body = any> {
  status: number;
  headers: Headers;
  body: Body;
  text: string;
}

export interface CallOptions {
  token?: string;
  body?: unknown;
  rawBody?: string;
  headers?: Record<string, string>;
  idempotencyKey?: string;
}

export async function call(
  baseUrl: string,
  method: string,
  p: string,
  options: CallOptions = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.idempotencyKey) headers['idempotency-key'] = options.idempotencyKey;
  let body: string | undefined;
  if (options.rawBody !== undefined) body = options.rawBody;
  else if (options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) {
    headers['content-type'] = 'application/json';
  }
  const response = await fetch(`${baseUrl}${p}`, {
    method,
    headers,
    ...(body !== undefined ? { body } : {}),
  });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: response.status, headers: response.headers, body: parsed, text };
}

/** A client of the public API for one key. */
export function apiClient(svc: TestService, key: string) {
  return (method: string, p: string, options: Omit<CallOptions, 'token'> = {}) =>
    call(svc.baseUrl, method, `/api/v1${p}`, { token: key, ...options });
}

export function uniqueKey(): string {
  return `idem-${randomBytes(8).toString('hex')}`;
}

export function patientBody(overrides: Record<string, unknown> = {}) {
  return {
    givenNames: ['Lerato', 'Grace'],
    lastName: 'Dlamini',
    birthDate: '1990-02-28',
    externalId: { system: 'urn:test:mrn', value: randomBytes(5).toString('hex') },
    ...overrides,
  };
}
