// The factories every test builds its data with through the public API: a patient, a coverage, a
// visit (encounter) and its bill. Each posts with a fresh Idempotency-Key; the create factories check
// the 201 and answer the created resource, bill answers the raw Answer so a test can check it.
// The fixture modules (billing, claims, webhooks) shape their own defaults on top of these. Request
// and answer bodies are typed from the route schemas (src/*/schemas.ts), so a fixture that sends a
// field the API no longer takes, or reads one it no longer answers, fails to compile.
import assert from 'node:assert/strict';
import type { Encounter, EncounterRequest } from '../../src/encounters/schemas.ts';
import type { Coverage, CoverageRequest } from '../../src/insurance/schemas.ts';
import type { BillRequest } from '../../src/invoices/schemas.ts';
import type { Patient, PatientRequest } from '../../src/patients/schemas.ts';
import { type Answer, type apiClient, patientBody, uniqueKey } from '../harness.ts';

export type Api = ReturnType<typeof apiClient>;
// biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON answers
export type Json = any;

/** Registers a patient (the harness's patientBody unless a body is given); answers the patient. */
export async function createPatient(api: Api, body: PatientRequest = patientBody()): Promise<Patient> {
  const answer = await api('POST', '/patients', { body, idempotencyKey: uniqueKey() });
  assert.equal(answer.status, 201, answer.text);
  return answer.body;
}

/** Adds a coverage to a patient; answers the coverage. */
export async function createCoverage(api: Api, patientId: string, body: CoverageRequest): Promise<Coverage> {
  const answer = await api('POST', `/patients/${patientId}/coverages`, { body, idempotencyKey: uniqueKey() });
  assert.equal(answer.status, 201, answer.text);
  return answer.body;
}

/** Records a visit; answers the encounter. */
export async function createEncounter(api: Api, body: EncounterRequest): Promise<Encounter> {
  const answer = await api('POST', '/encounters', { body, idempotencyKey: uniqueKey() });
  assert.equal(answer.status, 201, answer.text);
  return answer.body;
}

/**
 * Bills a visit (POST /encounters/{id}/bill, without a body unless one is given); answers as is, a
 * Problem or the bill's result (BillResult in src/invoices/schemas.ts).
 */
export function bill(
  api: Api,
  encounterId: string,
  body?: BillRequest,
  idempotencyKey = uniqueKey(),
): Promise<Answer> {
  return api('POST', `/encounters/${encounterId}/bill`, {
    ...(body !== undefined ? { body } : {}),
    idempotencyKey,
  });
}
