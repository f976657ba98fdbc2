// Owns knowing how long work waits for a database connection: every transaction (src/platform/db/
// transaction.ts) is counted from when it asks for a connection until it has one (a PostgreSQL pool's
// client, or the embedded database's one session), per Database. Read by load shedding
// (src/platform/http/load-shedding.ts): the longest current wait says how long a newcomer would wait
// behind it, and by the operator's metrics.
import { performance } from 'node:perf_hooks';
import type { Database } from './database.ts';

// Insertion-ordered: the first entry is the one waiting longest.
const waiting = new WeakMap<Database, Set<{ since: number }>>();

/** Counts a wait for a connection of db; call the answer once the connection is had (or not). */
export function awaitConnection(db: Database): () => void {
  let entries = waiting.get(db);
  if (!entries) {
    entries = new Set();
    waiting.set(db, entries);
  }
  const entry = { since: performance.now() };
  entries.add(entry);
  const set = entries;
  return () => {
    set.delete(entry);
  };
}

/** How long the longest current wait for a connection of db has lasted, in milliseconds (0: none). */
export function longestConnectionWaitMs(db: Database): number {
  const entries = waiting.get(db);
  if (entries) for (const entry of entries) return performance.now() - entry.since;
  return 0;
}

/** How many transactions wait for a connection of db now. */
export function connectionWaiters(db: Database): number {
  return waiting.get(db)?.size ?? 0;
}
