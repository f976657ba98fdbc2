// Owns loading visits and invoices by SQL straight into the service's own tables, far faster than
// through the API, for the invoice-paging and claim-pipeline scenarios. It mirrors exactly what the
// service writes, by copying a template that the service itself wrote through its API (one visit
// recorded with POST /encounters and billed with POST /encounters/{id}/bill) for clone g = from..to:
//   encounters, encounter_diagnoses, encounter_procedures    (as POST /encounters writes them)
//   invoices, invoice_encounters, invoice_lines              (as the bill writes a draft invoice:
//                                                             gap-free numbers after the practice's
//                                                             last, recipient named from the patient)
//   invoice_clocks                                           (last_number and last_change moved on, as
//                                                             the bill's clock tick does)
//   audit_events                                             (one row per API call that would have made
//                                                             the data: the POST /encounters and the bill)
// The one thing not written is the Idempotency-Key record of each of those calls: a 24-hour replay
// cache that no measured request reads (at 1,000,000 invoices it would be gigabytes of stored answers).
// Clone g's ids are md5(seed:kind:g) cut to the length of the service's ids, and its change time is
// t0 + g × stepMs. Runs as the database superuser, which row-level security does not restrict; the
// rows are the same as without the shortcut of skipping foreign-key checks (see cloneVisits).
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import lockfile from 'proper-lockfile';

type Row = Record<string, unknown>;

export interface SqlTarget {
  query(text: string, params?: unknown[]): Promise<Row[]>;
  close(): Promise<void>;
}

export async function postgresTarget(url: string): Promise<SqlTarget> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return {
    query: async (text, params) => (await client.query(text, params)).rows as Row[],
    close: () => client.end(),
  };
}

/** Opens a stopped service's embedded data directory, holding the same lock file the service takes. */
export async function pgliteTarget(dataDir: string): Promise<SqlTarget> {
  if (!fs.existsSync(dataDir)) throw new Error(`no data directory ${dataDir}`);
  const release = await lockfile.lock(dataDir, { stale: 15_000, update: 5_000, realpath: false });
  try {
    const pglite = await PGlite.create({ dataDir });
    return {
      query: async (text, params) => (await pglite.query<Row>(text, params)).rows,
      async close() {
        await pglite.close();
        await release();
      },
    };
  } catch (error) {
    await release();
    throw error;
  }
}

/** The id clone g of `kind` gets: the service's prefix, then 22 characters (see the SQL `id` below). */
export function cloneId(prefix: string, seed: string, kind: string, g: number, position?: number): string {
  const text = position === undefined ? `${seed}:${kind}:${g}` : `${seed}:${kind}:${g}:${position}`;
  return `${prefix}_${createHash('md5').update(text).digest('hex').slice(0, 22)}`;
}

function id(prefix: string, kind: string, withPosition?: string): string {
  const position = withPosition ? ` || ':' || ${withPosition}` : '';
  return `'${prefix}_' || substr(md5($seed || ':${kind}:' || g${position}), 1, 22)`;
}

const AT = `($t0::timestamptz + g * $step::bigint * interval '1 millisecond')`;
const PATIENT = `(SELECT id FROM bench_patients WHERE k = g % $n::bigint)`;

/** Named parameters ($name) to positional ones, in order of first use. */
function bind(text: string, values: Record<string, unknown>): [string, unknown[]] {
  const names: string[] = [];
  const sql = text.replace(/\$([a-z0-9]+)/gi, (_, name: string) => {
    if (!(name in values)) throw new Error(`no value for $${name}`);
    let index = names.indexOf(name);
    if (index < 0) index = names.push(name) - 1;
    return `$${index + 1}`;
  });
  return [sql, names.map((n) => values[n])];
}

const VISIT_STATEMENTS = [
  `INSERT INTO encounters (practice_id, id, status, class, patient_id, practitioner_id, start_at, end_at,
     created_at, updated_at)
   SELECT e.practice_id, ${id('enc', 'e')}, e.status, e.class, ${PATIENT}, e.practitioner_id, e.start_at,
     e.end_at, ${AT}, ${AT}
   FROM generate_series($from::bigint, $to::bigint) AS g
   CROSS JOIN (SELECT * FROM encounters WHERE practice_id = $practice AND id = $encounter) AS e`,
  `INSERT INTO encounter_diagnoses (practice_id, id, encounter_id, position, system, code, display)
   SELECT d.practice_id, ${id('dx', 'd', 'd.position')}, ${id('enc', 'e')}, d.position, d.system, d.code, d.display
   FROM generate_series($from::bigint, $to::bigint) AS g
   CROSS JOIN (SELECT * FROM encounter_diagnoses WHERE practice_id = $practice AND encounter_id = $encounter) AS d`,
  `INSERT INTO encounter_procedures (practice_id, id, encounter_id, position, status, system, code, display,
     diagnosis_codes, note)
   SELECT p.practice_id, ${id('proc', 'p', 'p.position')}, ${id('enc', 'e')}, p.position, p.status, p.system,
     p.code, p.display, p.diagnosis_codes, p.note
   FROM generate_series($from::bigint, $to::bigint) AS g
   CROSS JOIN (SELECT * FROM encounter_procedures WHERE practice_id = $practice AND encounter_id = $encounter) AS p`,
  auditCopy('$encounter', id('enc', 'e'), "a.route = '/api/v1/encounters'"),
];

const INVOICE_STATEMENTS = [
  // The bill's clock tick locks the practice's clock row until commit; so does this.
  'SELECT last_number FROM invoice_clocks WHERE practice_id = $practice FOR UPDATE',
  `INSERT INTO invoices (practice_id, id, number, status, claim_status, patient_id, practitioner_id, coverage_id,
     pricing_coverage_id, place_of_service_code, recipient_name, date, due_date, currency, total_net,
     total_gross, amount_paid, issued_at, created_at, updated_at)
   SELECT i.practice_id, ${id('inv', 'i')},
     pr.invoice_number_prefix || CASE WHEN length((c.last_number + g - $from::bigint + 1)::text) >= 6
       THEN (c.last_number + g - $from::bigint + 1)::text ELSE lpad((c.last_number + g - $from::bigint + 1)::text, 6, '0') END,
     i.status, i.claim_status, bp.id, i.practitioner_id, i.coverage_id, i.pricing_coverage_id,
     i.place_of_service_code, bp.recipient, i.date, i.due_date, i.currency, i.total_net, i.total_gross,
     i.amount_paid, i.issued_at, ${AT}, ${AT}
   FROM generate_series($from::bigint, $to::bigint) AS g
   JOIN bench_patients bp ON bp.k = g % $n::bigint
   CROSS JOIN (SELECT * FROM invoices WHERE practice_id = $practice AND id = $invoice) AS i
   CROSS JOIN (SELECT * FROM invoice_clocks WHERE practice_id = $practice) AS c
   CROSS JOIN (SELECT * FROM practices WHERE id = $practice) AS pr`,
  `INSERT INTO invoice_encounters (practice_id, invoice_id, encounter_id, live)
   SELECT $practice, ${id('inv', 'i')}, ${id('enc', 'e')}, true
   FROM generate_series($from::bigint, $to::bigint) AS g`,
  `INSERT INTO invoice_lines (practice_id, id, invoice_id, position, service_date, service_date_end, system, code,
     description, modifiers, quantity, unit_price, subtotal, total, pricing_source, diagnoses, procedure_id)
   SELECT l.practice_id, ${id('li', 'l', 'l.position')}, ${id('inv', 'i')}, l.position, l.service_date,
     l.service_date_end, l.system, l.code, l.description, l.modifiers, l.quantity, l.unit_price, l.subtotal,
     l.total, l.pricing_source, l.diagnoses,
     CASE WHEN l.procedure_position IS NULL THEN NULL ELSE ${id('proc', 'p', 'l.procedure_position')} END
   FROM generate_series($from::bigint, $to::bigint) AS g
   CROSS JOIN (
     SELECT tl.*, tp.position AS procedure_position FROM invoice_lines tl
     LEFT JOIN encounter_procedures tp ON tp.practice_id = tl.practice_id AND tp.id = tl.procedure_id
     WHERE tl.practice_id = $practice AND tl.invoice_id = $invoice) AS l`,
  auditCopy('$invoice', id('inv', 'i'), "a.route = '/api/v1/encounters/:encounterId/bill'"),
  `UPDATE invoice_clocks SET last_number = last_number + ($to::bigint - $from::bigint + 1),
     last_change = greatest(last_change, $t0::timestamptz + $to::bigint * $step::bigint * interval '1 millisecond')
   WHERE practice_id = $practice`,
];

/** The template call's audit row, once per clone, naming the clone's resource and patient. */
function auditCopy(templateId: string, cloneIdSql: string, which: string): string {
  return `INSERT INTO audit_events (practice_id, occurred_at, actor, client_id, key_id, performer_id, source_ip,
     method, route, status, outcome, reason, resource_type, resource_id, patient_id, request_id, idempotency_key)
   SELECT a.practice_id, ${AT}, a.actor, a.client_id, a.key_id, a.performer_id, a.source_ip, a.method, a.route,
     a.status, a.outcome, a.reason, a.resource_type, ${cloneIdSql}, ${PATIENT},
     ${id('req', 'r')}, 'bench-' || substr(md5($seed || ':k:' || g), 1, 24)
   FROM generate_series($from::bigint, $to::bigint) AS g
   CROSS JOIN (SELECT * FROM audit_events a WHERE a.practice_id = $practice AND a.resource_id = ${templateId}
     AND a.method = 'POST' AND ${which} ORDER BY a.id LIMIT 1) AS a`;
}

export interface CloneSpec {
  practiceId: string;
  /** A visit the service recorded through the API. */
  templateEncounterId: string;
  /** Its invoice, billed through the API; without it only visits are copied. */
  templateInvoiceId?: string;
  seed: string;
  from: number;
  to: number;
  /** Change time of clone g: t0 + g × stepMs. */
  t0: string;
  stepMs: number;
  /** Clone g belongs to patientIds[g % length]. */
  patientIds: string[];
  /** Clones per transaction. */
  chunk?: number;
  onProgress?: (done: number, total: number) => void;
}

/** Copies the template for g = from..to, in transactions of `chunk` clones; then refreshes statistics. */
export async function cloneVisits(target: SqlTarget, spec: CloneSpec): Promise<void> {
  const chunk = spec.chunk ?? 50_000;
  const total = spec.to - spec.from + 1;
  for (let from = spec.from; from <= spec.to; from += chunk) {
    const to = Math.min(spec.to, from + chunk - 1);
    const values = {
      practice: spec.practiceId,
      encounter: spec.templateEncounterId,
      invoice: spec.templateInvoiceId ?? '',
      seed: spec.seed,
      from,
      to,
      t0: spec.t0,
      step: spec.stepMs,
      n: spec.patientIds.length,
    };
    await target.query('BEGIN');
    try {
      // Foreign-key triggers are skipped for the load (every reference is to a row that exists by
      // construction); indexes, checks and generated columns apply as usual. Transaction-local.
      await target.query("SET LOCAL session_replication_role = 'replica'");
      await target.query(
        'CREATE TEMP TABLE bench_patients (k integer PRIMARY KEY, id text NOT NULL, recipient text) ON COMMIT DROP',
      );
      // The recipient is named as the bill names it: prefix, given names and last name.
      await target.query(
        `INSERT INTO bench_patients (k, id, recipient)
         SELECT (j.o - 1)::integer, p.id, concat_ws(' ', p.prefix,
           (SELECT string_agg(x.v, ' ' ORDER BY x.n) FROM jsonb_array_elements_text(p.given_names)
              WITH ORDINALITY AS x(v, n)), p.last_name)
         FROM json_array_elements_text($1::json) WITH ORDINALITY AS j(pid, o)
         JOIN patients p ON p.practice_id = $2 AND p.id = j.pid`,
        [JSON.stringify(spec.patientIds), spec.practiceId],
      );
      const statements = spec.templateInvoiceId
        ? [...VISIT_STATEMENTS, ...INVOICE_STATEMENTS]
        : VISIT_STATEMENTS;
      for (const statement of statements) {
        const [text, params] = bind(statement, values);
        await target.query(text, params);
      }
      await target.query('COMMIT');
    } catch (error) {
      await target.query('ROLLBACK').catch(() => {});
      throw error;
    }
    spec.onProgress?.(to - spec.from + 1, total);
  }
  // A database that grew this much would have been analysed by autovacuum by now.
  await target.query(
    spec.templateInvoiceId
      ? 'ANALYZE encounters, encounter_diagnoses, encounter_procedures, invoices, invoice_encounters, invoice_lines, audit_events, invoice_clocks'
      : 'ANALYZE encounters, encounter_diagnoses, encounter_procedures, audit_events',
  );
}
