// The in-flight limit under a latency target: answers slower than the target lower it by a factor, at
// most once for the requests that were inside when it was last lowered, never below its floor; quick
// answers raise it by one per limit's worth of them, never above its ceiling. Without a target, or
// without a ceiling, it never moves. Times are given to it, so nothing here depends on the machine.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AdaptiveInFlightLimit, DECREASE_FACTOR, FLOOR } from '../src/platform/http/adaptive-limit.ts';

const TARGET_MS = 250;

test('a slow answer lowers the limit by the factor; the slow answers of requests admitted before that cut do not lower it again', () => {
  const limit = new AdaptiveInFlightLimit(40, TARGET_MS);
  assert.equal(limit.current, 40);
  // Twenty requests admitted at 0..19 ms all answer slowly, from 1000 ms on: one cut, at the first.
  for (let i = 0; i < 20; i += 1) limit.answered(i, 1000, 1000 + i);
  assert.equal(limit.current, Math.floor(40 * DECREASE_FACTOR));
  // One admitted after that cut answers slowly: the next cut.
  limit.answered(1001, 600, 1601);
  assert.equal(limit.current, Math.floor(40 * DECREASE_FACTOR * DECREASE_FACTOR));
});

test('while every answer is slow the limit comes down round by round to its floor, and no lower', () => {
  const limit = new AdaptiveInFlightLimit(40, TARGET_MS);
  let now = 0;
  for (let round = 0; round < 100; round += 1) {
    now += 1000;
    limit.answered(now - 500, 500, now);
  }
  assert.equal(limit.current, FLOOR);
  const small = new AdaptiveInFlightLimit(2, TARGET_MS);
  small.answered(0, 1000, 1000);
  assert.equal(small.current, 2, 'a ceiling below the floor is the floor');
});

test('quick answers raise a lowered limit by one per limit of them, up to the ceiling and no further', () => {
  const limit = new AdaptiveInFlightLimit(20, TARGET_MS);
  let now = 0;
  for (let round = 0; round < 5; round += 1) {
    now += 1000;
    limit.answered(now - 500, 500, now);
  }
  const lowered = limit.current;
  assert.ok(lowered < 20 && lowered >= FLOOR, `lowered to ${lowered}`);
  // As many quick answers as the limit: one more.
  for (let i = 0; i < lowered; i += 1) limit.answered(now + i, 10, now + i + 10);
  assert.equal(limit.current, lowered + 1);
  for (let i = 0; i < 1000; i += 1) limit.answered(now + 100 + i, 10, now + 110 + i);
  assert.equal(limit.current, 20);
});

test('an answer exactly at the target counts as quick', () => {
  const limit = new AdaptiveInFlightLimit(10, TARGET_MS);
  limit.answered(0, TARGET_MS, TARGET_MS);
  assert.equal(limit.current, 10);
  limit.answered(0, TARGET_MS + 1, TARGET_MS + 1);
  assert.equal(limit.current, 9);
});

test('without a target the limit stays the ceiling; without a ceiling there is no limit, whatever the target', () => {
  const fixed = new AdaptiveInFlightLimit(20, 0);
  for (let i = 0; i < 50; i += 1) fixed.answered(i * 1000, 5000, i * 1000 + 5000);
  assert.equal(fixed.current, 20);
  assert.equal(fixed.targetMs, 0);
  const none = new AdaptiveInFlightLimit(0, TARGET_MS);
  for (let i = 0; i < 50; i += 1) none.answered(i * 1000, 5000, i * 1000 + 5000);
  assert.equal(none.current, 0);
  assert.equal(none.targetMs, 0, 'no target is steered by without a limit');
});
