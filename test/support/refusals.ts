// The one check of a refusal in tests: a Problem answer's status and code and, when given, the fields
// its errors name.
import assert from 'node:assert/strict';
import type { Answer } from '../harness.ts';

/** The fields a Problem's errors name, sorted. */
export function errorFields(answer: Answer): string[] {
  return ((answer.body?.errors ?? []) as Array<{ field: string }>).map((e) => e.field).sort();
}

/**
 * Asserts that `answer` is a Problem with `status` and `code` and, when `fields` are given, that its
 * errors name exactly those fields: in any order, or with `inOrder` in that order, each also named in
 * the detail.
 */
export function refusedWith(
  answer: Answer,
  status: number,
  code: string,
  fields?: string[],
  options: { inOrder?: boolean } = {},
): void {
  assert.equal(answer.status, status, answer.text);
  assert.equal(answer.body.code, code, answer.text);
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
