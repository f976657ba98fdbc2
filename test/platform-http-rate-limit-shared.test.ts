// Rate limits shared by API processes (PostgreSQL; src/platform/http/rate-limit.ts, migration 0016):
// two processes on one database count one client's requests together, so together they refuse past
// its allowance, with the X-RateLimit headers counting down across both and one window. Windows are
// opened and ended on the database server's clock: a process whose clock runs ahead neither ends the
// others' windows early nor opens longer ones. A count whose store query is shed by load shedding
// refuses its request with the shed 503 and counts nothing, in the store or in memory.
import assert from 'node:assert/strict';
import { after, before, describe, mock, test } from 'node:test';
import { sql } from 'kysely';
import { FirstConnectionBound, runWithConnectionBound } from '../src/platform/db/connection-waits.ts';
import { asOperator } from '../src/platform/db/transaction.ts';
import { RequestShed } from '../src/platform/http/load-shedding.ts';
import {
  purgeExpiredRateLimits,
  type RateLimitState,
  type RateLimitStore,
  RateLimits,
} from '../src/platform/http/rate-limit.ts';
import { type ServeProcess, startServeProcess } from './child-service.ts';
import { type Answer, apiClient, call, startService, type TestService } from './harness.ts';

const UNKNOWN_PATIENT = '/patients/pat_0000000000000000000000';

describe('rate limits shared by API processes (postgres)', { skip: !process.env.DATABASE_URL }, () => {
  let svc: TestService;
  let child: ServeProcess | undefined;
  before(async () => {
    svc = await startService('postgres');
    child = await startServeProcess({ databaseUrl: svc.databaseUrl! });
  });
  after(async () => {
    await child?.stop();
    await svc?.close();
  });

  test("two processes together refuse past one client's limit: 10 a minute, 6 requests to each, 2 refused", async () => {
    const practice = await svc.newPractice({ rateLimitPerMinute: 10 });
    const here = apiClient(svc, practice.key);
    const there = () => call(child!.baseUrl, 'GET', `/api/v1${UNKNOWN_PATIENT}`, { token: practice.key });
    const answers: Answer[] = [];
    for (let i = 0; i < 6; i++) {
      answers.push(await here('GET', UNKNOWN_PATIENT));
      answers.push(await there());
    }
    const statuses = answers.map((a) => a.status);
    assert.deepEqual(statuses, [...Array(10).fill(404), 429, 429], statuses.join(' '));
    assert.deepEqual(
      answers.map((a) => a.headers.get('x-ratelimit-remaining')),
      ['9', '8', '7', '6', '5', '4', '3', '2', '1', '0', '0', '0'],
    );
    for (const answer of answers) assert.equal(answer.headers.get('x-ratelimit-limit'), '10');
    // One window for both processes: the same end, give or take the rounding of a second.
    const resets = answers.map((a) => Number(a.headers.get('x-ratelimit-reset')));
    assert.ok(Math.max(...resets) - Math.min(...resets) <= 1, resets.join(' '));
    for (const refused of answers.slice(10)) {
      assert.equal(refused.body.code, 'rate_limited', refused.text);
      const retryAfter = Number(refused.headers.get('retry-after'));
      assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
    }
    // Another client of the same practice has its own allowance, in both processes.
    const other = await svc.newPractice({ rateLimitPerMinute: 10 });
    assert.equal((await apiClient(svc, other.key)('GET', UNKNOWN_PATIENT)).status, 404);
    const otherThere = await call(child!.baseUrl, 'GET', `/api/v1${UNKNOWN_PATIENT}`, { token: other.key });
    assert.equal(otherThere.status, 404);
    assert.equal(otherThere.headers.get('x-ratelimit-remaining'), '8');
  });

  test("processes whose clocks disagree share one window, timed by the database's clock", async () => {
    const store = { query: svc.db.poolQuery! };
    const onTime = new RateLimits({ store });
    const ahead = new RateLimits({ store });
    const realNow = Date.now.bind(Date);
    /** A count by the process whose clock runs `ms` ahead. */
    const consumeAhead = async (ms: number, key: string, perMinute: number): Promise<RateLimitState> => {
      const clock = mock.method(Date, 'now', () => realNow() + ms);
      try {
        return await ahead.consume(key, perMinute);
      } finally {
        clock.mock.restore();
      }
    };
    const suffix = `${process.pid}.${realNow()}`;

    // A window opened on time is not ended early by a process 90 s ahead, to which it looks a
    // minute and a half old: one allowance of 3 for both.
    const key = `clock-test:${suffix}`;
    const counts = [
      await onTime.consume(key, 3),
      await consumeAhead(90_000, key, 3),
      await onTime.consume(key, 3),
      await consumeAhead(90_000, key, 3),
      await onTime.consume(key, 3),
    ];
    assert.deepEqual(
      counts.map((c) => [c.allowed, c.remaining]),
      [
        [true, 2],
        [true, 1],
        [true, 0],
        [false, 0],
        [false, 0],
      ],
    );
    for (const refused of counts.slice(3)) {
      assert.ok(refused.retryAfterSeconds <= 60, `Retry-After ${refused.retryAfterSeconds}`);
    }

    // A window opened by a process 50 s ahead lasts a minute for everyone, not 110 s.
    const other = `clock-test-other:${suffix}`;
    const opened = await consumeAhead(50_000, other, 3);
    assert.ok(opened.resetEpochSeconds * 1000 - (realNow() + 50_000) <= 61_000, 'a minute by its own clock');
    const next = await onTime.consume(other, 3);
    assert.equal(next.remaining, 1);
    const left = next.resetEpochSeconds * 1000 - realNow();
    assert.ok(left > 55_000 && left <= 61_000, `the window ends ${left} ms from now`);
  });

  test('a process reserves a hundredth of a large allowance at a time: together never past it, the store asked once per reservation', async () => {
    let asked = 0;
    const store: RateLimitStore = {
      query: (query) => {
        asked += 1;
        return svc.db.poolQuery!(query);
      },
    };
    const one = new RateLimits({ store });
    const two = new RateLimits({ store });
    const key = `reservations:${process.pid}.${Date.now()}`;
    // 200 a minute: reservations of 2.
    const first = await one.consume(key, 200);
    assert.deepEqual([first.allowed, first.remaining], [true, 199]);
    const allowed = { one: 1, two: 0 };
    for (let i = 0; i < 149; i++) if ((await one.consume(key, 200)).allowed) allowed.one += 1;
    const twos = [];
    for (let i = 0; i < 60; i++) twos.push(await two.consume(key, 200));
    allowed.two = twos.filter((s) => s.allowed).length;
    assert.deepEqual(allowed, { one: 150, two: 50 });
    assert.equal(
      asked,
      75 + 25 + 1,
      'one count per reservation of 2; past the allowance, refused from memory',
    );
    assert.equal(twos[49]!.remaining, 0);
    assert.equal(twos.at(-1)!.retryAfterSeconds > 0, true);
    // Requests arriving together wait for one reservation instead of each asking the store.
    const together = `${key}:together`;
    asked = 0;
    const states = await Promise.all(Array.from({ length: 10 }, () => one.consume(together, 1000)));
    assert.equal(asked, 1);
    assert.deepEqual(
      states.map((s) => s.remaining),
      [999, 998, 997, 996, 995, 994, 993, 992, 991, 990],
    );
  });

  test('a reservation whose store query is shed refuses the request with the shed 503 and reserves nothing', async () => {
    let asked = 0;
    const store: RateLimitStore = {
      query: (query) => {
        asked += 1;
        return svc.db.poolQuery!(query);
      },
    };
    const limits = new RateLimits({ store });
    const key = `shed:${process.pid}.${Date.now()}`;
    const rows = async () =>
      (
        await sql<{ points: number }>`SELECT points FROM rate_limits WHERE key = ${`p200:${key}`}`.execute(
          svc.db.kysely,
        )
      ).rows;
    // Every connection taken: the count's query waits for one until its request's bound refuses it.
    const gate = svc.db.connections;
    const places = await Promise.all(Array.from({ length: gate.size }, () => gate.enter()));
    const bound = new FirstConnectionBound(50, () => new RequestShed('connection_wait'));
    let refusal: unknown;
    try {
      await runWithConnectionBound(bound, () => limits.consume(key, 200));
    } catch (error) {
      refusal = error;
    } finally {
      for (const since of places) gate.leave(since);
    }
    assert.ok(refusal instanceof RequestShed, `refused with the shed 503, not counted: ${String(refusal)}`);
    assert.equal(refusal.status, 503);
    assert.equal(refusal.headers['retry-after'], '1');
    assert.equal(asked, 1);
    assert.deepEqual(await rows(), [], 'nothing counted in the store');
    // Nothing reserved in memory either: the next count asks the store, and finds the whole allowance.
    const next = await limits.consume(key, 200);
    assert.deepEqual([next.allowed, next.remaining], [true, 199]);
    assert.equal(asked, 2);
    assert.deepEqual(await rows(), [{ points: 2 }]);
  });

  test('the worker purges counters whose window ended an hour ago, and no others', async () => {
    const practice = await svc.newPractice();
    assert.equal((await apiClient(svc, practice.key)('GET', UNKNOWN_PATIENT)).status, 404);
    const count = async () =>
      (await sql<{ n: number }>`SELECT count(*)::int AS n FROM rate_limits`.execute(svc.db.kysely)).rows[0]!
        .n;
    const before = await count();
    assert.ok(before > 0);
    assert.equal(await asOperator(svc.db, (trx) => purgeExpiredRateLimits(trx, new Date())), 0);
    const later = new Date(Date.now() + 2 * 60 * 60 * 1000);
    assert.equal(await asOperator(svc.db, (trx) => purgeExpiredRateLimits(trx, later)), before);
    assert.equal(await count(), 0);
  });
});
