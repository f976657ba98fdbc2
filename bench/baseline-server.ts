// The BASELINE server, run as its own child process: bare Fastify and a database driver doing the
// database work of each measured scenario the way a careful hand-written handler does it, and nothing
// else, on tables of the same shape as the service's (same columns, keys, indexes and foreign keys to
// practices/patients), on its own database: PostgreSQL through a pg pool of the service's size, every
// statement prepared once per connection, or PGlite in its own temporary data directory.
//   GET  /api/v1/patients/:id          one statement: the row by primary key and its audit row
//                                      (a data-modifying WITH), one round trip
//   POST /api/v1/patients              one transaction: the Idempotency-Key's advisory lock with the
//                                      stored-answer look-up, the row, then the audit row and the
//                                      stored answer in one statement (three, and BEGIN and COMMIT)
//   GET  /api/v1/patients?externalSystem&externalId   as GET by id, by the indexed column
//   GET  /api/v1/invoices?updatedSince&cursor         keyset page (limit 50, ORDER BY updated_at, id), then
//                                                     the page's lines and visits (two queries)
//                                                     + audit insert
// No authentication, validation, rate limits or row-level security: that is the service's overhead being
// measured. It counts what it sends as the service counts it (GET /_bench/counts), for the report's
// statements per request beside the service's: statements that do work, round trips (BEGIN and
// COMMIT included), and transactions begun with BEGIN (a statement on its own is not one). Seeding endpoints under /_bench copy the
// service's data shape. The process exits when its stdin closes (the bench died) or on SIGTERM.
// Env: BASELINE_PORT, BASELINE_DATABASE_URL (PostgreSQL) or BASELINE_DATA_DIR (PGlite), BASELINE_POOL_SIZE.
import { createHash, randomBytes } from 'node:crypto';
import { PGlite } from '@electric-sql/pglite';
import Fastify from 'fastify';
import pg from 'pg';

type Row = Record<string, unknown>;
/** A statement; `name` prepares it once per connection (PostgreSQL). */
type Query = (text: string, params?: unknown[], name?: string) => Promise<Row[]>;

interface Counts {
  statements: number;
  roundTrips: number;
  transactions: number;
}

interface Db {
  /** Runs fn in one transaction (BEGIN ... COMMIT, ROLLBACK on error). */
  tx<T>(fn: (query: Query) => Promise<T>): Promise<T>;
  /** One statement on its own (its own transaction). */
  one: Query;
  /** Runs a script of several statements outside a transaction (seeding only, not counted). */
  exec(script: string): Promise<void>;
  counts: Counts;
  close(): Promise<void>;
}

function newCounts(): Counts {
  return { statements: 0, roundTrips: 0, transactions: 0 };
}

function postgresDb(url: string, poolSize: number): Db {
  const pool = new pg.Pool({ connectionString: url, max: poolSize });
  pool.on('error', () => {});
  const counts = newCounts();
  const on =
    (client: pg.Pool | pg.PoolClient): Query =>
    async (text, params, name) => {
      counts.statements += 1;
      counts.roundTrips += 1;
      const result = await client.query(
        name ? { name, text, values: params ?? [] } : { text, values: params ?? [] },
      );
      return result.rows as Row[];
    };
  /** BEGIN, COMMIT and ROLLBACK: a round trip each, counted as the service counts them, not as statements. */
  const control = async (client: pg.PoolClient, text: string) => {
    counts.roundTrips += 1;
    await client.query(text);
  };
  return {
    counts,
    async tx(fn) {
      const client = await pool.connect();
      counts.transactions += 1;
      try {
        await control(client, 'BEGIN');
        const result = await fn(on(client));
        await control(client, 'COMMIT');
        return result;
      } catch (error) {
        await control(client, 'ROLLBACK').catch(() => {});
        throw error;
      } finally {
        client.release();
      }
    },
    one: (text, params, name) => on(pool)(text, params, name),
    async exec(script) {
      await pool.query(script);
    },
    close: () => pool.end(),
  };
}

async function pgliteDb(dataDir: string): Promise<Db> {
  const pglite = await PGlite.create({ dataDir });
  const counts = newCounts();
  return {
    counts,
    // PGlite has one connection: its transaction() runs transactions one at a time, BEGIN and COMMIT
    // each a call of their own.
    tx: (fn) => {
      counts.transactions += 1;
      counts.roundTrips += 2;
      return pglite.transaction((t) =>
        fn(async (text, params) => {
          counts.statements += 1;
          counts.roundTrips += 1;
          return (await t.query<Row>(text, params)).rows;
        }),
      );
    },
    async one(text, params) {
      counts.statements += 1;
      counts.roundTrips += 1;
      return (await pglite.query<Row>(text, params)).rows;
    },
    async exec(script) {
      await pglite.exec(script);
    },
    close: () => pglite.close(),
  };
}

// The service's tables, cut to what the scenarios touch; same columns, keys and indexes.
const SCHEMA = `
CREATE TABLE IF NOT EXISTS practices (
  id text PRIMARY KEY,
  name text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS patients (
  practice_id text NOT NULL REFERENCES practices (id),
  id text NOT NULL,
  active boolean NOT NULL DEFAULT true,
  prefix text,
  given_names jsonb NOT NULL,
  last_name text NOT NULL,
  gender text,
  birth_date date NOT NULL,
  identifiers jsonb NOT NULL DEFAULT '[]',
  external_system text,
  external_value text,
  contact_points jsonb NOT NULL DEFAULT '[]',
  addresses jsonb NOT NULL DEFAULT '[]',
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (practice_id, id),
  CHECK ((external_system IS NULL) = (external_value IS NULL))
);
CREATE UNIQUE INDEX IF NOT EXISTS patients_external_id ON patients (practice_id, external_system, external_value)
  WHERE external_system IS NOT NULL;
CREATE TABLE IF NOT EXISTS audit_events (
  practice_id text NOT NULL REFERENCES practices (id),
  id bigint GENERATED ALWAYS AS IDENTITY,
  occurred_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  actor text NOT NULL,
  client_id text,
  key_id text,
  performer_id text,
  source_ip text,
  method text NOT NULL,
  route text NOT NULL,
  status integer NOT NULL,
  outcome text NOT NULL,
  reason text,
  resource_type text,
  resource_id text,
  patient_id text,
  request_id text NOT NULL,
  idempotency_key text,
  PRIMARY KEY (practice_id, id)
);
CREATE INDEX IF NOT EXISTS audit_events_time ON audit_events (practice_id, occurred_at DESC, id DESC);
CREATE TABLE IF NOT EXISTS idempotency_answers (
  practice_id text NOT NULL,
  key text NOT NULL,
  fingerprint text NOT NULL,
  status integer NOT NULL,
  body text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (practice_id, key)
);
CREATE TABLE IF NOT EXISTS invoices (
  practice_id text NOT NULL,
  id text NOT NULL,
  number text NOT NULL,
  status text NOT NULL,
  claim_status text,
  patient_id text NOT NULL,
  practitioner_id text,
  coverage_id text,
  pricing_coverage_id text,
  place_of_service_code text,
  recipient_name text,
  date date NOT NULL,
  due_date date,
  currency char(3) NOT NULL,
  total_net bigint NOT NULL DEFAULT 0,
  total_gross bigint NOT NULL DEFAULT 0,
  amount_paid bigint NOT NULL DEFAULT 0,
  balance_due bigint GENERATED ALWAYS AS (total_gross - amount_paid) STORED,
  issued_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (practice_id, id),
  UNIQUE (practice_id, number),
  FOREIGN KEY (practice_id, patient_id) REFERENCES patients (practice_id, id)
);
CREATE INDEX IF NOT EXISTS invoices_changes ON invoices (practice_id, updated_at, id);
CREATE INDEX IF NOT EXISTS invoices_patient ON invoices (practice_id, patient_id, updated_at, id);
CREATE INDEX IF NOT EXISTS invoices_status ON invoices (practice_id, status, due_date);
CREATE TABLE IF NOT EXISTS invoice_encounters (
  practice_id text NOT NULL,
  invoice_id text NOT NULL,
  encounter_id text NOT NULL,
  PRIMARY KEY (practice_id, invoice_id, encounter_id)
);
CREATE TABLE IF NOT EXISTS invoice_lines (
  practice_id text NOT NULL,
  id text NOT NULL,
  invoice_id text NOT NULL,
  position integer NOT NULL,
  service_date date NOT NULL,
  service_date_end date,
  system text,
  code text NOT NULL,
  description text NOT NULL,
  modifiers text[] NOT NULL DEFAULT '{}',
  quantity numeric(9, 4) NOT NULL,
  unit_price bigint NOT NULL,
  subtotal bigint NOT NULL,
  total bigint NOT NULL,
  pricing_source text,
  diagnoses jsonb NOT NULL DEFAULT '[]',
  PRIMARY KEY (practice_id, id)
);
CREATE INDEX IF NOT EXISTS invoice_lines_invoice ON invoice_lines (practice_id, invoice_id, position);
`;

const AUDIT_COLUMNS = `practice_id, actor, client_id, key_id, performer_id, source_ip, method, route, status,
  outcome, reason, resource_type, resource_id, patient_id, request_id, idempotency_key`;

const AUDIT_INSERT = `INSERT INTO audit_events (${AUDIT_COLUMNS})
  VALUES ($1, 'client', 'cli_baseline', 'key_baseline', NULL, $2, $3, $4, $5, $6, NULL, $7, $8, $9, $10, $11)`;

/** A read and its audit row in one statement: $1 practice, $2 source IP, $3 route, $4 request id, $5.. the look-up. */
function readAndAudit(route: string, where: string): string {
  return `WITH found AS (SELECT * FROM patients WHERE practice_id = $1 AND ${where}),
    audited AS (
      INSERT INTO audit_events (${AUDIT_COLUMNS})
      SELECT $1, 'client', 'cli_baseline', 'key_baseline', NULL, $2, 'GET', '${route}',
        CASE WHEN EXISTS (SELECT 1 FROM found) THEN 200 ELSE 404 END,
        CASE WHEN EXISTS (SELECT 1 FROM found) THEN 'succeeded' ELSE 'refused' END, NULL, 'patient',
        (SELECT id FROM found ORDER BY created_at, id LIMIT 1), (SELECT id FROM found ORDER BY created_at, id LIMIT 1),
        $3, NULL)
    SELECT * FROM found ORDER BY created_at, id`;
}

const GET_PATIENT = readAndAudit('/api/v1/patients/:patientId', 'id = $4');
const FIND_PATIENT = readAndAudit('/api/v1/patients', 'external_system = $4 AND external_value = $5');

/** The Idempotency-Key's advisory lock (held to the commit) with its stored answer, if any. */
const LOCK_AND_LOOK_UP = `SELECT pg_advisory_xact_lock(hashtextextended($1 || ' ' || $2, 0)) AS locked,
  (SELECT row_to_json(a) FROM (SELECT status, body, fingerprint FROM idempotency_answers
    WHERE practice_id = $1 AND key = $2) a) AS stored`;

const INSERT_PATIENT = `INSERT INTO patients (practice_id, id, prefix, given_names, last_name, gender, birth_date,
    identifiers, external_system, external_value, contact_points, addresses, created_at, updated_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, now(), now())
  ON CONFLICT (practice_id, external_system, external_value) WHERE external_system IS NOT NULL DO NOTHING
  RETURNING *`;

/** The audit row and the stored answer in one statement. */
const AUDIT_AND_STORE = `WITH audited AS (${AUDIT_INSERT})
  INSERT INTO idempotency_answers (practice_id, key, fingerprint, status, body)
  VALUES ($1, $11, $12, $5, $13)`;

function token(): string {
  return randomBytes(16).toString('base64url');
}

async function main() {
  const port = Number(process.env.BASELINE_PORT);
  const poolSize = Number(process.env.BASELINE_POOL_SIZE || 10);
  const db = process.env.BASELINE_DATABASE_URL
    ? postgresDb(process.env.BASELINE_DATABASE_URL, poolSize)
    : await pgliteDb(process.env.BASELINE_DATA_DIR!);
  await db.exec(SCHEMA);
  let practiceId = '';

  const app = Fastify({ logger: false });

  const audit = (query: Query, values: unknown[]) =>
    query(AUDIT_INSERT, [practiceId, '127.0.0.1', ...values], 'audit');

  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/_bench/counts', async () => db.counts);

  app.get<{ Params: { id: string } }>('/api/v1/patients/:id', async (request, reply) => {
    const rows = await db.one(
      GET_PATIENT,
      [practiceId, '127.0.0.1', `req_${token()}`, request.params.id],
      'get_patient',
    );
    if (rows.length === 0) return reply.code(404).send({ code: 'not_found' });
    return rows[0];
  });

  app.post<{ Body: Record<string, unknown> }>('/api/v1/patients', async (request, reply) => {
    const body = request.body;
    const externalId = body.externalId as { system: string; value: string } | undefined;
    const id = `pat_${token()}`;
    const key = String(request.headers['idempotency-key'] ?? id);
    const fingerprint = createHash('sha256').update(JSON.stringify(body)).digest('base64url');
    const answer = await db.tx(async (query) => {
      const [lookUp] = await query(LOCK_AND_LOOK_UP, [practiceId, key], 'lock_and_look_up');
      const stored = lookUp?.stored as { status: number; body: string } | null;
      if (stored) return { status: stored.status, body: JSON.parse(stored.body) as unknown };
      const inserted = await query(
        INSERT_PATIENT,
        [
          practiceId,
          id,
          body.prefix ?? null,
          JSON.stringify(body.givenNames),
          body.lastName,
          body.gender ?? null,
          body.birthDate,
          JSON.stringify(body.identifiers ?? []),
          externalId?.system ?? null,
          externalId?.value ?? null,
          JSON.stringify(body.contactPoints ?? []),
          JSON.stringify(body.addresses ?? []),
        ],
        'insert_patient',
      );
      const status = inserted.length ? 201 : 409;
      const answerBody = inserted[0] ?? { code: 'duplicate' };
      // The service stores every creating answer for replay under its Idempotency-Key; so does this.
      await query(
        AUDIT_AND_STORE,
        [
          practiceId,
          '127.0.0.1',
          'POST',
          '/api/v1/patients',
          status,
          inserted.length ? 'succeeded' : 'refused',
          'patient',
          id,
          inserted.length ? id : null,
          `req_${token()}`,
          key,
          fingerprint,
          JSON.stringify(answerBody),
        ],
        'audit_and_store',
      );
      return { status, body: answerBody };
    });
    return reply.code(answer.status).send(answer.body);
  });

  app.get<{ Querystring: { externalSystem: string; externalId: string } }>(
    '/api/v1/patients',
    async (request) => {
      const rows = await db.one(
        FIND_PATIENT,
        [practiceId, '127.0.0.1', `req_${token()}`, request.query.externalSystem, request.query.externalId],
        'find_patient',
      );
      return { object: 'list', data: rows, hasMore: false, nextCursor: null };
    },
  );

  app.get<{ Querystring: { updatedSince?: string; cursor?: string; limit?: string } }>(
    '/api/v1/invoices',
    async (request) => {
      const limit = Number(request.query.limit ?? 50);
      const since = request.query.updatedSince ?? '-infinity';
      const after = request.query.cursor
        ? (JSON.parse(Buffer.from(request.query.cursor, 'base64url').toString('utf8')) as [string, string])
        : undefined;
      const rows = await db.tx(async (query) => {
        const page = after
          ? await query(
              `SELECT * FROM invoices WHERE practice_id = $1 AND updated_at > $2
                 AND (updated_at > $3 OR (updated_at = $3 AND id > $4))
               ORDER BY updated_at, id LIMIT $5`,
              [practiceId, since, after[0], after[1], limit + 1],
              'invoice_page_after',
            )
          : await query(
              `SELECT * FROM invoices WHERE practice_id = $1 AND updated_at > $2 ORDER BY updated_at, id LIMIT $3`,
              [practiceId, since, limit + 1],
              'invoice_page_first',
            );
        // As the service: each invoice's lines and visits, two queries for the whole page.
        const ids = page.map((r) => r.id as string);
        const lines = await query(
          `SELECT * FROM invoice_lines WHERE practice_id = $1 AND invoice_id = ANY($2) ORDER BY invoice_id, position`,
          [practiceId, ids],
          'invoice_page_lines',
        );
        const visits = await query(
          `SELECT invoice_id, encounter_id FROM invoice_encounters WHERE practice_id = $1 AND invoice_id = ANY($2)`,
          [practiceId, ids],
          'invoice_page_visits',
        );
        for (const invoice of page) {
          invoice.lineItems = lines.filter((l) => l.invoice_id === invoice.id);
          invoice.encounterIds = visits.filter((v) => v.invoice_id === invoice.id).map((v) => v.encounter_id);
        }
        await audit(query, [
          'GET',
          '/api/v1/invoices',
          200,
          'succeeded',
          'invoice',
          null,
          null,
          `req_${token()}`,
          null,
        ]);
        return page;
      });
      const hasMore = rows.length > limit;
      const data = hasMore ? rows.slice(0, limit) : rows;
      const last = data[data.length - 1];
      const nextCursor =
        hasMore && last
          ? Buffer.from(
              JSON.stringify([new Date(last.updated_at as string).toISOString(), last.id]),
            ).toString('base64url')
          : null;
      return { object: 'list', data, hasMore, nextCursor };
    },
  );

  // Seeding: the bench copies the service's practice and patients here, and generates the same invoices.
  app.post<{ Body: { practiceId: string } }>('/_bench/practice', async (request) => {
    practiceId = request.body.practiceId;
    await db.tx((query) =>
      query(`INSERT INTO practices (id, name) VALUES ($1, 'Baseline') ON CONFLICT (id) DO NOTHING`, [
        practiceId,
      ]),
    );
    return { ok: true };
  });

  app.post<{ Body: { rows: Record<string, unknown>[] } }>(
    '/_bench/patients',
    { bodyLimit: 64 * 1024 * 1024 },
    async (request) => {
      await db.tx(async (query) => {
        for (const p of request.body.rows) {
          const externalId = p.externalId as { system: string; value: string } | null;
          await query(
            `INSERT INTO patients (practice_id, id, active, prefix, given_names, last_name, gender, birth_date,
               identifiers, external_system, external_value, contact_points, addresses, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $14)`,
            [
              practiceId,
              p.id,
              p.active,
              p.prefix,
              JSON.stringify(p.givenNames),
              p.lastName,
              p.gender,
              p.birthDate,
              JSON.stringify(p.identifiers),
              externalId?.system ?? null,
              externalId?.value ?? null,
              JSON.stringify(p.contactPoints),
              JSON.stringify(p.addresses),
              p.updatedAt,
            ],
          );
        }
      });
      return { ok: true, count: request.body.rows.length };
    },
  );

  // Invoices g = from..to with the ids and change times the service's copy gets (see bulk-sql.ts).
  app.post<{
    Body: { from: number; to: number; seed: string; t0: string; stepMs: number; patientIds: string[] };
  }>('/_bench/invoices', { bodyLimit: 64 * 1024 * 1024 }, async (request) => {
    const { from, to, seed, t0, stepMs, patientIds } = request.body;
    await db.tx(async (query) => {
      await query(
        `INSERT INTO invoices (practice_id, id, number, status, claim_status, patient_id, practitioner_id,
           coverage_id, pricing_coverage_id, place_of_service_code, recipient_name, date, due_date, currency,
           total_net, total_gross, amount_paid, issued_at, created_at, updated_at)
         SELECT $1, 'inv_' || substr(md5($2 || ':i:' || g), 1, 22), 'B-' || g, 'draft', NULL,
           (p.ids)[1 + (g % array_length(p.ids, 1))], NULL, NULL, NULL, NULL, 'Lerato Grace Dlamini',
           current_date, current_date + 30, 'ZAR', 104250, 104250, 0, NULL,
           $3::timestamptz + g * $4::bigint * interval '1 millisecond',
           $3::timestamptz + g * $4::bigint * interval '1 millisecond'
         FROM generate_series($5::bigint, $6::bigint) AS g,
              (SELECT array_agg(value) AS ids FROM json_array_elements_text($7::json)) AS p`,
        [practiceId, seed, t0, stepMs, from, to, JSON.stringify(patientIds)],
      );
      // Two lines and one visit per invoice, like the visits the service bills in the bench.
      await query(
        `INSERT INTO invoice_lines (practice_id, id, invoice_id, position, service_date, system, code, description,
           quantity, unit_price, subtotal, total, pricing_source, diagnoses)
         SELECT $1, 'li_' || substr(md5($2 || ':l:' || g || ':' || n), 1, 22),
           'inv_' || substr(md5($2 || ':i:' || g), 1, 22), n, current_date, 'urn:service:codesystem:tariff',
           CASE n WHEN 1 THEN '0190' ELSE '0191' END, 'Consultation', 1, 52125, 52125, 52125, 'medical_aid',
           jsonb_build_array(jsonb_build_object('system', 'http://hl7.org/fhir/sid/icd-10', 'code',
             CASE n WHEN 1 THEN 'J06.9' ELSE 'I10' END, 'display', 'Diagnosis', 'primary', true))
         FROM generate_series($3::bigint, $4::bigint) AS g, generate_series(1, 2) AS n`,
        [practiceId, seed, from, to],
      );
      await query(
        `INSERT INTO invoice_encounters (practice_id, invoice_id, encounter_id)
         SELECT $1, 'inv_' || substr(md5($2 || ':i:' || g), 1, 22), 'enc_' || substr(md5($2 || ':e:' || g), 1, 22)
         FROM generate_series($3::bigint, $4::bigint) AS g`,
        [practiceId, seed, from, to],
      );
    });
    await db.exec('ANALYZE invoices');
    await db.exec('ANALYZE invoice_lines');
    await db.exec('ANALYZE invoice_encounters');
    return { ok: true };
  });

  // Statistics for the planner once seeding is done, as the service's database gets them.
  app.post('/_bench/analyze', async () => {
    await db.exec('ANALYZE');
    return { ok: true };
  });

  await app.listen({ port, host: '127.0.0.1' });

  let closing = false;
  const close = async () => {
    if (closing) return;
    closing = true;
    await app.close().catch(() => {});
    await db.close().catch(() => {});
    process.exit(0);
  };
  process.on('SIGTERM', () => void close());
  process.on('SIGINT', () => void close());
  // The bench holds our stdin open; when it goes away, so do we.
  process.stdin.on('end', () => void close());
  process.stdin.on('error', () => void close());
  process.stdin.resume();
}

main().catch((error: unknown) => {
  process.stderr.write(
    `baseline: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
