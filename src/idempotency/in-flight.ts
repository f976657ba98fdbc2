// Owns the in-process register of creating requests still running, by API key and Idempotency-Key.
// A repeat arriving while its first is running is answered 409 at once, before it waits for a
// database connection (the embedded database has one, which the first request may hold). Repeats
// that reach another process are caught by the claim row in the database instead.
import { createHash } from 'node:crypto';

export class InFlightRequests {
  readonly #running = new Set<string>();

  #id(authorization: string, idempotencyKey: string): string {
    return `${createHash('sha256').update(authorization).digest('base64')}\u0000${idempotencyKey}`;
  }

  has(authorization: string | undefined, idempotencyKey: string | undefined): boolean {
    if (!authorization || !idempotencyKey) return false;
    return this.#running.has(this.#id(authorization, idempotencyKey));
  }

  /** Registers a running request; the returned function removes it. */
  add(authorization: string, idempotencyKey: string): () => void {
    const id = this.#id(authorization, idempotencyKey);
    this.#running.add(id);
    return () => this.#running.delete(id);
  }
}
