// Owns the reads of a patient's record (POPIA s23 access): one keyset page of one section at a time,
// every row of this practice that names the patient, directly or through their invoices. Reads only;
// a cross-owner read declared in src/table-owners.ts. Never holds more than one page.
import type { Trx } from '../platform/db/transaction.ts';

/** A plain JSON value of a stored row: camelCase keys, instants as ISO 8601 strings. */
export type RecordRow = Record<string, unknown>;

/** One page of a section: its rows, and the keyset value to read the next page after. */
export interface RecordPage {
  rows: RecordRow[];
  last: string | null;
}

export type SectionRead = (
  trx: Trx,
  practiceId: string,
  patientId: string,
  after: string | null,
  limit: number,
) => Promise<RecordPage>;

function camel(name: string): string {
  return name.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());
}

/** A stored row as plain JSON: camelCase keys, dates as ISO strings, bigints as numbers. */
export function plainRow(row: object): RecordRow {
  const out: RecordRow = {};
  for (const [key, value] of Object.entries(row)) {
    if (key === 'practice_id') continue;
    out[camel(key)] = plainValue(value);
  }
  return out;
}

function plainValue(value: unknown): unknown {
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'bigint') return Number(value);
  return value;
}

function pageOf(rows: object[], key: (row: never) => string | number, limit: number): RecordPage {
  const last = rows.length === limit ? String(key(rows[rows.length - 1] as never)) : null;
  return { rows: rows.map(plainRow), last };
}

const coverages: SectionRead = async (trx, practiceId, patientId, after, limit) => {
  let q = trx
    .selectFrom('coverages')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .where('patient_id', '=', patientId);
  if (after !== null) q = q.where('id', '>', after);
  const rows = await q.orderBy('id').limit(limit).execute();
  return pageOf(rows, (r: { id: string }) => r.id, limit);
};

const encounters: SectionRead = async (trx, practiceId, patientId, after, limit) => {
  let q = trx
    .selectFrom('encounters')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .where('patient_id', '=', patientId);
  if (after !== null) q = q.where('id', '>', after);
  const rows = await q.orderBy('id').limit(limit).execute();
  const ids = rows.map((r) => r.id);
  const [diagnoses, procedures] =
    ids.length === 0
      ? [[], []]
      : await Promise.all([
          trx
            .selectFrom('encounter_diagnoses')
            .selectAll()
            .where('practice_id', '=', practiceId)
            .where('encounter_id', 'in', ids)
            .orderBy('encounter_id')
            .orderBy('position')
            .execute(),
          trx
            .selectFrom('encounter_procedures')
            .selectAll()
            .where('practice_id', '=', practiceId)
            .where('encounter_id', 'in', ids)
            .orderBy('encounter_id')
            .orderBy('id')
            .execute(),
        ]);
  const page = pageOf(rows, (r: { id: string }) => r.id, limit);
  page.rows = page.rows.map((row) => ({
    ...row,
    diagnoses: diagnoses.filter((d) => d.encounter_id === row.id).map(plainRow),
    procedures: procedures.filter((p) => p.encounter_id === row.id).map(plainRow),
  }));
  return page;
};

const invoices: SectionRead = async (trx, practiceId, patientId, after, limit) => {
  let q = trx
    .selectFrom('invoices')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .where('patient_id', '=', patientId);
  if (after !== null) q = q.where('id', '>', after);
  const rows = await q.orderBy('id').limit(limit).execute();
  const ids = rows.map((r) => r.id);
  const lines =
    ids.length === 0
      ? []
      : await trx
          .selectFrom('invoice_lines')
          .selectAll()
          .where('practice_id', '=', practiceId)
          .where('invoice_id', 'in', ids)
          .orderBy('invoice_id')
          .orderBy('position')
          .execute();
  const page = pageOf(rows, (r: { id: string }) => r.id, limit);
  page.rows = page.rows.map((row) => ({
    ...row,
    lines: lines.filter((l) => l.invoice_id === row.id).map(plainRow),
  }));
  return page;
};

const claims: SectionRead = async (trx, practiceId, patientId, after, limit) => {
  let q = trx
    .selectFrom('claims')
    .innerJoin('invoices', (j) =>
      j
        .onRef('invoices.practice_id', '=', 'claims.practice_id')
        .onRef('invoices.id', '=', 'claims.invoice_id'),
    )
    .selectAll('claims')
    .where('claims.practice_id', '=', practiceId)
    .where('invoices.patient_id', '=', patientId);
  if (after !== null) q = q.where('claims.id', '>', after);
  const rows = await q.orderBy('claims.id').limit(limit).execute();
  const ids = rows.map((r) => r.id);
  const items =
    ids.length === 0
      ? []
      : await trx
          .selectFrom('claim_items')
          .selectAll()
          .where('practice_id', '=', practiceId)
          .where('claim_id', 'in', ids)
          .orderBy('claim_id')
          .orderBy('line_number')
          .execute();
  const page = pageOf(rows, (r: { id: string }) => r.id, limit);
  page.rows = page.rows.map((row) => ({
    ...row,
    items: items.filter((i) => i.claim_id === row.id).map(plainRow),
  }));
  return page;
};

const payments: SectionRead = async (trx, practiceId, patientId, after, limit) => {
  let q = trx
    .selectFrom('payments')
    .innerJoin('invoices', (j) =>
      j
        .onRef('invoices.practice_id', '=', 'payments.practice_id')
        .onRef('invoices.id', '=', 'payments.invoice_id'),
    )
    .selectAll('payments')
    .where('payments.practice_id', '=', practiceId)
    .where('invoices.patient_id', '=', patientId);
  if (after !== null) q = q.where('payments.id', '>', after);
  const rows = await q.orderBy('payments.id').limit(limit).execute();
  return pageOf(rows, (r: { id: string }) => r.id, limit);
};

const refunds: SectionRead = async (trx, practiceId, patientId, after, limit) => {
  let q = trx
    .selectFrom('refunds')
    .innerJoin('invoices', (j) =>
      j
        .onRef('invoices.practice_id', '=', 'refunds.practice_id')
        .onRef('invoices.id', '=', 'refunds.invoice_id'),
    )
    .selectAll('refunds')
    .where('refunds.practice_id', '=', practiceId)
    .where('invoices.patient_id', '=', patientId);
  if (after !== null) q = q.where('refunds.id', '>', after);
  const rows = await q.orderBy('refunds.id').limit(limit).execute();
  return pageOf(rows, (r: { id: string }) => r.id, limit);
};

const notifications: SectionRead = async (trx, practiceId, patientId, after, limit) => {
  let q = trx
    .selectFrom('notifications')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .where('patient_id', '=', patientId);
  if (after !== null) q = q.where('id', '>', after);
  const rows = await q.orderBy('id').limit(limit).execute();
  return pageOf(rows, (r: { id: string }) => r.id, limit);
};

/** Who read or changed what about the patient, oldest first. */
const auditEvents: SectionRead = async (trx, practiceId, patientId, after, limit) => {
  let q = trx
    .selectFrom('audit_events')
    .select([
      'id',
      'occurred_at',
      'actor',
      'client_id',
      'performer_id',
      'method',
      'route',
      'status',
      'outcome',
      'reason',
      'resource_type',
      'resource_id',
      'request_id',
    ])
    .where('practice_id', '=', practiceId)
    .where('patient_id', '=', patientId);
  if (after !== null) q = q.where('id', '>', Number(after));
  const rows = await q.orderBy('id').limit(limit).execute();
  return pageOf(rows, (r: { id: string | number }) => r.id, limit);
};

/** The record's sections after the patient, in the order the document lists them. */
export const RECORD_SECTIONS: ReadonlyArray<{ name: string; read: SectionRead }> = [
  { name: 'coverages', read: coverages },
  { name: 'encounters', read: encounters },
  { name: 'invoices', read: invoices },
  { name: 'claims', read: claims },
  { name: 'payments', read: payments },
  { name: 'refunds', read: refunds },
  { name: 'notifications', read: notifications },
  { name: 'auditEvents', read: auditEvents },
];
