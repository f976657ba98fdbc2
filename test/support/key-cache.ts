// What the API-key cache tests share: counting the key look-ups a service makes (PostgreSQL's own
// function statistics), asking until an answer changes, waiting until the cache follows and has heard
// the key changes announced, and a practice whose key is remembered.
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import type pg from 'pg';
import { KEY_CHANGES_CHANNEL } from '../../src/auth/key-cache.ts';
import { randomToken } from '../../src/platform/ids.ts';
import { type Answer, apiClient, type TestPractice, type TestService } from '../harness.ts';

export const UNKNOWN_PATIENT = '/patients/pat_0000000000000000000000';
export const PROMPTLY_MS = 2000;

/**
 * Counts the calls of the key look-up function. The service runs on one connection (PGlite's, or a
 * pool of one), whose statistics are flushed on demand just before they are read.
 */
export async function lookUps(svc: TestService): Promise<number> {
  await sql`SELECT pg_stat_force_next_flush()`.execute(svc.db.kysely);
  const result = await sql<{ calls: number }>`
    SELECT coalesce(sum(calls), 0)::int AS calls FROM pg_stat_user_functions
    WHERE funcname = 'api_key_for_request'`.execute(svc.db.kysely);
  return result.rows[0]!.calls;
}

export async function countLookUps(svc: TestService): Promise<void> {
  if (svc.backend === 'postgres') {
    const database = (await sql<{ name: string }>`SELECT current_database() AS name`.execute(svc.db.kysely))
      .rows[0]!.name;
    // For connections opened later; the one open now is set below.
    await sql.raw(`ALTER DATABASE "${database}" SET track_functions = 'pl'`).execute(svc.db.kysely);
  }
  await sql`SET track_functions = 'pl'`.execute(svc.db.kysely);
}

/** Asks until `done` holds or `ms` pass; answers the last answer, how long it took and how many asks. */
export async function askUntil(
  ask: () => Promise<Answer>,
  done: (answer: Answer) => boolean,
  ms = PROMPTLY_MS,
): Promise<{ answer: Answer; ms: number; asks: number }> {
  const started = Date.now();
  for (let asks = 1; ; asks++) {
    const answer = await ask();
    if (done(answer) || Date.now() - started > ms) return { answer, ms: Date.now() - started, asks };
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Waits until `condition` holds, failing after `ms`; answers how long it took. */
export async function until(condition: () => boolean, ms: number, what: string): Promise<number> {
  const started = Date.now();
  while (!condition()) {
    assert.ok(Date.now() - started < ms, `${what} within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return Date.now() - started;
}

/**
 * Waits until the service's key cache follows key changes. Until its listening connection first hears
 * its heartbeat the cache serves nothing, by design, which on a loaded machine can outlast a test's
 * first requests and so add look-ups to its count.
 */
export async function followingKeyChanges(svc: TestService): Promise<void> {
  await until(() => svc.deps.keyCache.following, 15_000, 'the key cache follows key changes');
}

/**
 * Waits until the service's key cache has heard every key change announced so far. A write's
 * announcement reaches the cache on the listening connection, after the write's answer; heard late,
 * it drops what the requests after that write remembered, and a count of look-ups taken across it
 * finds one more. Announcements reach a listener in commit order, so a marker announced now (a
 * practice id no row has) is heard after them all. A cache that follows no changes remembers nothing,
 * so there is nothing to wait for.
 */
export async function keyChangesHeard(svc: TestService): Promise<void> {
  const cache = svc.deps.keyCache;
  if (!cache.following) return;
  const marker = `prac_marker_${randomToken()}`;
  let heard = false;
  const forgetPractice = cache.forgetPractice;
  cache.forgetPractice = function (practiceId: string) {
    if (practiceId === marker) heard = true;
    forgetPractice.call(this, practiceId);
  };
  try {
    await sql`SELECT pg_notify(${KEY_CHANGES_CHANNEL}, ${marker})`.execute(svc.db.kysely);
    await until(() => heard, 15_000, 'the key cache hears a change announced');
  } finally {
    cache.forgetPractice = forgetPractice;
  }
}

/** A practice whose key has just let a request in (and so is remembered). */
export async function rememberedPractice(
  svc: TestService,
): Promise<TestPractice & { ask: () => Promise<Answer> }> {
  const practice = await svc.newPractice();
  await keyChangesHeard(svc);
  const api = apiClient(svc, practice.key);
  const ask = () => api('GET', UNKNOWN_PATIENT);
  for (let i = 0; i < 2; i++) assert.equal((await ask()).status, 404);
  return { ...practice, ask };
}

/**
 * A change made by hand on a connection of its own, the way docs/operator-guide.md "Changing keys by hand" says:
 * the statement and the NOTIFY the service's own writes send, in one transaction.
 */
export async function changeByHand(
  admin: pg.Client,
  practiceId: string,
  statement: string,
  values: unknown[] = [],
): Promise<void> {
  await admin.query('BEGIN');
  try {
    await admin.query(statement, values);
    await admin.query('SELECT pg_notify($1, $2)', [KEY_CHANGES_CHANNEL, practiceId]);
    await admin.query('COMMIT');
  } catch (error) {
    await admin.query('ROLLBACK');
    throw error;
  }
}
