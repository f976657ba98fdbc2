// Owns remembering the key rows that authenticated, so that a client's next requests skip the key
// look-up. Only a row that let a request in is remembered, and memory only ever lets a request in: a
// refusal is always decided by the database (src/auth/authenticate.ts), so every 401 costs the same.
//
// A remembered row is served as it is for the first half of its time to live (soft), then still
// served while one background look-up refreshes it, and never once the whole time (hard) has passed.
// It is dropped at once when its practice's key, client or practice row changes (the NOTIFY the
// writing transaction sends, src/platform/key-changes.ts, and this process's own admin writes), and everything is dropped whenever listening
// for those changes starts, starts again or breaks: nothing is served from memory while no one listens.
// A look-up that was on its way when its practice's rows changed is not remembered (its row may
// predate the change). Bounded: the least recently used row goes first.
import type { Clock } from '../platform/clock.ts';
import type { Database } from '../platform/db/database.ts';
import { KEY_CHANGES_CHANNEL } from '../platform/key-changes.ts';

export { KEY_CHANGES_CHANNEL };

/** At most this many rows are remembered. */
export const MAX_CACHED_KEYS = 10_000;

export interface KeyCacheOptions {
  /** How long a row may be served from memory at most; 0 turns the cache off. */
  ttlMs: number;
  /** When a row served from memory is refreshed in the background; default half of ttlMs. */
  refreshAfterMs?: number;
  maxEntries?: number;
  clock: Clock;
}

/** A look-up on its way: what it finds is remembered only if nothing it may predate changed since. */
export interface Fill {
  readonly epoch: number;
  settled: boolean;
}

interface Entry<R> {
  row: R;
  storedAt: number;
  refreshing: boolean;
}

export class KeyCache<R extends { practice_id: string }> {
  readonly ttlMs: number;
  readonly refreshAfterMs: number;
  readonly maxEntries: number;
  readonly #clock: Clock;
  /** Least recently used first (a Map keeps insertion order; a use moves the entry to the end). */
  readonly #entries = new Map<string, Entry<R>>();
  readonly #byPractice = new Map<string, Set<string>>();
  #following = false;
  /** Counts invalidations; a fill remembers the count it started at. */
  #epoch = 0;
  #flushedAt = 0;
  /** Practices invalidated while fills were on their way, and when; emptied when none is. */
  readonly #forgottenAt = new Map<string, number>();
  #fills = 0;

  constructor(options: KeyCacheOptions) {
    this.ttlMs = Math.max(0, options.ttlMs);
    this.refreshAfterMs = Math.min(options.refreshAfterMs ?? Math.floor(this.ttlMs / 2), this.ttlMs);
    this.maxEntries = Math.max(1, options.maxEntries ?? MAX_CACHED_KEYS);
    this.#clock = options.clock;
  }

  get enabled(): boolean {
    return this.ttlMs > 0;
  }

  /** True while changes are listened for, so that remembered rows may be served. */
  get following(): boolean {
    return this.#following;
  }

  get size(): number {
    return this.#entries.size;
  }

  /**
   * The remembered row of keyId, if it may still be served: `stale` once it is due for a refresh.
   * The caller judges it afresh (secret, revocation, expiry against its clock, client, address).
   */
  peek(keyId: string): { row: R; stale: boolean } | undefined {
    if (!this.#following) return undefined;
    const entry = this.#entries.get(keyId);
    if (!entry) return undefined;
    const age = this.#clock.now().getTime() - entry.storedAt;
    // A clock set back makes the age negative: no row is trusted for longer than it was looked up.
    if (age < 0 || age >= this.ttlMs) {
      this.forget(keyId);
      return undefined;
    }
    this.#entries.delete(keyId);
    this.#entries.set(keyId, entry);
    return { row: entry.row, stale: age >= this.refreshAfterMs };
  }

  /** Starts a look-up whose row may be remembered; every fill must be settled. */
  startFill(): Fill {
    this.#fills += 1;
    return { epoch: this.#epoch, settled: false };
  }

  /**
   * Starts the background refresh of a remembered row, unless one is on its way: the fill to settle,
   * or undefined when there is nothing to do.
   */
  claimRefresh(keyId: string): Fill | undefined {
    const entry = this.#entries.get(keyId);
    if (!entry || entry.refreshing) return undefined;
    entry.refreshing = true;
    return this.startFill();
  }

  /**
   * Ends a fill: a row is remembered (if nothing of its practice changed since the fill started and
   * changes are being followed), null forgets the key, undefined (the look-up failed) keeps what is
   * there.
   */
  settle(fill: Fill, keyId: string, found: R | null | undefined): void {
    if (fill.settled) return;
    fill.settled = true;
    this.#fills -= 1;
    const entry = this.#entries.get(keyId);
    if (entry) entry.refreshing = false;
    if (found === null) this.forget(keyId);
    else if (found !== undefined && this.#following && this.enabled && !this.#changedSince(fill, found))
      this.#store(keyId, found);
    if (this.#fills === 0) this.#forgottenAt.clear();
  }

  forget(keyId: string): void {
    const entry = this.#entries.get(keyId);
    if (!entry) return;
    this.#entries.delete(keyId);
    const keys = this.#byPractice.get(entry.row.practice_id);
    keys?.delete(keyId);
    if (keys?.size === 0) this.#byPractice.delete(entry.row.practice_id);
  }

  /** The rows of a practice's keys, clients or the practice itself changed. */
  forgetPractice(practiceId: string): void {
    this.#epoch += 1;
    if (this.#fills > 0) this.#forgottenAt.set(practiceId, this.#epoch);
    for (const keyId of this.#byPractice.get(practiceId) ?? []) this.#entries.delete(keyId);
    this.#byPractice.delete(practiceId);
  }

  /** Forgets everything, including what look-ups on their way would bring. */
  flush(): void {
    this.#epoch += 1;
    this.#flushedAt = this.#epoch;
    this.#entries.clear();
    this.#byPractice.clear();
  }

  /** Changes are heard again (or for the first time): what was missed meanwhile is unknown. */
  resume(): void {
    this.flush();
    this.#following = true;
  }

  /** Changes can no longer be heard: serve nothing from memory until they are again. */
  pause(): void {
    this.flush();
    this.#following = false;
  }

  /**
   * Follows the key changes the writing transactions announce (src/platform/key-changes.ts), through the database's listen (its own connection
   * on PostgreSQL, the single session on PGlite). Returns how to stop; until the first LISTEN is in
   * place, and whenever it is lost, the cache serves nothing.
   */
  follow(db: Database): () => Promise<void> {
    if (!this.enabled || !db.listen) return async () => {};
    const stop = db.listen(
      KEY_CHANGES_CHANNEL,
      (practiceId) => {
        if (practiceId === undefined) this.resume();
        else if (practiceId === '') this.flush();
        else this.forgetPractice(practiceId);
      },
      () => this.pause(),
    );
    return async () => {
      this.pause();
      await stop();
    };
  }

  #changedSince(fill: Fill, row: R): boolean {
    return this.#flushedAt > fill.epoch || (this.#forgottenAt.get(row.practice_id) ?? 0) > fill.epoch;
  }

  #store(keyId: string, row: R): void {
    this.forget(keyId);
    this.#entries.set(keyId, { row, storedAt: this.#clock.now().getTime(), refreshing: false });
    let keys = this.#byPractice.get(row.practice_id);
    if (!keys) {
      keys = new Set();
      this.#byPractice.set(row.practice_id, keys);
    }
    keys.add(keyId);
    while (this.#entries.size > this.maxEntries) {
      const oldest = this.#entries.keys().next().value;
      if (oldest === undefined) break;
      this.forget(oldest);
    }
  }
}
