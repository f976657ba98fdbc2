// Fixtures the billing tests share: practices with chosen settings, patients, coverages, visits,
// bills, line bodies, Problem checks and read-only SQL as the operator role.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Permission } from '../src/auth/permissions.ts';
import { PERMISSIONS } from '../src/auth/permissions.ts';
import type { EncounterRequest } from '../src/encounters/schemas.ts';
import { asOperator, type Trx } from '../src/platform/db/transaction.ts';
import { type Answer, apiClient, patientBody, type TestPractice, type TestService } from './harness.ts';
import {
  type Api,
  bill,
  createCoverage,
  createEncounter,
  createPatient,
  type Json,
} from './support/factories.ts';

export { errorFields, refusedWith } from './support/refusals.ts';

export const TARIFF_URL = 'urn:service:codesystem:tariff';
export const ICD10_URL = 'http://hl7.org/fhir/sid/icd-10';
export const MINUTE = 60_000;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;

export type { Api, Json };
export { bill };

export interface PracticeOptions {
  timezone?: string;
  permissions?: readonly Permission[];
  vatRateBasisPoints?: number;
  paymentTermsDays?: number;
  invoiceNumberPrefix?: string;
  rateLimitPerMinute?: number;
}

/** A practice (optionally in a time zone and with billing settings), its practitioner and a client key. */
export async function billingPractice(
  svc: TestService,
  options: PracticeOptions = {},
): Promise<TestPractice & { api: Api }> {
  const practice = await svc.admin('POST', '/practices', {
    name: `Billing ${randomBytes(3).toString('hex')}`,
    ...(options.timezone ? { timezone: options.timezone } : {}),
  });
  assert.equal(practice.status, 201, practice.text);
  const practiceId = practice.body.id as string;
  if (
    options.vatRateBasisPoints !== undefined ||
    options.paymentTermsDays !== undefined ||
    options.invoiceNumberPrefix !== undefined
  ) {
    const settings = await svc.admin('PUT', `/practices/${practiceId}/billing-settings`, {
      vatRateBasisPoints: options.vatRateBasisPoints ?? 0,
      paymentTermsDays: options.paymentTermsDays ?? 30,
      invoiceNumberPrefix: options.invoiceNumberPrefix ?? 'INV-',
    });
    assert.equal(settings.status, 200, settings.text);
  }
  const practitioner = await svc.admin('POST', `/practices/${practiceId}/practitioners`, { name: 'Dr Bill' });
  assert.equal(practitioner.status, 201, practitioner.text);
  const client = await svc.admin('POST', `/practices/${practiceId}/clients`, {
    name: 'Billing client',
    permissions: [...(options.permissions ?? PERMISSIONS)],
    ...(options.rateLimitPerMinute !== undefined ? { rateLimitPerMinute: options.rateLimitPerMinute } : {}),
  });
  assert.equal(client.status, 201, client.text);
  const key = await svc.admin('POST', `/clients/${client.body.id}/keys`, {});
  assert.equal(key.status, 201, key.text);
  return {
    practiceId,
    practitionerId: practitioner.body.id,
    clientId: client.body.id,
    keyId: key.body.id,
    key: key.body.key,
    api: apiClient(svc, key.body.key),
  };
}

export async function newPatient(api: Api, overrides: Record<string, unknown> = {}): Promise<string> {
  return (await createPatient(api, patientBody(overrides))).id;
}

export async function addCoverage(
  api: Api,
  patientId: string,
  planId: string,
  extra: Record<string, unknown> = {},
): Promise<string> {
  const coverage = await createCoverage(api, patientId, {
    planId,
    memberNumber: `M${randomBytes(4).toString('hex')}`,
    ...extra,
  });
  return coverage.id;
}

export interface VisitOptions {
  start?: Date;
  end?: Date;
  diagnoses?: EncounterRequest['diagnoses'];
  procedures?: EncounterRequest['procedures'];
}

/** Records a finished visit (by default: ended an hour before the service's now, one consultation). */
export async function newVisit(
  svc: TestService,
  api: Api,
  practitionerId: string,
  patientId: string,
  options: VisitOptions = {},
): Promise<Json> {
  const end = options.end ?? new Date(svc.clock.now().getTime() - HOUR);
  const start = options.start ?? new Date(end.getTime() - 20 * MINUTE);
  return createEncounter(api, {
    patientId,
    practitionerId,
    start: start.toISOString(),
    end: end.toISOString(),
    diagnoses: options.diagnoses ?? [{ code: 'J06.9' }],
    procedures: options.procedures ?? [{ code: '0190', diagnosisCodes: ['J06.9'] }],
  });
}

/** A patient, a visit and its draft invoice (or issued, with `issue: true`). */
export async function billedInvoice(
  svc: TestService,
  practice: TestPractice & { api: Api },
  options: VisitOptions & { issue?: boolean; patientId?: string } = {},
): Promise<Json> {
  const patientId = options.patientId ?? (await newPatient(practice.api));
  const visit = await newVisit(svc, practice.api, practice.practitionerId, patientId, options);
  const answer = await bill(practice.api, visit.id, options.issue ? { issue: true } : undefined);
  assert.equal(answer.status, 201, answer.text);
  return answer.body.invoice;
}

/**
 * A service date two days before the real date (UTC): not after any test practice's today, and within
 * the 120 days before an invoice's date that a line may bill.
 */
export const RECENT_DAY = new Date(Date.now() - 2 * DAY).toISOString().slice(0, 10);

export function lineBody(overrides: Record<string, unknown> = {}) {
  return {
    code: '0191',
    serviceDate: RECENT_DAY,
    quantity: 1,
    unitPrice: 10000,
    ...overrides,
  };
}

/** Reads across practices as the operator role (tenant tables force row-level security on everyone else). */
export function asOps<T>(svc: TestService, fn: (trx: Trx) => Promise<T>): Promise<T> {
  return asOperator(svc.db, fn);
}

/** The calendar date of an instant in a time zone, computed independently of the service. */
export function localDate(timeZone: string, at: Date): string {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
  }).formatToParts(at);
  const get = (type: string) => parts.find((p) => p.type === type)!.value;
  return `${get('year')}-${get('month')}-${get('day')}`;
}

export function plusDays(date: string, days: number): string {
  const d = new Date(`${date}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + days);
  return d.toISOString().slice(0, 10);
}

/** Every page of a list, following nextCursor with the same query. */
export async function allPages(api: Api, path: string): Promise<Json[]> {
  const items = [];
  let cursor: string | null = null;
  for (let i = 0; i < 1000; i++) {
    const sep = path.includes('?') ? '&' : '?';
    const page: Answer = await api(
      'GET',
      cursor ? `${path}${sep}cursor=${encodeURIComponent(cursor)}` : path,
    );
    assert.equal(page.status, 200, page.text);
    items.push(...page.body.data);
    if (!page.body.hasMore) {
      assert.equal(page.body.nextCursor, null);
      return items;
    }
    cursor = page.body.nextCursor;
  }
  throw new Error('paging did not end');
}
