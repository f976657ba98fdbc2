// The key cache's own rules (src/auth/key-cache.ts) without a database, on a pinned clock: a row is
// served fresh, then stale (due for one background refresh), then not at all; nothing is served while
// changes are not heard; a practice's change drops its rows and the look-ups that were on their way
// for it; the least recently used row goes first; and the database's signals drive it.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { KEY_CHANGES_CHANNEL, KeyCache } from '../../src/auth/key-cache.ts';
import type { Database } from '../../src/platform/db/database.ts';

interface Row {
  key_id: string;
  practice_id: string;
}

const T0 = Date.parse('2026-03-01T10:00:00Z');

function pinnedClock() {
  let at = T0;
  return {
    now: () => new Date(at),
    advance(ms: number) {
      at += ms;
    },
    set(ms: number) {
      at = ms;
    },
  };
}

function cacheOf(options: { ttlMs?: number; maxEntries?: number } = {}) {
  const clock = pinnedClock();
  const cache = new KeyCache<Row>({ ttlMs: options.ttlMs ?? 60_000, clock, ...options });
  cache.resume();
  return { cache, clock };
}

function remember(cache: KeyCache<Row>, keyId: string, practiceId = 'prc_a'): void {
  cache.settle(cache.startFill(), keyId, { key_id: keyId, practice_id: practiceId });
}

describe('key cache', () => {
  test('a row is fresh for half its time, then stale, and gone once the whole time has passed', () => {
    const { cache, clock } = cacheOf({ ttlMs: 60_000 });
    assert.equal(cache.refreshAfterMs, 30_000);
    remember(cache, 'key_1');
    assert.deepEqual(cache.peek('key_1'), { row: { key_id: 'key_1', practice_id: 'prc_a' }, stale: false });
    clock.advance(29_999);
    assert.equal(cache.peek('key_1')?.stale, false);
    clock.advance(1);
    assert.equal(cache.peek('key_1')?.stale, true);
    clock.advance(29_999);
    assert.equal(cache.peek('key_1')?.stale, true);
    clock.advance(1);
    assert.equal(cache.peek('key_1'), undefined);
    assert.equal(cache.size, 0);
  });

  test('a clock set back trusts no row', () => {
    const { cache, clock } = cacheOf();
    remember(cache, 'key_1');
    clock.set(T0 - 1);
    assert.equal(cache.peek('key_1'), undefined);
  });

  test('one background refresh at a time; what it finds replaces, drops or keeps the row', () => {
    const { cache, clock } = cacheOf({ ttlMs: 60_000 });
    remember(cache, 'key_1');
    clock.advance(40_000);
    const refresh = cache.claimRefresh('key_1');
    assert.ok(refresh);
    assert.equal(cache.claimRefresh('key_1'), undefined, 'a second refresh while one is on its way');
    // The look-up failed: the row stays, as stale as it was, and may be refreshed again.
    cache.settle(refresh, 'key_1', undefined);
    assert.equal(cache.peek('key_1')?.stale, true);
    const again = cache.claimRefresh('key_1');
    assert.ok(again);
    cache.settle(again, 'key_1', { key_id: 'key_1', practice_id: 'prc_a' });
    assert.equal(cache.peek('key_1')?.stale, false, 'refreshed: fresh again from now');
    clock.advance(59_999);
    assert.ok(cache.peek('key_1'));
    const gone = cache.claimRefresh('key_1');
    assert.ok(gone);
    cache.settle(gone, 'key_1', null);
    assert.equal(cache.peek('key_1'), undefined, 'the key no longer lets anyone in');
    assert.equal(cache.claimRefresh('key_2'), undefined, 'nothing to refresh');
  });

  test('a fill settles once', () => {
    const { cache } = cacheOf();
    const fill = cache.startFill();
    cache.settle(fill, 'key_1', { key_id: 'key_1', practice_id: 'prc_a' });
    cache.forget('key_1');
    cache.settle(fill, 'key_1', { key_id: 'key_1', practice_id: 'prc_a' });
    assert.equal(cache.peek('key_1'), undefined);
  });

  test("a practice's change drops its rows, and look-ups on their way for it are not remembered", () => {
    const { cache } = cacheOf();
    remember(cache, 'key_a1', 'prc_a');
    remember(cache, 'key_a2', 'prc_a');
    remember(cache, 'key_b1', 'prc_b');
    const before = cache.startFill();
    const beforeOther = cache.startFill();
    cache.forgetPractice('prc_a');
    const after = cache.startFill();
    assert.equal(cache.peek('key_a1'), undefined);
    assert.equal(cache.peek('key_a2'), undefined);
    assert.ok(cache.peek('key_b1'));
    cache.settle(before, 'key_a3', { key_id: 'key_a3', practice_id: 'prc_a' });
    assert.equal(cache.peek('key_a3'), undefined, 'its row may predate the change');
    cache.settle(beforeOther, 'key_b2', { key_id: 'key_b2', practice_id: 'prc_b' });
    assert.ok(cache.peek('key_b2'), 'another practice is not concerned');
    cache.settle(after, 'key_a4', { key_id: 'key_a4', practice_id: 'prc_a' });
    assert.ok(cache.peek('key_a4'), 'looked up after the change');
  });

  test('a flush drops every row and every look-up on its way', () => {
    const { cache } = cacheOf();
    remember(cache, 'key_a1', 'prc_a');
    remember(cache, 'key_b1', 'prc_b');
    const before = cache.startFill();
    cache.flush();
    assert.equal(cache.size, 0);
    cache.settle(before, 'key_c1', { key_id: 'key_c1', practice_id: 'prc_c' });
    assert.equal(cache.peek('key_c1'), undefined);
  });

  test('nothing is served or remembered while changes are not heard', () => {
    const clock = pinnedClock();
    const cache = new KeyCache<Row>({ ttlMs: 60_000, clock });
    assert.equal(cache.following, false);
    remember(cache, 'key_1');
    assert.equal(cache.size, 0, 'not following yet');
    cache.resume();
    remember(cache, 'key_1');
    assert.ok(cache.peek('key_1'));
    const onItsWay = cache.startFill();
    cache.pause();
    assert.equal(cache.size, 0);
    remember(cache, 'key_2');
    assert.equal(cache.peek('key_2'), undefined);
    cache.resume();
    cache.settle(onItsWay, 'key_3', { key_id: 'key_3', practice_id: 'prc_a' });
    assert.equal(cache.peek('key_3'), undefined, 'started before the signals were lost');
  });

  test('bounded: the least recently used row goes first', () => {
    const { cache } = cacheOf({ maxEntries: 3 });
    remember(cache, 'key_1');
    remember(cache, 'key_2');
    remember(cache, 'key_3');
    assert.ok(cache.peek('key_1'));
    remember(cache, 'key_4');
    assert.equal(cache.size, 3);
    assert.equal(cache.peek('key_2'), undefined);
    for (const id of ['key_1', 'key_3', 'key_4']) assert.ok(cache.peek(id), id);
    cache.forgetPractice('prc_a');
    assert.equal(cache.size, 0);
  });

  test('a time to live of 0 is off: nothing is remembered and nothing listens', () => {
    const { cache } = cacheOf({ ttlMs: 0 });
    assert.equal(cache.enabled, false);
    remember(cache, 'key_1');
    assert.equal(cache.peek('key_1'), undefined);
    let listened = false;
    const db = {
      listen: () => {
        listened = true;
        return async () => {};
      },
    } as unknown as Database;
    cache.follow(db);
    assert.equal(listened, false);
  });

  test("the database's signals drive it: (re)connect, a practice, every practice, lost, stopped", async () => {
    const clock = pinnedClock();
    const cache = new KeyCache<Row>({ ttlMs: 60_000, clock });
    let signal: ((payload: string | undefined) => void) | undefined;
    let lost: (() => void) | undefined;
    let channel: string | undefined;
    let stopped = false;
    const db = {
      listen(on: string, onSignal: (payload: string | undefined) => void, onLost?: () => void) {
        channel = on;
        signal = onSignal;
        lost = onLost;
        return async () => {
          stopped = true;
        };
      },
    } as unknown as Database;
    const stop = cache.follow(db);
    assert.equal(channel, KEY_CHANGES_CHANNEL);
    assert.equal(cache.following, false, 'not before LISTEN is in place');
    signal!(undefined);
    assert.equal(cache.following, true);
    remember(cache, 'key_a1', 'prc_a');
    remember(cache, 'key_b1', 'prc_b');
    signal!('prc_a');
    assert.equal(cache.peek('key_a1'), undefined);
    assert.ok(cache.peek('key_b1'));
    signal!('');
    assert.equal(cache.size, 0);
    remember(cache, 'key_b1', 'prc_b');
    lost!();
    assert.equal(cache.following, false);
    assert.equal(cache.size, 0);
    signal!(undefined);
    assert.equal(cache.following, true, 'listening again');
    remember(cache, 'key_b1', 'prc_b');
    signal!(undefined);
    assert.equal(cache.size, 0, 'a reconnect flushes: signals may have been missed');
    await stop();
    assert.equal(stopped, true);
    assert.equal(cache.following, false);
  });
});
