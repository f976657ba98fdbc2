// What the race tests share: how many times a pair is sent together (enough for the two to interleave
// on PostgreSQL), that no answer of a race is a 5xx, and which of two racing deletes won.
import assert from 'node:assert/strict';
import type { Answer } from '../harness.ts';

export const ROUNDS = 30;

export function noServerError(...answers: Answer[]): void {
  for (const a of answers) assert.ok(a.status < 500, `${a.status} ${a.text}`);
}

/** Of two deletes of one record sent together, exactly one answers 200 and the other 404 not_found; answers the winner. */
export function oneDeleteWon([first, second]: [Answer, Answer]): Answer {
  noServerError(first, second);
  const [won, lost] = first.status === 200 ? [first, second] : [second, first];
  assert.equal(won.status, 200, won.text);
  assert.equal(lost.status, 404, lost.text);
  assert.equal(lost.body.code, 'not_found', lost.text);
  return won;
}
