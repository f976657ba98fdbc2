// Owns loading data through the service's public API: patients (each with a unique externalId), their
// insurance coverages, and the template visit and invoice that bulk-sql.ts copies. Everything here goes
// through the same validation, audit and idempotency as any client's call.
import { randomBytes } from 'node:crypto';
import { expect, mapConcurrent } from './api.ts';
import { type Practice, provisionPractice } from './provision.ts';

export const EXTERNAL_SYSTEM = 'urn:bench:mrn';
/** A plan of the shipped catalogue whose rates cover the procedures below (claims are accepted). */
export const PLAN_ID = 'pln_ubuntu_essential';
/** A two-procedure visit, as the claims tests bill it: tariff 0190 for J06.9 and 0191 for I10. */
export const VISIT = {
  diagnoses: [{ code: 'J06.9' }, { code: 'I10' }],
  procedures: [
    { code: '0190', diagnosisCodes: ['J06.9'] },
    { code: '0191', diagnosisCodes: ['I10'] },
  ],
};

export interface LoadedPatient {
  id: string;
  externalValue: string;
  /** The API's answer, copied as is into the baseline. */
  // biome-ignore lint/suspicious/noExplicitAny: the Patient answer, passed through
  answer: any;
}

/** A patient body like the tests', with a unique practice number. */
export function patientBody(externalValue: string) {
  return {
    givenNames: ['Lerato', 'Grace'],
    lastName: 'Dlamini',
    birthDate: '1990-02-28',
    gender: 'female',
    externalId: { system: EXTERNAL_SYSTEM, value: externalValue },
  };
}

export async function createPatients(
  baseUrl: string,
  key: string,
  count: number,
  concurrency = 16,
): Promise<LoadedPatient[]> {
  const prefix = randomBytes(3).toString('hex');
  return mapConcurrent(
    Array.from({ length: count }, (_, i) => `seed-${prefix}-${i}`),
    concurrency,
    async (externalValue) => {
      const answer = await expect(201, baseUrl, 'POST', '/api/v1/patients', {
        token: key,
        body: patientBody(externalValue),
        idempotent: true,
      });
      return { id: answer.body.id as string, externalValue, answer: answer.body };
    },
  );
}

export async function addCoverages(baseUrl: string, key: string, patientIds: string[]): Promise<void> {
  await mapConcurrent(patientIds, 16, (patientId, i) =>
    expect(201, baseUrl, 'POST', `/api/v1/patients/${patientId}/coverages`, {
      token: key,
      body: { planId: PLAN_ID, memberNumber: `M-${100000 + i}` },
      idempotent: true,
    }),
  );
}

/** Records a visit of an hour ago through the API; answers its id. */
export async function createVisit(
  baseUrl: string,
  key: string,
  patientId: string,
  practitionerId: string,
): Promise<string> {
  const end = Date.now() - 60 * 60 * 1000;
  const answer = await expect(201, baseUrl, 'POST', '/api/v1/encounters', {
    token: key,
    body: {
      patientId,
      practitionerId,
      start: new Date(end - 30 * 60 * 1000).toISOString(),
      end: new Date(end).toISOString(),
      ...VISIT,
    },
    idempotent: true,
  });
  return answer.body.id as string;
}

/** Bills a visit into a draft invoice through the API; answers the invoice id. */
export async function billVisit(baseUrl: string, key: string, encounterId: string): Promise<string> {
  const answer = await expect(201, baseUrl, 'POST', `/api/v1/encounters/${encounterId}/bill`, {
    token: key,
    body: {},
    idempotent: true,
  });
  return answer.body.invoice.id as string;
}

/** A new practice with covered patients (up to 20); answers `visits` new visits of them. */
export async function practiceWithVisits(
  baseUrl: string,
  adminToken: string,
  visits: number,
): Promise<{ practice: Practice; encounterIds: string[] }> {
  const practice = await provisionPractice(baseUrl, adminToken);
  const covered = await createPatients(baseUrl, practice.key, Math.min(20, Math.max(1, visits)));
  await addCoverages(
    baseUrl,
    practice.key,
    covered.map((p) => p.id),
  );
  const encounterIds = await mapConcurrent(
    Array.from({ length: visits }, (_, i) => covered[i % covered.length]!.id),
    16,
    (patientId) => createVisit(baseUrl, practice.key, patientId, practice.practitionerId),
  );
  return { practice, encounterIds };
}
