// Owns the in-process register of requests with an Idempotency-Key still running, by Authorization
// header (an API key, or the admin token) and Idempotency-Key.
// A repeat arriving while its first is running is answered 409 at once, before it waits for a
// database connection (the embedded database has one, which the first request may hold). Repeats
// that reach another process are caught in the database instead: the first request's transaction
// holds the key's advisory lock, which the repeat fails to take (src/idempotency/idempotency-store.ts).
// It also remembers which client each Authorization header authenticated as, so that such a 409 is
// counted against, and reports, that client's rate limit without a database look-up.
import { createHash } from 'node:crypto';

export interface InFlightClient {
  clientId: string;
  rateLimitPerMinute: number | null;
}

/** Enough for every key a process serves at once; the oldest entry goes first past it. */
const MAX_CLIENTS = 10_000;

export class InFlightRequests {
  readonly #running = new Set<string>();
  readonly #claimed = new Set<string>();
  readonly #clients = new Map<string, InFlightClient>();

  #digest(authorization: string): string {
    return createHash('sha256').update(authorization).digest('base64');
  }

  #id(authorization: string, idempotencyKey: string): string {
    return `${this.#digest(authorization)}\u0000${idempotencyKey}`;
  }

  /** Records the client an Authorization header belongs to (called once it authenticated). */
  noteClient(authorization: string, client: InFlightClient): void {
    const digest = this.#digest(authorization);
    this.#clients.delete(digest);
    this.#clients.set(digest, client);
    if (this.#clients.size > MAX_CLIENTS) {
      const oldest = this.#clients.keys().next().value;
      if (oldest !== undefined) this.#clients.delete(oldest);
    }
  }

  /** Whether a request with this Authorization header and key is still running here. */
  isRunning(authorization: string | undefined, idempotencyKey: string | undefined): boolean {
    if (!authorization || !idempotencyKey) return false;
    return this.#running.has(this.#id(authorization, idempotencyKey));
  }

  /** The client whose request with this key is still running here, if one is. */
  runningFor(
    authorization: string | undefined,
    idempotencyKey: string | undefined,
  ): InFlightClient | undefined {
    if (!authorization || !this.isRunning(authorization, idempotencyKey)) return undefined;
    return this.#clients.get(this.#digest(authorization));
  }

  /**
   * Claims a key for the request about to run it in this process, by the key's holder and value (its
   * lock name), whatever Authorization header spelled it: the returned function releases it, or
   * undefined when a request of this process is running that key already. Checked and taken in one
   * step, so of two repeats that both passed the check by header, one runs and the other answers 409,
   * on the embedded database (one connection, where the second would otherwise wait and replay) as
   * on PostgreSQL (where the key's advisory lock refuses it).
   */
  claim(lockName: string): (() => void) | undefined {
    if (this.#claimed.has(lockName)) return undefined;
    this.#claimed.add(lockName);
    return () => this.#claimed.delete(lockName);
  }

  /** Registers a running request; the returned function removes it. */
  add(authorization: string, idempotencyKey: string): () => void {
    const id = this.#id(authorization, idempotencyKey);
    this.#running.add(id);
    return () => this.#running.delete(id);
  }
}
