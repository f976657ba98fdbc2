// Owns talking to a running server's admin API (/admin/v1) over HTTP, for the CLI: where the server is,
// which token to present, and one request at a time. It never opens the database: with the embedded
// database the running server holds the data directory (and its lock), so operators go through it.
import fs from 'node:fs';
import path from 'node:path';

export interface AdminConnection {
  /** Base URL of the server, without a trailing slash (the admin API is under /admin/v1). */
  baseUrl: string;
  token: string;
}

/** The CLI cannot tell where the server is or which token to use. */
export class AdminConnectionError extends Error {}

/** The server did not answer (not running, wrong address, timed out). */
export class ServerUnreachableError extends Error {}

export const SANDBOX_CREDENTIALS_FILE = 'sandbox-credentials.json';

/** The embedded sandbox's admin token, kept by the server in DATA_DIR (a plain file, not the database). */
function sandboxAdminToken(dataDir: string): string | undefined {
  try {
    const stored = JSON.parse(fs.readFileSync(path.join(dataDir, SANDBOX_CREDENTIALS_FILE), 'utf8')) as {
      adminToken?: unknown;
    };
    return typeof stored.adminToken === 'string' && stored.adminToken !== '' ? stored.adminToken : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Base URL: --url, else PRACTICE_BILLING_URL, else PUBLIC_BASE_URL, else http://127.0.0.1:$PORT.
 * Token: --token, else ADMIN_TOKEN, else the embedded sandbox's token in DATA_DIR (default ./data).
 */
export function resolveAdminConnection(
  flags: { url?: string | undefined; token?: string | undefined },
  env: NodeJS.ProcessEnv,
): AdminConnection {
  const rawUrl =
    flags.url || env.PRACTICE_BILLING_URL || env.PUBLIC_BASE_URL || `http://127.0.0.1:${env.PORT || '3000'}`;
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    throw new AdminConnectionError(`The server URL "${rawUrl}" is not a URL (expected http://host:port).`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new AdminConnectionError(`The server URL "${rawUrl}" must start with http:// or https://.`);
  }
  const dataDir = path.resolve(env.DATA_DIR || './data');
  const token = flags.token || env.ADMIN_TOKEN || sandboxAdminToken(dataDir);
  if (!token) {
    throw new AdminConnectionError(
      `No admin token: pass --token or set ADMIN_TOKEN (for the embedded sandbox, set DATA_DIR to its data directory; ${path.join(dataDir, SANDBOX_CREDENTIALS_FILE)} was not found).`,
    );
  }
  return { baseUrl: url.toString().replace(/\/+$/, ''), token };
}

export interface AdminAnswer {
  status: number;
  /** The parsed JSON answer (a record, a list or a Problem), or undefined when the body is not JSON. */
  body: unknown;
  text: string;
}

export interface AdminRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Path under /admin/v1, starting with a slash. */
  path: string;
  query?: Record<string, string>;
  body?: unknown;
  /** Sent as Idempotency-Key: a retry with the same key replays the first answer. */
  idempotencyKey?: string;
}

export class AdminClient {
  readonly #connection: AdminConnection;
  readonly #timeoutMs: number;

  constructor(connection: AdminConnection, options: { timeoutMs?: number } = {}) {
    this.#connection = connection;
    this.#timeoutMs = options.timeoutMs ?? 30_000;
  }

  async request(request: AdminRequest): Promise<AdminAnswer> {
    const url = new URL(`${this.#connection.baseUrl}/admin/v1${request.path}`);
    for (const [name, value] of Object.entries(request.query ?? {})) url.searchParams.set(name, value);
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.#connection.token}`,
      accept: 'application/json',
    };
    if (request.body !== undefined) headers['content-type'] = 'application/json';
    if (request.idempotencyKey !== undefined) headers['idempotency-key'] = request.idempotencyKey;
    let response: Response;
    try {
      response = await fetch(url, {
        method: request.method,
        headers,
        ...(request.body !== undefined ? { body: JSON.stringify(request.body) } : {}),
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (error) {
      const cause =
        error instanceof Error ? ((error.cause as Error | undefined)?.message ?? error.message) : '';
      throw new ServerUnreachableError(
        `Cannot reach the server at ${this.#connection.baseUrl} (${cause}). Is it running? Point the CLI at it with --url or PRACTICE_BILLING_URL.`,
      );
    }
    const text = await response.text();
    let body: unknown;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      body = undefined;
    }
    return { status: response.status, body, text };
  }
}
