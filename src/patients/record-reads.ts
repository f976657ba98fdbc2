// Owns the reads of a patient's record (POPIA s23 access): one keyset page of one section at a time,
// every row of this practice that names the patient, directly or through their invoices. Reads only;
// a cross-owner read declared in src/table-owners.ts. Never holds more than one page.
import { type RawBuilder, sql } from 'kysely';
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

/** Rows of a child table listed inside each row of a section, by the parent's id. */
interface ChildRows {
  name: string;
  table: RawBuilder<unknown>;
  parentColumn: string;
  orderBy: string;
}

/** A section: the rows of one table that name the patient, with their children. */
interface Section {
  /** The table as SQL text, written out where the section is declared (the table-owners check reads it). */
  table: RawBuilder<unknown>;
  /** A column `patient_id` of the table's own, or the `invoice_id` of one of the patient's invoices. */
  namesPatientBy: 'patient_id' | 'invoice_id';
  children?: readonly ChildRows[];
}

type StoredRow = Record<string, unknown> & { id: string };

async function sectionRows(
  trx: Trx,
  section: Section,
  practiceId: string,
  patientId: string,
  after: string | null,
  limit: number,
): Promise<StoredRow[]> {
  const [join, patientColumn] =
    section.namesPatientBy === 'invoice_id'
      ? [sql`JOIN invoices i ON i.practice_id = s.practice_id AND i.id = s.invoice_id`, sql`i.patient_id`]
      : [sql``, sql`s.patient_id`];
  const result = await sql<StoredRow>`SELECT s.* FROM ${section.table} s ${join}
    WHERE s.practice_id = ${practiceId} AND ${patientColumn} = ${patientId}
      ${after === null ? sql`` : sql`AND s.id > ${after}`}
    ORDER BY s.id LIMIT ${limit}`.execute(trx);
  return result.rows;
}

async function childRowsOf(
  trx: Trx,
  child: ChildRows,
  practiceId: string,
  parentIds: string[],
): Promise<Record<string, unknown>[]> {
  if (parentIds.length === 0) return [];
  const parent = sql.ref(child.parentColumn);
  const result = await sql<Record<string, unknown>>`SELECT * FROM ${child.table}
    WHERE practice_id = ${practiceId} AND ${parent} IN (${sql.join(parentIds)})
    ORDER BY ${parent}, ${sql.ref(child.orderBy)}`.execute(trx);
  return result.rows;
}

/** A section's reader: a keyset page of its rows by id, each with its children listed under it. */
function sectionRead(section: Section): SectionRead {
  return async (trx, practiceId, patientId, after, limit) => {
    const rows = await sectionRows(trx, section, practiceId, patientId, after, limit);
    const children = section.children ?? [];
    const ids = rows.map((r) => r.id);
    const rowsOfChildren = await Promise.all(children.map((c) => childRowsOf(trx, c, practiceId, ids)));
    const page = pageOf(rows, (r: StoredRow) => r.id, limit);
    page.rows = page.rows.map((row) => {
      const withChildren = { ...row };
      children.forEach((child, i) => {
        const own = rowsOfChildren[i]!.filter((c) => c[child.parentColumn] === row.id);
        withChildren[child.name] = own.map(plainRow);
      });
      return withChildren;
    });
    return page;
  };
}

const coverages = sectionRead({ table: sql`coverages`, namesPatientBy: 'patient_id' });

const encounters = sectionRead({
  table: sql`encounters`,
  namesPatientBy: 'patient_id',
  children: [
    {
      name: 'diagnoses',
      table: sql`encounter_diagnoses`,
      parentColumn: 'encounter_id',
      orderBy: 'position',
    },
    { name: 'procedures', table: sql`encounter_procedures`, parentColumn: 'encounter_id', orderBy: 'id' },
  ],
});

const invoices = sectionRead({
  table: sql`invoices`,
  namesPatientBy: 'patient_id',
  children: [{ name: 'lines', table: sql`invoice_lines`, parentColumn: 'invoice_id', orderBy: 'position' }],
});

const claims = sectionRead({
  table: sql`claims`,
  namesPatientBy: 'invoice_id',
  children: [{ name: 'items', table: sql`claim_items`, parentColumn: 'claim_id', orderBy: 'line_number' }],
});

const payments = sectionRead({ table: sql`payments`, namesPatientBy: 'invoice_id' });

const refunds = sectionRead({ table: sql`refunds`, namesPatientBy: 'invoice_id' });

const notifications = sectionRead({ table: sql`notifications`, namesPatientBy: 'patient_id' });

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
