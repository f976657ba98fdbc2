// Owns running the service as a process: open and migrate the database, start the HTTP API and/or the
// background worker, print how to try the sandbox, and shut down cleanly on SIGINT/SIGTERM.
import net from 'node:net';
import path from 'node:path';
import type { Kysely } from 'kysely';
import pino from 'pino';
import { buildApp, loggerOptions } from './app.ts';
import {
  buildDeps,
  migrateConfigured,
  openConfiguredDatabase,
  reachConfiguredDatabases,
  requireRolePrefix,
} from './bootstrap.ts';
import { startJobWorker } from './job-catalogue.ts';
import type { Worker } from './jobs/worker.ts';
import { serveMetricsPort } from './metrics-endpoint.ts';
import { type Config, ConfigError } from './platform/config.ts';
import { autovacuumCoverage, autovacuumWarning } from './platform/db/autovacuum.ts';
import { changeFeedReadsThisLogin } from './platform/db/change-feed.ts';
import type { Database } from './platform/db/database.ts';
import { requireCurrentSchema } from './platform/db/migrate.ts';
import { watchSchema } from './platform/db/schema-watch.ts';
import { asOperator } from './platform/db/transaction.ts';
import { armFaultPoints } from './platform/fault-points.ts';
import { compilePendingSchemas } from './platform/http/lazy-compile.ts';
import type { Tracing } from './platform/observability/tracing.ts';
import type { SecretBox } from './platform/secret-box.ts';
import { ensureSandbox, type SandboxCredentials } from './sandbox.ts';
import { countSealed, judgeSealed } from './secrets/service.ts';

export interface RunOptions {
  api: boolean;
  worker: boolean;
  /** Tracing as started before the service's modules loaded (src/platform/observability/tracing.ts). */
  tracing?: Tracing;
}

/** The process's logger: JSON lines on stdout, or (LOG_FORMAT=pretty) lines for a person at a terminal. */
async function processLogger(config: Config): Promise<pino.Logger> {
  const options = loggerOptions(config.logLevel) as pino.LoggerOptions;
  if (config.logFormat === 'json') return pino(options);
  const { default: pretty } = await import('pino-pretty');
  return pino(options, pretty({ sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' }));
}

type App = Awaited<ReturnType<typeof buildApp>>;

/** What a starting service has started so far, each set once it has; what shutting down closes. */
interface Started {
  app?: App;
  worker?: Worker;
  metricsPort?: { close(): Promise<void> };
  /** Why this process takes no more work (a newer build's migrations under it); undefined while it may. */
  newerSchema?: string;
  stopWatching: () => void;
}

export async function runService(configured: Config, options: RunOptions): Promise<void> {
  const log = await processLogger(configured);
  armFaultPoints(configured.faultPoints);
  refuseImpossible(configured, options);
  const config = options.api ? await withConcretePort(configured) : configured;
  await reachConfiguredDatabases(config, { warn: (message) => log.warn(message) });
  const databases = await openDatabases(config, options, log);
  const started: Started = { stopWatching: () => {} };
  const shutdown = shutdownOf(started, databases.closeDatabases, options.tracing, log);
  stopOnSignals(log, shutdown.closeAll);
  try {
    await startService(config, options, databases, started, shutdown.stopWorker, log);
  } catch (error) {
    // A failed start (migration, port in use) must not leave the database open or the data directory locked.
    await shutdown.closeAll().catch(() => {});
    throw error;
  }
}

/**
 * How the service stops: the worker once, whoever asks first (a newer schema, a signal, a failed
 * start); everything, the metrics port first and the database last.
 */
function shutdownOf(
  started: Started,
  closeDatabases: () => Promise<void>,
  tracing: Tracing | undefined,
  log: pino.Logger,
) {
  let workerStopped: Promise<void> | undefined;
  const stopWorker = () => {
    workerStopped ??= started.worker?.stop() ?? Promise.resolve();
    return workerStopped;
  };
  const closeAll = async () => {
    started.stopWatching();
    try {
      await started.metricsPort?.close();
      await started.app?.close();
      await stopWorker();
    } finally {
      // Always release the database (and the embedded data directory's lock).
      await closeDatabases().catch((err: unknown) => log.error({ err }, 'error closing the database'));
      // What the exporter still holds goes out before the process ends.
      await tracing?.shutdown();
    }
  };
  return { stopWorker, closeAll };
}

/**
 * Brings the database up to date, then starts, in order, the API, the worker, the metrics port and
 * the watch for a newer schema, and listens; each is noted in `started` as soon as it is, for shutdown.
 */
async function startService(
  config: Config,
  options: RunOptions,
  { db, workerDb }: { db: Database; workerDb: Database },
  started: Started,
  stopWorker: () => Promise<void>,
  log: pino.Logger,
): Promise<void> {
  await prepareDatabase(config, db, options, log);
  const deps = await buildDeps(config, db, { log });
  // The worker's pool reaches the same database: distributed or not, as buildDeps found it.
  workerDb.distributed = db.distributed;
  await checkSealedSecrets(db, deps.secrets, log);
  const sandbox =
    db.kind === 'pglite' ? await ensureSandbox(db, config.dataDir, config.adminToken) : undefined;
  started.app = options.api
    ? await buildApp(deps, {
        logger: log,
        adminToken: sandbox?.adminToken ?? config.adminToken,
        adminTokens: config.adminTokens,
        notReadyReason: () => started.newerSchema,
      })
    : undefined;
  started.worker = options.worker ? startJobWorker({ ...deps, db: workerDb, log }) : undefined;
  started.metricsPort =
    config.metricsPort === undefined
      ? undefined
      : await serveMetricsPort({
          port: config.metricsPort,
          host: config.host,
          token: config.metricsToken,
          db: workerDb,
          deps: options.api ? deps : undefined,
          log,
        });
  started.stopWatching = stopOnNewerSchema(db, config, log, (message) => {
    started.newerSchema = message;
    void stopWorker().catch((err: unknown) => log.error({ err }, 'stopping the worker failed'));
  });
  if (started.app) {
    await listenOrSay(started.app, config);
    if (sandbox) printSandbox(config, sandbox);
    void compilePendingSchemas().catch((err: unknown) =>
      log.error({ err }, 'a route schema does not compile'),
    );
  }
}

/** Watches for a newer build's migrations under this process; says so once and hands on the message. */
function stopOnNewerSchema(
  db: Database,
  config: Config,
  log: pino.Logger,
  onNewer: (message: string) => void,
): () => void {
  return watchSchema(db, {
    everyMs: config.schemaCheckSeconds * 1000,
    onNewer: (message) => {
      log.error(
        `${message} This process stops taking work: /readyz answers 503 and its worker takes no job.`,
      );
      onNewer(message);
    },
  });
}

/** The API's database and, for a worker on PostgreSQL, a pool of the worker's own; and how to close both. */
async function openDatabases(config: Config, options: RunOptions, log: pino.Logger) {
  const db = await openConfiguredDatabase(config, undefined, log);
  // The worker gets a pool of its own, so jobs never wait behind requests for a connection (or the
  // reverse). The embedded database has one connection, shared.
  const workerDb =
    options.worker && db.kind === 'postgres'
      ? await openConfiguredDatabase(
          { ...config, databasePoolSize: config.workerDatabasePoolSize },
          'practice-billing-worker',
          log,
        )
      : db;
  const closeDatabases = async () => {
    try {
      if (workerDb !== db) await workerDb.close();
    } finally {
      await db.close();
    }
  };
  return { db, workerDb, closeDatabases };
}

/** On SIGINT or SIGTERM shuts down once and exits (1 if shutting down failed); a second signal exits at once. */
function stopOnSignals(log: pino.Logger, shutDown: () => Promise<void>): void {
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) {
      // A second signal while shutting down (a stuck request, a hung close): give up waiting.
      log.warn({ signal }, 'second signal: exiting without waiting');
      process.exit(1);
    }
    stopping = true;
    log.info({ signal }, 'shutting down');
    let code = 0;
    try {
      await shutDown();
    } catch (err) {
      log.error({ err }, 'error while shutting down');
      code = 1;
    }
    process.exit(code);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

/** Refuses what cannot run: an API on PostgreSQL without an admin token, the embedded database split. */
function refuseImpossible(configured: Config, options: RunOptions): void {
  if (configured.databaseUrl && options.api && configured.adminTokens.length === 0) {
    throw new ConfigError(
      'ADMIN_TOKEN (or ADMIN_TOKENS) must be set when DATABASE_URL is set (the admin API needs it).',
    );
  }
  if (!configured.databaseUrl && options.api !== options.worker) {
    throw new ConfigError(
      'The embedded database is used by one process only: run `practice-billing start` (API and worker together), or set DATABASE_URL.',
    );
  }
}

/**
 * Migrates (MIGRATE_ON_START; by default `start` and the embedded database) or checks that nothing is
 * pending, checks the role prefix, and warns of what slows PostgreSQL down.
 */
async function prepareDatabase(config: Config, db: Database, options: RunOptions, log: pino.Logger) {
  const migrate = config.migrateOnStart ?? (db.kind === 'pglite' || (options.api && options.worker));
  if (migrate) await migrateConfigured(config, db);
  else await asOperator(db, (trx) => requireCurrentSchema(trx as unknown as Kysely<unknown>));
  await requireRolePrefix(config, db);
  if (db.kind !== 'postgres') return;
  if (!(await changeFeedReadsThisLogin(db.kysely))) {
    log.warn(
      "change feeds: the role that ran the migrations cannot see when this login's transactions began " +
        '(pg_stat_activity), so feed pages lag by a second or more; GRANT this login to that role, or ' +
        'grant it pg_read_all_stats (README, Running against PostgreSQL)',
    );
  }
  const warning = autovacuumWarning(await autovacuumCoverage(db.kysely));
  if (warning) log.warn(warning);
}

/** Refuses a start whose keys open none of the stored secrets; warns when they open only some. */
async function checkSealedSecrets(db: Database, box: SecretBox | undefined, log: pino.Logger) {
  const sealed = judgeSealed(await countSealed(db, box), box !== undefined);
  if (sealed.refuse) throw new ConfigError(sealed.refuse);
  if (sealed.warn) log.warn(sealed.warn);
}

/** Listens, or throws a ConfigError that names HOST and PORT with the reason. */
async function listenOrSay(app: App, config: Config): Promise<void> {
  try {
    await app.listen({ port: config.port, host: config.host });
  } catch (error) {
    throw new ConfigError(
      `cannot listen on HOST ${config.host}, PORT ${config.port}: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

/**
 * PORT=0 asks for any free port. Pick it before building the app, so that Location headers, the
 * errors page link and the printed address carry the real port rather than ":0".
 */
async function withConcretePort(config: Config): Promise<Config> {
  if (config.port !== 0) return config;
  const port = await new Promise<number>((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', (error) =>
      reject(new ConfigError(`cannot listen on HOST ${config.host}, PORT 0: ${error.message}`)),
    );
    probe.listen(0, config.host, () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
  const defaultBase = config.publicBaseUrl;
  const fromDefault = (url: string) =>
    defaultBase.endsWith(':0') && url.startsWith(defaultBase)
      ? `${defaultBase.slice(0, -2)}:${port}${url.slice(defaultBase.length)}`
      : url;
  return {
    ...config,
    port,
    publicBaseUrl: fromDefault(config.publicBaseUrl),
    errorsDocUrl: fromDefault(config.errorsDocUrl),
  };
}

function printSandbox(config: Config, sandbox: SandboxCredentials) {
  const base = config.publicBaseUrl;
  const lines = [
    '',
    'Practice Billing sandbox is running (embedded database; for trying out, not for production data).',
    `  API          ${base}/api/v1        docs ${base}/docs`,
    `  Data dir     ${config.dataDir}`,
    `  Admin token  ${sandbox.adminToken}${config.adminToken ? ' (from ADMIN_TOKEN)' : ''}`,
    `  Practice     ${sandbox.practiceId}   practitioner ${sandbox.practitionerId}`,
    `  Demo API key ${sandbox.apiKey}`,
    '',
    'Try:',
    `  curl -s -X POST ${base}/api/v1/patients \\`,
    `    -H 'Authorization: Bearer ${sandbox.apiKey}' -H 'Content-Type: application/json' \\`,
    `    -H "Idempotency-Key: $(date +%s%N)" \\`,
    `    -d '{"givenNames":["Lerato"],"lastName":"Dlamini","birthDate":"1990-02-28","externalId":{"system":"urn:demo:mrn","value":"1001"}}'`,
    '',
    'Operator (admin) API, through the CLI, which reads the admin token from the data dir:',
    `  ${config.dataDir === path.resolve('data') ? '' : `DATA_DIR=${config.dataDir} `}npx practice-billing admin practices list --url ${base}`,
    '',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}
