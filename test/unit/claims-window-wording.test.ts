// How the insurer's answer window is worded in a claim's message (windowWording in
// src/claims/jobs.ts): seconds under a minute, minutes from one minute, singular for one.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { windowWording } from '../../src/claims/jobs.ts';

test('a window under a minute is worded in seconds, one of a minute or more in minutes', () => {
  assert.equal(windowWording(30_000), '30 seconds');
  assert.equal(windowWording(1_000), '1 second');
  assert.equal(windowWording(400), '1 second');
  assert.equal(windowWording(60_000), '1 minute');
  assert.equal(windowWording(5 * 60_000), '5 minutes');
});
