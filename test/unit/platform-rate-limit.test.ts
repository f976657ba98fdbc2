// The rate limits' insurance (src/platform/http/rate-limit.ts) without a database: when the shared
// store fails or is too slow, requests are counted in the process's memory with the same allowance,
// so they are neither refused nor failed for want of a count, the store is left alone for a while,
// and the failure is told once a minute.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type RateLimitStore, RateLimits } from '../../src/platform/http/rate-limit.ts';

test('a store that fails: counted in memory, the same allowance, the failure told once', async () => {
  const told: number[] = [];
  const store: RateLimitStore = { query: () => Promise.reject(new Error('connection refused')) };
  const limits = new RateLimits({ store, onStoreFailure: (_error, failures) => told.push(failures) });
  assert.equal(limits.shared, true);
  const states = [];
  for (let i = 0; i < 3; i++) states.push(await limits.consume('client:cli_1', 2));
  assert.deepEqual(
    states.map((s) => [s.allowed, s.remaining]),
    [
      [true, 1],
      [true, 0],
      [false, 0],
    ],
  );
  assert.ok(states[2]!.retryAfterSeconds >= 1 && states[2]!.retryAfterSeconds <= 60);
  assert.deepEqual(told, [1], 'told once within the minute');
});

test('after a failure the store is left alone for a while, then asked again', async () => {
  let asked = 0;
  let failing = true;
  const store: RateLimitStore = {
    query: () => {
      asked += 1;
      return failing ? Promise.reject(new Error('down')) : new Promise(() => {});
    },
  };
  const limits = new RateLimits({ store, storeRetryAfterMs: 100, storeTimeoutMs: 20 });
  for (let i = 0; i < 5; i++) assert.equal((await limits.consume('client:cli_3', 100)).allowed, true);
  assert.equal(asked, 1, 'asked once, then counted in memory');
  await new Promise((resolve) => setTimeout(resolve, 120));
  failing = false;
  assert.equal((await limits.consume('client:cli_3', 100)).remaining, 94);
  assert.equal(asked, 2, 'asked again after the pause');
});

test('a store that does not answer in time: counted in memory after the time-out', async () => {
  const told: string[] = [];
  // The store never answers: a count that comes back at all was made in memory, by the time-out.
  const store: RateLimitStore = { query: () => new Promise(() => {}) };
  const limits = new RateLimits({
    store,
    storeTimeoutMs: 50,
    onStoreFailure: (error) => told.push(error instanceof Error ? error.message : String(error)),
  });
  const state = await limits.consume('ip:192.0.2.1', 5);
  assert.equal(state.allowed, true);
  assert.equal(state.remaining, 4);
  assert.deepEqual(told, ['the rate-limit store did not answer in 50 ms']);
});

test("without a store, counts are the process's own", async () => {
  const limits = new RateLimits();
  assert.equal(limits.shared, false);
  assert.equal((await limits.consume('client:cli_2', 1)).allowed, true);
  assert.equal((await limits.consume('client:cli_2', 1)).allowed, false);
});
