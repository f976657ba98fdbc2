// Owns the first contact with PostgreSQL at start: one connection is opened and asked `SELECT 1`,
// again and again while the server cannot be reached yet (an orchestrator starts the database and the
// service together), for at most DATABASE_CONNECT_TIMEOUT_S; any other failure (a wrong password, a
// database that does not exist) is said at once, naming the variable whose URL it was.
import pg from 'pg';
import { ConfigError } from '../config.ts';

/** Failures that a database still starting (or not yet routable) gives: worth waiting for. */
const PASSING_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ENOTFOUND',
  '57P03', // cannot_connect_now: the server is starting up or shutting down
  '53300', // too_many_connections
]);

export function isPassing(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return PASSING_CODES.has(code);
  return error instanceof Error && /timeout|terminated unexpectedly/i.test(error.message);
}

/** The URL without its password: user@host:port/database. */
export function describeUrl(url: string): string {
  const parsed = new URL(url);
  const host = parsed.searchParams.get('host') ?? (parsed.hostname || 'localhost');
  const user = parsed.username ? `${decodeURIComponent(parsed.username)}@` : '';
  return `${user}${host}:${parsed.port || '5432'}${parsed.pathname}`;
}

export interface ReachOptions {
  url: string;
  /** The variable the URL came from, named in every message. */
  variable: string;
  timeoutS: number;
  /** Told each time a passing failure is waited out. */
  onWait?: (message: string) => void;
}

async function tryOnce(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
  } finally {
    await client.end().catch(() => {});
  }
}

function messageOf(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && !text.includes(code) ? `${text} (${code})` : text;
}

/** Resolves once the database answers; throws a ConfigError naming the variable otherwise. */
export async function reachDatabase(options: ReachOptions): Promise<void> {
  const target = `${options.variable} (${describeUrl(options.url)})`;
  const deadline = performance.now() + options.timeoutS * 1000;
  let waitMs = 500;
  for (;;) {
    try {
      await tryOnce(options.url);
      return;
    } catch (error) {
      if (!isPassing(error)) {
        throw new ConfigError(`the database of ${target} cannot be used: ${messageOf(error)}`);
      }
      const left = deadline - performance.now();
      if (left <= 0) {
        throw new ConfigError(
          `cannot reach the database of ${target}: ${messageOf(error)}; gave up after ${options.timeoutS} s (DATABASE_CONNECT_TIMEOUT_S)`,
        );
      }
      options.onWait?.(
        `waiting for the database of ${target}: ${messageOf(error)}; retrying for ${Math.ceil(left / 1000)} s more (DATABASE_CONNECT_TIMEOUT_S)`,
      );
      await new Promise((resolve) => setTimeout(resolve, Math.min(waitMs, left)));
      waitMs = Math.min(waitMs * 2, 5000);
    }
  }
}
