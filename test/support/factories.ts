// The factories every test builds its data with through the public API: a patient, a coverage, a
// visit (encounter) and its bill. Each posts with a fresh Idempotency-Key; the create factories check
// the 201 and answer the created resource, bill answers the raw Answer so a test can check it.
// The fixture modules (billing, claims, webhooks) shape their own defaults on top of these.
import assert from 'node:assert/strict';
import { type Answer, type apiClient, patientBody, uniqueKey } from '../harness.ts';

export type Api = ReturnType<typeof apiClient>;
// biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON answers
export type Json = any;

/** Registers a patient (the harness's patientBody unless a body is given); answers the patient. */
export async function createPatient(api: Api, body: Record<string, unknown> = patientBody()): Promise<Json> {
  const answer = await api('POST', '/patients', { body, idempotencyKey: uniqueKey() });
  assert.equal(answer.status, 201, answer.text);
  return answer.body;
}

/** Adds a coverage to a patient; answers the coverage. */
export async function createCoverage(
  api: Api,
  patientId: string,
  body: Record<string, unknown>,
): Promise<Json> {
  const answer = await api('POST', `/patients/${patientId}/coverages`, { body, idempotencyKey: uniqueKey() });
  assert.equal(answer.status, 201, answer.text);
  return answer.body;
}

/** Records a visit; answers the encounter. */
export async function createEncounter(api: Api, body: Record<string, unknown>): Promise<Json> {
  const answer = await api('POST', '/encounters', { body, idempotencyKey: uniqueKey() });
  assert.equal(answer.status, 201, answer.text);
  return answer.body;
}

/** Bills a visit (POST /encounters/{id}/bill, without a body unless one is given); answers as is. */
export function bill(
  api: Api,
  encounterId: string,
  body?: unknown,
  idempotencyKey = uniqueKey(),
): Promise<Answer> {
  return api('POST', `/encounters/${encounterId}/bill`, {
    ...(body !== undefined ? { body } : {}),
    idempotencyKey,
  });
}
