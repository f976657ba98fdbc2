// The one check of a refusal in tests: a Problem answer's status and code and, when given, the fields
// its errors name.
import assert from 'node:assert/strict';
import type { Answer } from '../harness.ts';

/** The fields a Problem's errors name, sorted. */
export function errorFields(answer: Answer): string[] {
  return ((answer.body?.errors ?? []) as Array<{ field: string }>).map((e) => e.field).sort();
}

export interface RefusalOptions {
  /** The errors name the fields in the order given, each also named in the detail. */
  inOrder?: boolean;
  /** The Problem carries the request's id, the same as its X-Request-Id header. */
  requestId?: boolean;
  /**
   * The whole Problem document is checked against the contract, with its `type` under this public
   * base URL: JSON, `status` and `code` as answered, a title and a detail, the request's id, and no
   * field beyond the contract's.
   */
  problemBase?: string;
}

const PROBLEM_FIELDS = ['type', 'title', 'status', 'detail', 'code', 'requestId', 'errors'];

function wholeProblem(answer: Answer, status: number, code: string, publicBase: string): void {
  assert.match(answer.headers.get('content-type') ?? '', /^application\/json/);
  const b = answer.body;
  assert.equal(b.status, status);
  assert.equal(b.type, `${publicBase}/errors#${code.replaceAll('_', '-')}`);
  assert.equal(typeof b.title, 'string');
  assert.ok(b.title.length > 0);
  assert.equal(typeof b.detail, 'string');
  assert.ok(b.detail.length > 0);
  for (const k of Object.keys(b)) assert.ok(PROBLEM_FIELDS.includes(k), `unexpected Problem field ${k}`);
}

/**
 * Asserts that `answer` is a Problem with `status` and `code` and, when `fields` are given, that its
 * errors name exactly those fields: in any order, or with `inOrder` in that order, each also named in
 * the detail. `requestId` and `problemBase` check more of the Problem (RefusalOptions).
 */
export function refusedWith(
  answer: Answer,
  status: number,
  code: string,
  fields?: string[],
  options: RefusalOptions = {},
): void {
  assert.equal(answer.status, status, answer.text);
  assert.equal(answer.body?.code, code, answer.text);
  if (options.requestId || options.problemBase !== undefined) {
    assert.ok(answer.body.requestId, 'requestId is set');
    assert.equal(answer.body.requestId, answer.headers.get('x-request-id'));
  }
  if (options.problemBase !== undefined) wholeProblem(answer, status, code, options.problemBase);
  if (!fields) return;
  if (!options.inOrder) {
    assert.deepEqual(errorFields(answer), [...fields].sort(), answer.text);
    return;
  }
  const errors = answer.body.errors as Array<{ field: string }>;
  assert.deepEqual(
    errors.map((e) => e.field),
    fields,
    answer.text,
  );
  for (const field of fields) assert.match(answer.body.detail, new RegExp(field.replaceAll('.', '\\.')));
}
