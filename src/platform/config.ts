// Owns reading the environment. It is the only module that touches process.env; everything else
// receives a validated Config.
import path from 'node:path';
import { FAULT_POINT_NAMES, type FaultPointName, type FaultPoints } from './fault-points.ts';

export interface Config {
  port: number;
  host: string;
  /** PostgreSQL connection string; when undefined the embedded database in dataDir is used. */
  databaseUrl: string | undefined;
  /** Connection used to run migrations (owner of the schema); defaults to databaseUrl. */
  migrationDatabaseUrl: string | undefined;
  /**
   * A direct connection for LISTEN (key changes, queued jobs); defaults to databaseUrl. Must not go
   * through a pooler in transaction mode, which never delivers notifications.
   */
  databaseListenUrl: string | undefined;
  /**
   * MIGRATE_ON_START: whether a starting process migrates (as MIGRATION_DATABASE_URL) or only checks
   * that nothing is pending; undefined: yes for `start` (npm start) and the embedded database.
   */
  migrateOnStart: boolean | undefined;
  /** DATABASE_ROLE_PREFIX: the service roles are `<prefix>_app` and `<prefix>_operator`, one pair per deployment. */
  databaseRolePrefix: string;
  /** How often a running process checks whether a newer build migrated the database under it. */
  schemaCheckSeconds: number;
  /** How long a start waits for an unreachable database (retrying) before it gives up; 0: no wait. */
  databaseConnectTimeoutS: number;
  /** How often each listening connection checks, with a NOTIFY to itself, that notifications arrive. */
  listenHeartbeatMs: number;
  dataDir: string;
  /** The embedded database's shared_buffers in MB: PostgreSQL's 128 MB is zeroed at every start. */
  embeddedSharedBuffersMb: number;
  /** A directory of extra catalogue files (same layout as catalogue/) loaded over the shipped one. */
  catalogueDir: string | undefined;
  /** The first of adminTokens (ADMIN_TOKEN, else the first of ADMIN_TOKENS). */
  adminToken: string | undefined;
  /** Every admin token accepted: ADMIN_TOKEN and ADMIN_TOKENS, so a new one can be rolled out before the old goes. */
  adminTokens: string[];
  publicBaseUrl: string;
  errorsDocUrl: string;
  logLevel: string;
  /** JSON lines (the default), or pretty for a person at a terminal (LOG_FORMAT). */
  logFormat: 'json' | 'pretty';
  /**
   * Whether traces are exported (OpenTelemetry): an OTLP endpoint is set and OTEL_SDK_DISABLED is not
   * true. The SDK reads the rest of the standard OTEL_* variables itself.
   */
  tracing: { serviceName: string | undefined } | undefined;
  /** The bearer token that reads /metrics; undefined: the admin token reads it on the API's port. */
  metricsToken: string | undefined;
  /** A port of its own serving /metrics (and nothing else); undefined: none. */
  metricsPort: number | undefined;
  insurerDelayMs: number;
  databasePoolSize: number;
  workerDatabasePoolSize: number;
  statementTimeoutMs: number;
  preparedStatements: boolean;
  rateLimitPerMinute: number;
  unauthenticatedRateLimitPerMinute: number;
  /**
   * How long a key that authenticated may be answered from memory (the hard limit); after half of it
   * the row is refreshed in the background while still served. 0 turns the cache off.
   */
  apiKeyCacheSeconds: number;
  webhookAllowPrivate: boolean;
  /** How long the insurer may stay silent before a claim or reversal is given up. */
  claimAnswerWindowSeconds: number;
  /** Delay before the sandbox insurer pays approved benefits (its remittance). */
  remittanceDelayMs: number;
  jobPollMs: number;
  /** The longest an idle lane waits between takes that find nothing (it doubles from jobPollMs). */
  jobPollMaxMs: number;
  /** Claim jobs a worker runs at once (the claims lane). */
  jobConcurrency: number;
  /** Refuse API requests (503) while a transaction has waited this long for a connection; 0: never. */
  loadShedConnectionWaitMs: number;
  /** Refuse API requests (503) while the event loop lags this much; 0: never. */
  loadShedEventLoopLagMs: number;
  /** Refuse API requests (503) while this many are in flight, or the lower limit the latency target steers to; 0: never. */
  loadShedMaxInFlight: number;
  /**
   * The answer time the in-flight limit steers by: an answer slower than this lowers the limit, quicker
   * ones raise it again, never past loadShedMaxInFlight; 0: the limit stays loadShedMaxInFlight.
   */
  loadShedLatencyTargetMs: number;
  /**
   * Refuse API requests that queue claim work (503: a claim sent, resubmitted or reversed; a bill with
   * submitClaim creates its invoice and skips the claim instead) while the claims lane's oldest due job
   * has waited this long for a worker; 0: never.
   */
  loadShedClaimBacklogMs: number;
  /** DELIVERIES_HELD: workers send no webhook delivery (a restored copy); they stay queued. */
  deliveriesHeld: boolean;
  /** Webhook deliveries a worker runs at once (the webhooks lane). */
  webhookJobConcurrency: number;
  /** Deliveries to one endpoint running at once, in all workers. */
  webhookEndpointConcurrency: number;
  /**
   * Deliveries of one practice running at once, in all workers: its slow receivers hold at most this
   * many of the webhooks lane's slots, and its other deliveries queue behind its own cap.
   */
  webhookPracticeConcurrency: number;
  /** E-mails a worker sends at once (the mail lane). */
  mailJobConcurrency: number;
  jobLeaseSeconds: number;
  /** Days a finished job (done or failed) is kept before the worker deletes it. */
  jobRetentionDays: number;
  /** 32-byte key (base64 or hex) that encrypts webhook secrets at rest; the sandbox keeps one in DATA_DIR. */
  secretEncryptionKey: Buffer | undefined;
  /** Keys that only open (SECRET_ENCRYPTION_PREVIOUS_KEYS), for values sealed before a rotation. */
  secretEncryptionPreviousKeys: Buffer[];
  /** How long a rotated-out webhook secret keeps signing beside the new one. */
  webhookSecretOverlapSeconds: number;
  /** Which proxies may set X-Forwarded-For: false (none), true (any), or addresses/CIDRs. */
  trustProxy: boolean | string;
  /** Crash tests only: where the process kills itself (empty: nowhere). */
  faultPoints: FaultPoints;
  /**
   * The SMTP server that patients' accounts and the practice's notices are sent through
   * (smtp://user:pass@host:587, STARTTLS where offered; smtps:// for TLS from the start); undefined: nothing
   * leaves the machine and each message is kept in the outbox the console shows.
   */
  smtpUrl: string | undefined;
  /** The From of those messages (`Name <address>` or an address). */
  mailFrom: string;
}

export class ConfigError extends Error {}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}

function flag(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

function smtpUrlOf(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  if (!URL.canParse(raw) || !['smtp:', 'smtps:'].includes(new URL(raw).protocol)) {
    throw new ConfigError(
      'SMTP_URL must be an smtp:// or smtps:// URL, such as smtp://user:pass@mail.example.org:587',
    );
  }
  return raw;
}

function mailFromOf(raw: string | undefined): string {
  const from = raw || 'Practice Billing <accounts@practice-billing.invalid>';
  if (!/^([^<>]*<)?[^@\s<>]+@[^@\s<>]+\.[^@\s<>]+>?$/.test(from)) {
    throw new ConfigError(`MAIL_FROM must be an e-mail address or "Name <address>", got "${from}"`);
  }
  return from;
}

function trustProxyOf(raw: string | undefined): boolean | string {
  if (raw === undefined || raw === '' || raw === 'false') return false;
  if (raw === 'true') return true;
  return raw;
}

/** A PostgreSQL connection URL, or a ConfigError naming the variable (the value, which may hold a password, is not echoed). */
function databaseUrlOf(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const raw = env[name];
  if (!raw) return undefined;
  const protocol = URL.canParse(raw) ? new URL(raw).protocol : undefined;
  if (protocol !== 'postgres:' && protocol !== 'postgresql:') {
    throw new ConfigError(
      `${name} must be a PostgreSQL connection URL, such as postgres://user@host:5432/database; the value given is not one`,
    );
  }
  return raw;
}

/** An http(s) URL, or a ConfigError naming the variable. */
function httpUrlOf(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const raw = env[name];
  if (!raw) return undefined;
  const protocol = URL.canParse(raw) ? new URL(raw).protocol : undefined;
  if (protocol !== 'http:' && protocol !== 'https:') {
    throw new ConfigError(
      `${name} must be an http or https URL, such as https://billing.example.org; got "${raw}"`,
    );
  }
  return raw;
}

function encryptionKey(raw: string | undefined, name = 'SECRET_ENCRYPTION_KEY'): Buffer | undefined {
  if (!raw) return undefined;
  const key = /^[0-9a-fA-F]{64}$/.test(raw) ? Buffer.from(raw, 'hex') : Buffer.from(raw, 'base64');
  if (key.length !== 32) throw new ConfigError(`${name} must be 32 bytes, as 64 hex digits or base64`);
  return key;
}

function previousKeys(raw: string | undefined): Buffer[] {
  const keys = (raw ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
  return keys.map(
    (item, i) => encryptionKey(item, `SECRET_ENCRYPTION_PREVIOUS_KEYS (key ${i + 1} of ${keys.length})`)!,
  );
}

/** A role-name prefix: lower-case letters, digits and underscores, so that `<prefix>_operator` fits 63 bytes. */
function rolePrefixOf(raw: string | undefined): string {
  if (!raw) return 'practice_billing';
  if (!/^[a-z_][a-z0-9_]{0,40}$/.test(raw)) {
    throw new ConfigError(
      `DATABASE_ROLE_PREFIX must be 1 to 41 lower-case letters, digits or underscores, starting with a letter or underscore; got "${raw}"`,
    );
  }
  return raw;
}

/** The shortest admin token accepted: a bearer token guessed is the whole operator's power. */
export const MIN_ADMIN_TOKEN_LENGTH = 32;

/** ADMIN_TOKEN, then each of ADMIN_TOKENS (comma-separated); each at least 32 characters. */
function adminTokensOf(env: NodeJS.ProcessEnv): string[] {
  const tokens: string[] = [];
  const named: [string, string | undefined][] = [
    ['ADMIN_TOKEN', env.ADMIN_TOKEN],
    ...(env.ADMIN_TOKENS ?? '').split(',').map((t): [string, string] => ['ADMIN_TOKENS', t.trim()]),
  ];
  for (const [name, token] of named) {
    if (!token) continue;
    if (token.length < MIN_ADMIN_TOKEN_LENGTH || /\s/.test(token)) {
      throw new ConfigError(
        `${name} must hold tokens of at least ${MIN_ADMIN_TOKEN_LENGTH} characters without spaces (one has ${token.length}); make one with: openssl rand -hex 32`,
      );
    }
    if (!tokens.includes(token)) tokens.push(token);
  }
  return tokens;
}

/** `name[:n],...`: kill the process the n-th time (default the first) the named point is reached. */
function faultPointsOf(raw: string | undefined): FaultPoints {
  const points = new Map<FaultPointName, number>();
  for (const item of (raw ?? '').split(',').map((s) => s.trim())) {
    if (item === '') continue;
    const [name, times = '1', ...rest] = item.split(':');
    const n = Number(times);
    if (
      !FAULT_POINT_NAMES.includes(name as FaultPointName) ||
      rest.length > 0 ||
      !Number.isInteger(n) ||
      n < 1
    ) {
      throw new ConfigError(
        `FAULT_POINTS must be name[:n],... with n from 1 and names among ${FAULT_POINT_NAMES.join(', ')}; got "${item}"`,
      );
    }
    points.set(name as FaultPointName, n);
  }
  return points;
}

/**
 * Traces go out when an OTLP endpoint is named (for every signal or for traces) and the SDK is not
 * disabled: with neither, nothing of OpenTelemetry is started.
 */
function tracingOf(env: NodeJS.ProcessEnv): Config['tracing'] {
  const disabled = (env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true';
  const exporter = (env.OTEL_TRACES_EXPORTER ?? '').trim().toLowerCase();
  const endpoint = env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  if (disabled || exporter === 'none' || !endpoint) return undefined;
  return { serviceName: env.OTEL_SERVICE_NAME || undefined };
}

/**
 * The settings the others follow from (DATABASE_URL's defaults, the public address), read and checked
 * first, in this order.
 */
type BaseSettings = Pick<
  Config,
  | 'port'
  | 'host'
  | 'databaseUrl'
  | 'migrationDatabaseUrl'
  | 'databaseListenUrl'
  | 'databasePoolSize'
  | 'publicBaseUrl'
  | 'logLevel'
  | 'adminToken'
  | 'adminTokens'
  | 'logFormat'
  | 'metricsPort'
>;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function baseSettings(env: NodeJS.ProcessEnv): BaseSettings {
  const port = integer(env, 'PORT', 3000, 0, 65535);
  const host = env.HOST || '127.0.0.1';
  const databaseUrl = databaseUrlOf(env, 'DATABASE_URL');
  const migrationDatabaseUrl = databaseUrlOf(env, 'MIGRATION_DATABASE_URL');
  const databasePoolSize = integer(env, 'DATABASE_POOL_SIZE', 10, 1, 500);
  const databaseListenUrl = env.DATABASE_LISTEN_URL || undefined;
  if (databaseListenUrl && !databaseUrl) {
    throw new ConfigError(
      'DATABASE_LISTEN_URL needs DATABASE_URL (the embedded database listens in its own session)',
    );
  }
  databaseUrlOf(env, 'DATABASE_LISTEN_URL');
  const publicBaseUrl = (
    httpUrlOf(env, 'PUBLIC_BASE_URL') || `http://${host.includes(':') ? `[${host}]` : host}:${port}`
  ).replace(/\/+$/, '');
  const logLevel = env.LOG_LEVEL || 'info';
  const adminTokens = adminTokensOf(env);
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);
  }
  const logFormat = env.LOG_FORMAT || 'json';
  if (logFormat !== 'json' && logFormat !== 'pretty') {
    throw new ConfigError(`LOG_FORMAT must be json or pretty, got "${logFormat}"`);
  }
  return {
    port,
    host,
    databaseUrl,
    migrationDatabaseUrl: migrationDatabaseUrl || databaseUrl,
    databaseListenUrl: databaseListenUrl ?? databaseUrl,
    databasePoolSize,
    publicBaseUrl,
    logLevel,
    adminToken: adminTokens[0],
    adminTokens,
    logFormat,
    metricsPort: env.METRICS_PORT ? integer(env, 'METRICS_PORT', 0, 0, 65535) : undefined,
  };
}

/** How a setting is read from the environment, given the base settings. */
type Reader<T> = (env: NodeJS.ProcessEnv, base: BaseSettings) => T;

/** An integer setting: its variable, its default (or how the base settings choose it) and its range. */
function int(name: string, fallback: number | ((base: BaseSettings) => number), min: number, max: number) {
  return (env: NodeJS.ProcessEnv, base: BaseSettings) =>
    integer(env, name, typeof fallback === 'number' ? fallback : fallback(base), min, max);
}

/** A default for PostgreSQL; 0 (off) with the embedded database. */
const withPostgres =
  (value: number) =>
  ({ databaseUrl }: BaseSettings): number =>
    databaseUrl ? value : 0;

/** Every other setting, read (and so checked) in this order once the base settings are. */
const SETTINGS: { [K in Exclude<keyof Config, keyof BaseSettings>]: Reader<Config[K]> } = {
  tracing: (env) => tracingOf(env),
  metricsToken: (env) => env.METRICS_TOKEN || undefined,
  migrateOnStart: (env) =>
    env.MIGRATE_ON_START === undefined || env.MIGRATE_ON_START === ''
      ? undefined
      : flag(env, 'MIGRATE_ON_START', true),
  databaseRolePrefix: (env) => rolePrefixOf(env.DATABASE_ROLE_PREFIX),
  schemaCheckSeconds: int('SCHEMA_CHECK_SECONDS', 10, 1, 3600),
  databaseConnectTimeoutS: int('DATABASE_CONNECT_TIMEOUT_S', 30, 0, 3600),
  listenHeartbeatMs: int('DATABASE_LISTEN_HEARTBEAT_MS', 2000, 50, 60_000),
  dataDir: (env) => path.resolve(env.DATA_DIR || './data'),
  catalogueDir: (env) => (env.CATALOGUE_DIR ? path.resolve(env.CATALOGUE_DIR) : undefined),
  errorsDocUrl: (env, base) => httpUrlOf(env, 'ERRORS_DOC_URL') || `${base.publicBaseUrl}/errors`,
  insurerDelayMs: int('INSURER_DELAY_MS', 1000, 0, 600_000),
  embeddedSharedBuffersMb: int('EMBEDDED_SHARED_BUFFERS_MB', 16, 1, 4096),
  workerDatabasePoolSize: int('WORKER_DATABASE_POOL_SIZE', 8, 1, 500),
  statementTimeoutMs: int('STATEMENT_TIMEOUT_MS', 15_000, 100, 600_000),
  preparedStatements: (env) => flag(env, 'DATABASE_PREPARED_STATEMENTS', true),
  rateLimitPerMinute: int('RATE_LIMIT_PER_MINUTE', 6000, 1, 10_000_000),
  unauthenticatedRateLimitPerMinute: int('RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE', 600, 1, 10_000_000),
  apiKeyCacheSeconds: int('API_KEY_CACHE_SECONDS', 60, 0, 3600),
  webhookAllowPrivate: (env, base) => flag(env, 'WEBHOOK_ALLOW_PRIVATE', base.databaseUrl === undefined),
  claimAnswerWindowSeconds: int('CLAIM_ANSWER_WINDOW_SECONDS', 900, 1, 7 * 24 * 3600),
  remittanceDelayMs: int('REMITTANCE_DELAY_MS', 30_000, 0, 7 * 24 * 3600 * 1000),
  jobPollMs: int('JOB_POLL_MS', 200, 10, 60_000),
  jobPollMaxMs: int('JOB_POLL_MAX_MS', 2000, 10, 60_000),
  jobConcurrency: int('JOB_CONCURRENCY', 8, 1, 256),
  // On by default with PostgreSQL; the embedded database runs each statement on the event loop, one
  // transaction after another, so one slow statement would look like overload (docs/decisions/0022-load-shedding-answers-503.md).
  loadShedConnectionWaitMs: int('LOAD_SHED_CONNECTION_WAIT_MS', withPostgres(500), 0, 60_000),
  loadShedEventLoopLagMs: int('LOAD_SHED_EVENT_LOOP_LAG_MS', withPostgres(500), 0, 60_000),
  // Four times the API's connections: never reached by callers whose requests are served quickly,
  // and at most four holds of a connection ahead of any transaction when it is (docs/decisions/0022-load-shedding-answers-503.md).
  loadShedMaxInFlight: int(
    'LOAD_SHED_MAX_IN_FLIGHT',
    ({ databaseUrl, databasePoolSize }) => (databaseUrl ? 4 * databasePoolSize : 0),
    0,
    100_000,
  ),
  // Ten times a bill's answer on an idle two-core machine: reached only when requests queue for the
  // cores or the connections (docs/decisions/0022-load-shedding-answers-503.md, "An in-flight limit that follows the machine").
  loadShedLatencyTargetMs: int('LOAD_SHED_LATENCY_TARGET_MS', withPostgres(250), 0, 60_000),
  loadShedClaimBacklogMs: int('LOAD_SHED_CLAIM_BACKLOG_MS', withPostgres(2000), 0, 600_000),
  deliveriesHeld: (env) => flag(env, 'DELIVERIES_HELD', false),
  webhookJobConcurrency: int('WEBHOOK_JOB_CONCURRENCY', 24, 1, 256),
  webhookEndpointConcurrency: int('WEBHOOK_ENDPOINT_CONCURRENCY', 8, 1, 64),
  webhookPracticeConcurrency: int('WEBHOOK_PRACTICE_CONCURRENCY', 8, 1, 256),
  mailJobConcurrency: int('MAIL_JOB_CONCURRENCY', 4, 1, 64),
  jobLeaseSeconds: int('JOB_LEASE_SECONDS', 60, 5, 3600),
  jobRetentionDays: int('JOB_RETENTION_DAYS', 7, 1, 3650),
  secretEncryptionKey: (env) => encryptionKey(env.SECRET_ENCRYPTION_KEY),
  secretEncryptionPreviousKeys: (env) => previousKeys(env.SECRET_ENCRYPTION_PREVIOUS_KEYS),
  trustProxy: (env) => trustProxyOf(env.TRUST_PROXY),
  webhookSecretOverlapSeconds: int('WEBHOOK_SECRET_OVERLAP_SECONDS', 24 * 3600, 0, 30 * 24 * 3600),
  faultPoints: (env) => faultPointsOf(env.FAULT_POINTS),
  smtpUrl: (env) => smtpUrlOf(env.SMTP_URL),
  mailFrom: (env) => mailFromOf(env.MAIL_FROM),
};

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const base = baseSettings(env);
  const rest = Object.entries(SETTINGS).map(([key, read]) => [key, read(env, base)]);
  return { ...base, ...Object.fromEntries(rest) } as Config;
}
