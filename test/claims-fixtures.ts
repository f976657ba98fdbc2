// Shared set-up for the claims tests: a practice with a patient and a coverage, a visit billed into an
// issued invoice, reading a claim while checking that the invoice's claimStatus mirrors it, and reading
// the claim.status_changed events, payments and jobs the service wrote.
import assert from 'node:assert/strict';
import pino from 'pino';
import type { CoverageRequest } from '../src/insurance/schemas.ts';
import { jobHandlers } from '../src/job-catalogue.ts';
import { takeDueJobs } from '../src/jobs/queue.ts';
import { type Answer, apiClient, patientBody, type TestService, uniqueKey } from './harness.ts';
import {
  type Api,
  bill,
  createCoverage,
  createEncounter,
  createPatient,
  type Json,
} from './support/factories.ts';

export const TARIFF = 'urn:service:codesystem:tariff';
export const ICD10 = 'http://hl7.org/fhir/sid/icd-10';
/** Plan rates of pln_ubuntu_essential in catalogue/insurance.json. */
export const ESSENTIAL = { planId: 'pln_ubuntu_essential', rate0190: 49_500, rate0191: 74_250 };
/** A tariff code pln_ubuntu_essential (and its scheme) has no rate for: a home visit. */
export const NOT_COVERED_CODE = '0145';
export const INACTIVE_PLAN = 'pln_ubuntu_saver';

export type { Api, Json };

export interface World {
  svc: TestService;
  api: Api;
  practiceId: string;
  practitionerId: string;
}

export async function newWorld(svc: TestService): Promise<World> {
  const practice = await svc.newPractice();
  return {
    svc,
    api: apiClient(svc, practice.key),
    practiceId: practice.practiceId,
    practitionerId: practice.practitionerId,
  };
}

/** A coverage's request body, each field defaulted (ESSENTIAL's plan, a member number). */
export type CoverageSpec = Partial<
  Pick<CoverageRequest, 'planId' | 'memberNumber' | 'startDate' | 'endDate'>
>;

export async function addCoverage(w: World, patientId: string, spec: CoverageSpec = {}): Promise<string> {
  const coverage = await createCoverage(w.api, patientId, {
    planId: spec.planId ?? ESSENTIAL.planId,
    memberNumber: spec.memberNumber ?? 'M-100200',
    ...(spec.startDate !== undefined ? { startDate: spec.startDate } : {}),
    ...(spec.endDate !== undefined ? { endDate: spec.endDate } : {}),
  });
  return coverage.id;
}

/** A patient, with one coverage unless `coverage` is null. */
export async function newPatient(
  w: World,
  coverage: CoverageSpec | null = {},
  /** The patient's e-mail address: without one, an issue queues no e-mail job. */
  email?: string,
): Promise<{ patientId: string; coverageId: string | null }> {
  const patient = await createPatient(
    w.api,
    patientBody(email ? { contactPoints: [{ system: 'email', value: email, rank: 1 }] } : {}),
  );
  const coverageId = coverage ? await addCoverage(w, patient.id, coverage) : null;
  return { patientId: patient.id, coverageId };
}

/** A procedure of a visit and the diagnoses it was done for (the first is the line's primary). */
export interface Procedure {
  code: string;
  dx: string[];
}

/** Two lines: the second's primary diagnosis is an external cause, so the sandbox denies it. */
export const W19_SECOND_LINE: Procedure[] = [
  { code: '0190', dx: ['J06.9'] },
  { code: '0191', dx: ['W19.9', 'J06.9'] },
];

const STANDARD: Procedure[] = [
  { code: '0190', dx: ['J06.9'] },
  { code: '0191', dx: ['I10'] },
];

/** Records a half-hour visit that ended an hour ago, with the procedures and their diagnoses. */
export function recordVisit(w: World, patientId: string, procedures: Procedure[] = STANDARD) {
  const end = w.svc.clock.now().getTime() - 60 * 60 * 1000;
  const codes = [...new Set(procedures.flatMap((p) => p.dx))];
  return createEncounter(w.api, {
    patientId,
    practitionerId: w.practitionerId,
    start: new Date(end - 30 * 60 * 1000).toISOString(),
    end: new Date(end).toISOString(),
    diagnoses: (codes.length > 0 ? codes : ['J06.9']).map((code) => ({ code })),
    procedures: procedures.map((p) => ({ code: p.code, diagnosisCodes: p.dx })),
  });
}

/** Records a visit and bills it; answers the bill call. */
export async function billVisit(
  w: World,
  patientId: string,
  procedures: Procedure[] = STANDARD,
  billBody: Record<string, unknown> = { issue: true },
): Promise<Answer> {
  const encounter = await recordVisit(w, patientId, procedures);
  const billed = await bill(w.api, encounter.id, billBody);
  assert.equal(billed.status, 201, billed.text);
  return billed;
}

/** A patient with a coverage and an issued invoice for the procedures, not yet claimed. */
export async function issuedInvoice(
  w: World,
  options: { coverage?: CoverageSpec | null; procedures?: Procedure[]; email?: string } = {},
): Promise<{ invoiceId: string; invoice: Json; patientId: string; coverageId: string | null }> {
  const { patientId, coverageId } = await newPatient(
    w,
    options.coverage === undefined ? {} : options.coverage,
    options.email,
  );
  const billed = await billVisit(w, patientId, options.procedures);
  assert.equal(billed.body.invoice.status, 'issued');
  return { invoiceId: billed.body.invoice.id, invoice: billed.body.invoice, patientId, coverageId };
}

/** A draft invoice (billed without issuing) for a patient with a coverage. */
export async function draftInvoice(
  w: World,
  options: { coverage?: CoverageSpec | null; procedures?: Procedure[] } = {},
): Promise<{ invoiceId: string; invoice: Json; patientId: string; coverageId: string | null }> {
  const { patientId, coverageId } = await newPatient(
    w,
    options.coverage === undefined ? {} : options.coverage,
  );
  const billed = await billVisit(w, patientId, options.procedures, {});
  assert.equal(billed.body.invoice.status, 'draft');
  return { invoiceId: billed.body.invoice.id, invoice: billed.body.invoice, patientId, coverageId };
}

export async function getInvoice(w: World, invoiceId: string): Promise<Json> {
  const invoice = await w.api('GET', `/invoices/${invoiceId}`);
  assert.equal(invoice.status, 200, invoice.text);
  return invoice.body;
}

/** Reads the claim, checking that the invoice's claimStatus and coverageId agree with it. */
export async function readClaim(w: World, invoiceId: string): Promise<Json> {
  const claim = await w.api('GET', `/invoices/${invoiceId}/claim`);
  assert.equal(claim.status, 200, claim.text);
  const invoice = await getInvoice(w, invoiceId);
  assertClaimShape(claim.body, invoice.status);
  assert.equal(invoice.claimStatus, claim.body.status, 'the invoice claimStatus is the claim status');
  assert.ok(invoice.coverageId, 'the invoice names the coverage it was claimed under');
  return claim.body;
}

const OUTCOME: Record<string, string> = {
  submitting: 'queued',
  reversing: 'queued',
  accepted: 'complete',
  reversed: 'complete',
  partially_accepted: 'partial',
  rejected: 'error',
  reversal_failed: 'error',
};

/**
 * The fields every claim answer derives from its status (and, for `resubmittable`, from whether the
 * invoice's status lets it be claimed again).
 */
export function assertClaimShape(claim: Json, invoiceStatus = 'issued'): void {
  assert.equal(claim.object, 'claim');
  assert.match(claim.id, /^clm_/);
  assert.equal(claim.outcome, OUTCOME[claim.status], `outcome of ${claim.status}`);
  assert.equal(
    claim.resubmittable,
    ['rejected', 'reversed', 'partially_accepted'].includes(claim.status) &&
      ['issued', 'partially_paid', 'overdue'].includes(invoiceStatus),
    'resubmittable',
  );
  assert.equal(
    claim.reversible,
    ['accepted', 'partially_accepted', 'reversal_failed'].includes(claim.status),
    'reversible',
  );
  assert.equal(claim.currency, 'ZAR');
}

/** POSTs a claim operation and checks the 202 answer. */
export async function sendClaim(
  w: World,
  invoiceId: string,
  operation: 'claim' | 'claim/resubmit' | 'claim/reverse' = 'claim',
  body?: unknown,
): Promise<Json> {
  const answer = await w.api(
    'POST',
    `/invoices/${invoiceId}/${operation}`,
    body === undefined ? {} : { body },
  );
  assert.equal(answer.status, 202, answer.text);
  assertClaimShape(answer.body);
  assert.equal(answer.body.invoiceId, invoiceId);
  assert.equal(answer.body.outcome, 'queued');
  return answer.body;
}

/** Sends the claim and lets the worker run every due job; answers the claim as it is then. */
export async function claimAndDrain(w: World, invoiceId: string, body?: unknown): Promise<Json> {
  await sendClaim(w, invoiceId, 'claim', body);
  await w.svc.worker.drain();
  return readClaim(w, invoiceId);
}

export interface Note {
  code: string;
  description: string;
}

/** An item with its notes reduced to their codes (descriptions are wording; checked to be present). */
export function itemCodes(item: Json) {
  for (const note of [...item.rejections, ...item.warnings] as Note[]) {
    assert.equal(typeof note.description, 'string');
    assert.ok(note.description.length > 0, `${note.code} has a description`);
  }
  return {
    ...item,
    rejections: (item.rejections as Note[]).map((n) => n.code),
    warnings: (item.warnings as Note[]).map((n) => n.code),
  };
}

export function approved(line: Json, lineNumber: number) {
  return {
    lineNumber,
    lineItemId: line.id,
    decision: 'approved',
    submitted: line.total,
    benefit: line.total,
    rejections: [],
    warnings: [],
  };
}

export function denied(line: Json, lineNumber: number, code: string) {
  return {
    lineNumber,
    lineItemId: line.id,
    decision: 'denied',
    submitted: line.total,
    benefit: 0,
    rejections: [code],
    warnings: [],
  };
}

/** The claim.status_changed events written for the invoice, oldest first. */
export async function statusEvents(svc: TestService, invoiceId: string) {
  return svc.db.kysely
    .selectFrom('events')
    .select(['id', 'seq', 'type', 'object_type', 'occurred_at'])
    .where('type', '=', 'claim.status_changed')
    .where('object_id', '=', invoiceId)
    .orderBy('seq')
    .execute();
}

export async function eventCount(svc: TestService, invoiceId: string, type: string): Promise<number> {
  const rows = await svc.db.kysely
    .selectFrom('events')
    .select('id')
    .where('type', '=', type)
    .where('object_id', '=', invoiceId)
    .execute();
  return rows.length;
}

/** Asserts the invoice has exactly `count` claim.status_changed events, all naming the invoice. */
export async function assertStatusEvents(svc: TestService, invoiceId: string, count: number): Promise<void> {
  const events = await statusEvents(svc, invoiceId);
  assert.equal(events.length, count, 'one claim.status_changed event per status change');
  for (const e of events) assert.equal(e.object_type, 'invoice');
}

export async function payments(w: World, invoiceId: string): Promise<Json[]> {
  const list = await w.api('GET', `/invoices/${invoiceId}/payments`);
  assert.equal(list.status, 200, list.text);
  return list.body.data;
}

export async function claimRow(svc: TestService, invoiceId: string) {
  return svc.db.kysely
    .selectFrom('claims')
    .selectAll()
    .where('invoice_id', '=', invoiceId)
    .executeTakeFirstOrThrow();
}

/** Jobs enqueued for a claim, oldest first. */
export async function jobsOfClaim(svc: TestService, claimId: string) {
  const rows = await svc.db.kysely
    .selectFrom('jobs')
    .selectAll()
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.filter((j) => (j.payload as { claimId?: string }).claimId === claimId);
}

/**
 * Takes the due jobs one at a time and runs only those of `kind`, as a worker would; used to stop
 * between two steps the worker's drain() would run in one go.
 */
export async function runDueJobsOf(svc: TestService, kind: string): Promise<number> {
  const handlers = jobHandlers({
    db: svc.db,
    clock: svc.clock,
    config: svc.deps.config,
    insurer: svc.deps.insurer,
    log: pino({ level: 'silent' }),
  });
  await svc.jobsFollowClock();
  const jobs = await takeDueJobs(svc.db, 'wrk_step', 50, svc.deps.config.jobLeaseSeconds * 1000);
  let ran = 0;
  for (const job of jobs) {
    if (job.kind !== kind) {
      // Give the others back at once, untouched but for the attempt count.
      await svc.db.kysely
        .updateTable('jobs')
        .set({ locked_by: null, locked_until: null, attempts: job.attempts - 1 })
        .where('id', '=', job.id)
        .execute();
      continue;
    }
    await handlers[kind]!(job);
    ran += 1;
  }
  return ran;
}

export function lineRequest(overrides: Record<string, unknown> = {}) {
  return {
    code: '0190',
    serviceDate: new Date().toISOString().slice(0, 10),
    quantity: 1,
    unitPrice: ESSENTIAL.rate0190,
    pricingSource: 'medical_aid',
    diagnoses: [{ code: 'J06.9', primary: true }],
    ...overrides,
  };
}

export async function addLine(w: World, invoiceId: string, body: Record<string, unknown>): Promise<Json> {
  const added = await w.api('POST', `/invoices/${invoiceId}/line-items`, {
    body,
    idempotencyKey: uniqueKey(),
  });
  assert.equal(added.status, 201, added.text);
  return added.body;
}

export async function invoiceAction(w: World, invoiceId: string, action: 'issue' | 'amend'): Promise<Json> {
  const answer = await w.api('POST', `/invoices/${invoiceId}/${action}`);
  assert.equal(answer.status, 200, answer.text);
  return answer.body;
}

/** A 422 business_rule answer whose detail matches `detail`. */
export function assertBusinessRule(answer: Answer, detail: RegExp): void {
  assert.equal(answer.status, 422, answer.text);
  assert.equal(answer.body.code, 'business_rule', answer.text);
  assert.match(answer.body.detail, detail);
}
