// Owns the practice audit log: one append-only row per request that reaches a practice, written in
// the same transaction as the request's effect. A failed write surfaces as AuditUnavailableError so
// the caller withholds the result (503) and nothing commits. A read answered by one statement can
// write its row itself (recordRead): one round trip for the read, its row and the COMMIT.
import type { CompiledQuery } from 'kysely';
import type { Database } from './db/database.ts';
import { withQueryOptions } from './db/query-options.ts';
import { inPractice, isDatabaseUnavailable, type Trx } from './db/transaction.ts';
import { writeUnanswered } from './db/unanswered-writes.ts';

export interface AuditEntry {
  practiceId: string;
  actor: 'client' | 'operator' | 'service';
  clientId: string | null;
  keyId: string | null;
  performerId: string | null;
  sourceIp: string | null;
  method: string;
  route: string;
  status: number;
  outcome: string;
  reason: string | null;
  resourceType: string | null;
  resourceId: string | null;
  patientId: string | null;
  requestId: string;
  idempotencyKey: string | null;
}

export class AuditUnavailableError extends Error {
  constructor(cause: unknown) {
    super('The audit log could not be written', { cause });
    this.name = 'AuditUnavailableError';
  }
}

/**
 * How a read that writes its own audit row (recordRead) fills the row in from what it finds: the row
 * when it finds something and when it finds nothing (a 404's refusal, or the same success for an
 * empty list) differ only in status, outcome and reason. When it finds exactly one row, that row's
 * `id` is the resource and its `patientColumn` (if given) the patient.
 */
export interface ReadRecord {
  found: AuditEntry;
  none: AuditEntry;
  /** The column of a found row that names its patient. */
  patientColumn?: string;
  /** The order of the rows answered, as an ORDER BY list over the read's columns. */
  orderBy?: string;
}

/** The audit_events row of an entry: the one place an entry's fields meet the table's columns. */
function rowOf(entry: AuditEntry) {
  return {
    practice_id: entry.practiceId,
    actor: entry.actor,
    client_id: entry.clientId,
    key_id: entry.keyId,
    performer_id: entry.performerId,
    source_ip: entry.sourceIp,
    method: entry.method,
    route: entry.route,
    status: entry.status,
    outcome: entry.outcome,
    reason: entry.reason,
    resource_type: entry.resourceType,
    resource_id: entry.resourceId,
    patient_id: entry.patientId,
    request_id: entry.requestId,
    idempotency_key: entry.idempotencyKey,
  };
}

/** The columns whose value follows from whether the read found a row (ReadRecord's found and none). */
const DECIDED_BY_THE_READ: Record<string, string> = { status: '::int', outcome: '', reason: '' };

/**
 * The read as a CTE, the audit row written from it, and the read's rows answered; the row's values
 * are parameters numbered on after the read's own. Answers the statement's text and those values.
 */
function recordedRead(read: string, readValues: number, record: ReadRecord) {
  const found = rowOf(record.found);
  const none = rowOf(record.none);
  const values: unknown[] = [];
  const param = (value: unknown) => {
    values.push(value);
    return `$${readValues + values.length}`;
  };
  const select = (Object.keys(found) as (keyof typeof found)[]).map((column) => {
    const cast = DECIDED_BY_THE_READ[column];
    if (cast !== undefined)
      return `CASE WHEN f.hit THEN ${param(found[column])}${cast} ELSE ${param(none[column])}${cast} END`;
    if (column === 'resource_id' || column === 'patient_id')
      return `COALESCE((SELECT ${column} FROM one), ${param(found[column])})`;
    return param(found[column]);
  });
  const patient = record.patientColumn ?? 'NULL::text';
  const sql = `WITH found AS (${read}),
  one AS (SELECT max(id) AS resource_id, max(${patient}) AS patient_id FROM found HAVING count(*) = 1),
  recorded AS (
    INSERT INTO audit_events (${Object.keys(found).join(', ')})
    SELECT ${select.join(', ')}
    FROM (SELECT EXISTS (SELECT 1 FROM found) AS hit) f)
SELECT * FROM found${record.orderBy ? ` ORDER BY ${record.orderBy}` : ''}`;
  return { sql, values };
}

/** A test-only hook that runs before each audit insert; production leaves it unset. */
export type AuditFault = (entry: AuditEntry) => Promise<void> | void;

/**
 * The audit row of a read whose rows are known: the found entry with the one row's resource and
 * patient, or the none entry when it found nothing (recordedRead's CASE and COALESCE, in code).
 */
export function readEntry<R>(rows: R[], record: ReadRecord): AuditEntry {
  if (rows.length === 0) return record.none;
  if (rows.length > 1) return record.found;
  const row = rows[0] as Record<string, unknown>;
  const patient = record.patientColumn ? row[record.patientColumn] : undefined;
  return {
    ...record.found,
    resourceId: typeof row.id === 'string' ? row.id : record.found.resourceId,
    patientId: typeof patient === 'string' ? patient : record.found.patientId,
  };
}

export class AuditLog {
  readonly #fault: AuditFault | undefined;
  readonly #readsApart: boolean;

  /**
   * `readsApart`: a recorded read runs as the read, then its row written with the COMMIT (two
   * statements), not as one statement. For a distributed database (Citus), which runs an INSERT fed by
   * a CTE through its coordinator with COPY, and refuses that on a table with row-level security.
   */
  constructor(fault?: AuditFault, options: { readsApart?: boolean } = {}) {
    this.#fault = fault;
    this.#readsApart = options.readsApart === true;
  }

  async write(trx: Trx, entry: AuditEntry): Promise<void> {
    try {
      await this.#fault?.(entry);
      // The row is the request's last write and nothing reads its answer: it goes with the COMMIT.
      await writeUnanswered(trx, trx.insertInto('audit_events').values(rowOf(entry)));
    } catch (error) {
      throw new AuditUnavailableError(error);
    }
  }

  /**
   * Runs `read`, the transaction's last statement, with the request's audit row written by the same
   * statement from what it finds (ReadRecord), and the COMMIT behind it in the same write: the
   * transaction ends here, and no statement may follow in it. Answers the read's rows.
   */
  async recordRead<R>(trx: Trx, read: CompiledQuery<R>, record: ReadRecord): Promise<R[]> {
    if (this.#readsApart) return this.#recordReadApart(trx, read, record);
    const recorded = recordedRead(read.sql, read.parameters.length, record);
    const statement: CompiledQuery<R> = {
      ...read,
      sql: recorded.sql,
      parameters: [...read.parameters, ...recorded.values],
    };
    try {
      await this.#fault?.(record.found);
      const { rows } = await trx.executeQuery<R>(withQueryOptions(statement, { commits: true }));
      return rows;
    } catch (error) {
      // The read and the row fail together: a database away is reported as such, all else as the row's.
      throw isDatabaseUnavailable(error) ? error : new AuditUnavailableError(error);
    }
  }

  async #recordReadApart<R>(trx: Trx, read: CompiledQuery<R>, record: ReadRecord): Promise<R[]> {
    const ordered: CompiledQuery<R> = record.orderBy
      ? { ...read, sql: `SELECT * FROM (${read.sql}) found ORDER BY ${record.orderBy}` }
      : read;
    let rows: R[];
    try {
      rows = (await trx.executeQuery<R>(ordered)).rows;
    } catch (error) {
      throw isDatabaseUnavailable(error) ? error : new AuditUnavailableError(error);
    }
    const entry = readEntry(rows, record);
    try {
      await this.#fault?.(record.found);
      const insert = trx.insertInto('audit_events').values(rowOf(entry)).compile();
      await trx.executeQuery(withQueryOptions(insert, { commits: true }));
    } catch (error) {
      throw isDatabaseUnavailable(error) ? error : new AuditUnavailableError(error);
    }
    return rows;
  }

  /** Writes an entry in a transaction of its own, for requests refused before any work ran. */
  async writeAlone(db: Database, entry: AuditEntry): Promise<void> {
    try {
      await inPractice(db, entry.practiceId, (trx) => this.write(trx, entry));
    } catch (error) {
      throw error instanceof AuditUnavailableError ? error : new AuditUnavailableError(error);
    }
  }
}
