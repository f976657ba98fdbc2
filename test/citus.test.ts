// The service on a two-node Citus cluster (../shared/citus/cluster.sh, beside the repository: a
// coordinator that holds shards too and one worker node), as an operator runs it (docs/scale-out.md):
// `practice-billing migrate` against a database with the citus extension and the worker added places
// the schema itself (tenant tables distributed by practice_id and colocated, catalogue tables as
// reference tables, the functions on every node), then the service serves a practice whose rows live
// on the coordinator and one whose rows live on the worker. Runs wherever the cluster script is
// present (CI has it, and .ci/run fails without it); skipped, saying so, where it is not. The
// cluster gets a directory of its own and free ports, and is removed afterwards; CITUS_KEEP=1 leaves it
// running, with its logs, for a look at what a node refused.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import pg from 'pg';
import { eraseDormantPatients } from '../src/data-rights/dormant.ts';
import { markOverdueInvoices } from '../src/invoices/overdue.ts';
import { DAY_MS } from '../src/platform/clock.ts';
import { CITUS_DISTRIBUTED_TABLES, CITUS_REFERENCE_TABLES } from '../src/platform/db/citus.ts';
import { openPostgres } from '../src/platform/db/database.ts';
import {
  addCoverage,
  getInvoice,
  issuedInvoice,
  payments,
  readClaim,
  sendClaim,
  type World,
} from './claims-fixtures.ts';
import {
  apiClient,
  patientBody,
  startService,
  type TestPractice,
  type TestService,
  uniqueKey,
} from './harness.ts';
import {
  assertNothingMissed,
  checkerSeed,
  runChangeFeedChecker,
  summary,
} from './resilience/change-feed-checker.ts';
import { scaleOutSuite } from './resilience/scale-out-suite.ts';
import {
  type LoggedStatement,
  loggedStatements,
  loggedTransactions,
  shardIdsNamed,
} from './support/citus-log.ts';
import { migrateUpToBefore } from './support/older-schema.ts';
import { addEndpoint, Receiver } from './webhooks-fixtures.ts';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '..');
const CLUSTER = path.resolve(ROOT, '../shared/citus/cluster.sh');
const skip =
  !fs.existsSync(CLUSTER) && `the Citus cluster script is absent (${CLUSTER}): nothing to run a cluster with`;

/** The cluster's own directory, and ports the system has free, so that it never meets another run's. */
let clusterDir = '';
const clusterEnv: Record<string, string | undefined> = { ...process.env };
let port = 0;
let coordinatorLog = '';

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: free } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return free;
}

/** A new database on the cluster, migrated as an operator does, with the drop that ends it. */
async function citusDatabase(prefix: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  const created = await cluster('createdb', name);
  await migrate(created);
  return { url: created, drop: async () => void (await cluster('dropdb', name)) };
}

async function cluster(...args: string[]): Promise<string> {
  const { stdout } = await run(CLUSTER, args, { env: clusterEnv, timeout: 120_000 });
  return stdout.trim();
}

/** `practice-billing migrate`, as an operator runs it, against `url`. */
async function migrate(url: string): Promise<{ applied: string[] }> {
  const { stdout } = await run(
    process.execPath,
    ['--conditions=@practice-billing/source', path.join(ROOT, 'bin/practice-billing.js'), 'migrate'],
    { env: { ...process.env, DATABASE_URL: url, LOG_LEVEL: 'silent' }, timeout: 120_000 },
  );
  return JSON.parse(stdout) as { applied: string[] };
}

/**
 * Places a database migrated before migration 0055 as the builds of then did (docs/scale-out.md,
 * "Setting up a database"): reference and distributed tables as now, idempotency_keys (which held the
 * operator's keys with no practice) kept on the coordinator as a Citus local table; foreign keys and
 * triggers lifted around the placing, as migrate does.
 */
async function placeAsBefore0055(c: pg.Client): Promise<void> {
  const { rows: keys } = await c.query<{ t: string; n: string; d: string }>(
    `SELECT conrelid::regclass::text AS t, conname AS n, pg_get_constraintdef(oid) AS d
       FROM pg_constraint WHERE contype = 'f' AND connamespace = 'public'::regnamespace`,
  );
  const { rows: triggers } = await c.query<{ t: string; n: string; d: string }>(
    `SELECT tgrelid::regclass::text AS t, tgname AS n, pg_get_triggerdef(oid) AS d FROM pg_trigger
      WHERE NOT tgisinternal AND tgrelid IN (SELECT oid FROM pg_class WHERE relnamespace = 'public'::regnamespace)`,
  );
  await c.query('BEGIN');
  await c.query('SET LOCAL citus.enable_unsafe_triggers = on');
  await c.query(`SET LOCAL citus.multi_shard_modify_mode = 'sequential'`);
  for (const k of keys) await c.query(`ALTER TABLE ${k.t} DROP CONSTRAINT ${k.n}`);
  for (const t of triggers) await c.query(`DROP TRIGGER ${t.n} ON ${t.t}`);
  for (const table of CITUS_REFERENCE_TABLES) await c.query('SELECT create_reference_table($1)', [table]);
  for (const table of CITUS_DISTRIBUTED_TABLES.filter((t) => t !== 'idempotency_keys'))
    await c.query(
      table === 'patients'
        ? `SELECT create_distributed_table('patients', 'practice_id')`
        : `SELECT create_distributed_table($1, 'practice_id', colocate_with => 'patients')`,
      table === 'patients' ? [] : [table],
    );
  await c.query(`SELECT citus_add_local_table_to_metadata('idempotency_keys')`);
  for (const t of triggers) await c.query(t.d);
  for (const k of keys) await c.query(`ALTER TABLE ${k.t} ADD CONSTRAINT ${k.n} ${k.d}`);
  await c.query('COMMIT');
}

/** The coordinator log's length now: what it logs after this is read by `loggedSince`. */
const logMark = () => fs.statSync(coordinatorLog).size;
const loggedSince = (mark: number) => fs.readFileSync(coordinatorLog).subarray(mark).toString('utf8');

/**
 * The statements that reach every practice's shards by design (docs/scale-out.md, "Distributing with
 * Citus"), told by their text as the service sends it: the job take's pick of the practices with due
 * work and the overdue scan's pick of the practices with overdue invoices (reads that lock nothing),
 * and the renewal of the leases a worker holds (one statement for all its running jobs).
 */
const ACROSS_PRACTICES: Record<string, RegExp> = {
  'the job pick': /^\s*SELECT practice_id FROM jobs\b[\s\S]*\bGROUP BY practice_id\b/,
  'the overdue pick': /^\s*SELECT DISTINCT i\.practice_id FROM invoices i\b/,
  'the lease renewal': /^\s*UPDATE jobs AS j SET locked_until\b[\s\S]*\bFROM unnest\(/,
};

/** Which statement across practices this is, if it is one. */
function acrossPractices(statement: LoggedStatement): string | undefined {
  return Object.keys(ACROSS_PRACTICES).find((name) => ACROSS_PRACTICES[name]!.test(statement.text));
}

/** A statement with the shard groups (hash ranges, shared by colocated shards) its commands reached. */
interface Reach {
  text: string;
  groups: Set<string>;
  across: string | undefined;
}

/** A commit with two-phase commit: the coordinator prepared the transaction on a node. */
const preparedOnANode = (statement: LoggedStatement) =>
  statement.sent.some((command) => /^\s*PREPARE TRANSACTION\b/i.test(command));

describe('the service on a two-node Citus cluster', { skip }, () => {
  let url: string;
  let admin: pg.Client;
  let svc: TestService;
  const database = `pb_citus_${randomBytes(4).toString('hex')}`;
  /** Where the coordinator's log stood when the service started. */
  let serviceMark = 0;
  /** The practice of each node, as its describe block made it. */
  const worlds: Partial<Record<'coordinator' | 'worker', World & { practice: TestPractice }>> = {};

  before(async () => {
    clusterDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pb-citus-'));
    coordinatorLog = path.join(clusterDir, 'coordinator.log');
    clusterEnv.CITUS_DIR = clusterDir;
    port = await freePort();
    let workerPort = await freePort();
    while (workerPort === port) workerPort = await freePort();
    clusterEnv.CITUS_COORDINATOR_PORT = String(port);
    clusterEnv.CITUS_WORKER_PORT = String(workerPort);
    await cluster('start');
    url = await cluster('createdb', database);
    admin = new pg.Client({ connectionString: url });
    await admin.connect();
  });
  after(async () => {
    await svc?.close();
    await admin?.end();
    if (process.env.CITUS_KEEP) return;
    if (clusterDir) await cluster('destroy').catch(() => undefined);
    if (clusterDir) fs.rmSync(clusterDir, { recursive: true, force: true });
  });

  /** Each statement logged since `mark`, with the shard groups it reached. */
  async function reachSince(mark: number): Promise<Reach[]> {
    const { rows } = await admin.query<{ shardid: string; low: string }>(
      `SELECT s.shardid, s.shardminvalue AS low
         FROM pg_dist_shard s JOIN pg_dist_partition p USING (logicalrelid)
        WHERE p.partmethod = 'h'`,
    );
    const groupOf = new Map(rows.map((r) => [Number(r.shardid), r.low]));
    return loggedStatements(loggedSince(mark)).map((statement) => ({
      text: statement.text,
      groups: new Set(statement.sent.flatMap(shardIdsNamed).flatMap((id) => groupOf.get(id) ?? [])),
      across: acrossPractices(statement),
    }));
  }

  /** The shard group (hash range) of the practice's rows. */
  async function groupOfPractice(practiceId: string): Promise<string> {
    const { rows } = await admin.query<{ low: string }>(
      `SELECT shardminvalue AS low FROM pg_dist_shard
        WHERE shardid = get_shard_id_for_distribution_column('patients', $1::text)`,
      [practiceId],
    );
    return rows[0]!.low;
  }

  /** The transactions logged since `mark` that name `table` and committed with two-phase commit. */
  function twoPhaseCommits(mark: number, table: RegExp): { naming: number; prepared: string[] } {
    const naming = loggedTransactions(loggedSince(mark)).filter((t) =>
      t.statements.some((s) => table.test(s.text)),
    );
    const prepared = naming.filter((t) => t.statements.some(preparedOnANode));
    return {
      naming: naming.length,
      prepared: prepared.map((t) => t.statements.map((s) => s.text.slice(0, 80)).join(' | ')),
    };
  }

  test('practice-billing migrate places every table and function on the cluster', async () => {
    const { applied } = await migrate(url);
    assert.ok(applied.length > 20, `applied ${applied.length} migrations`);
    const { rows } = await admin.query<{ table: string; method: string; colocation: number }>(
      `SELECT logicalrelid::regclass::text AS table, partmethod AS method, colocationid AS colocation
         FROM pg_dist_partition`,
    );
    const of = (t: string) => rows.find((r) => r.table === t);
    assert.equal(of('patients')?.method, 'h', 'patients distributed by hash');
    assert.equal(of('invoices')?.method, 'h');
    assert.equal(of('invoices')?.colocation, of('patients')?.colocation, 'invoices colocated with patients');
    assert.equal(of('audit_events')?.colocation, of('patients')?.colocation);
    assert.equal(of('practices')?.method, 'n', 'practices a reference table');
    assert.equal(of('code_concepts')?.method, 'n');
    const worker = new pg.Client({
      connectionString: url.replace(`:${port}/`, `:${clusterEnv.CITUS_WORKER_PORT}/`),
    });
    await worker.connect();
    try {
      const fns = await worker.query<{ name: string }>(
        `SELECT proname AS name FROM pg_proc WHERE pronamespace = 'public'::regnamespace`,
      );
      const names = fns.rows.map((r) => r.name);
      for (const fn of ['job_lease_lost', 'change_feed_horizon', 'api_key_for_request'])
        assert.ok(names.includes(fn), `${fn} exists on the worker node`);
    } finally {
      await worker.end();
    }
    // A second run finds everything in place and changes nothing.
    assert.deepEqual((await migrate(url)).applied, []);
  });

  test('a database migrated before Citus was installed is placed by the next migrate, rows and all', async () => {
    const name = `pb_citus_moved_${randomBytes(4).toString('hex')}`;
    const workerPort = clusterEnv.CITUS_WORKER_PORT!;
    const on = async (p: string | number, db: string, statement: string) => {
      const c = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${p}/${db}` });
      await c.connect();
      try {
        return await c.query(statement);
      } finally {
        await c.end();
      }
    };
    await on(port, 'postgres', `CREATE DATABASE ${name}`);
    await on(workerPort, 'postgres', `CREATE DATABASE ${name}`);
    try {
      const moved = `postgres://postgres@127.0.0.1:${port}/${name}`;
      await migrate(moved);
      await on(port, name, `INSERT INTO practices (id, name) VALUES ('prc_moved', 'Moved practice')`);
      const concepts = Number((await on(port, name, 'SELECT count(*) AS n FROM code_concepts')).rows[0].n);
      assert.ok(concepts > 0, 'the catalogue is loaded');
      // The operator's part (docs/scale-out.md, "Setting up a database"), then migrate again.
      await on(port, name, 'CREATE EXTENSION citus');
      await on(workerPort, name, 'CREATE EXTENSION citus');
      await on(port, name, `SELECT citus_set_coordinator_host('127.0.0.1', ${port})`);
      await on(port, name, `SELECT citus_add_node('127.0.0.1', ${workerPort})`);
      assert.deepEqual((await migrate(moved)).applied, []);
      const placed = await on(
        port,
        name,
        `SELECT partmethod FROM pg_dist_partition WHERE logicalrelid = 'patients'::regclass`,
      );
      assert.equal(placed.rows[0]?.partmethod, 'h');
      assert.equal(
        Number((await on(port, name, 'SELECT count(*) AS n FROM code_concepts')).rows[0].n),
        concepts,
      );
      assert.equal((await on(port, name, `SELECT 1 FROM practices WHERE id = 'prc_moved'`)).rowCount, 1);
    } finally {
      await cluster('dropdb', name);
    }
  });

  test("an older build's placement, idempotency_keys on the coordinator, is upgraded with its stored answers", async () => {
    const name = `pb_citus_keys_${randomBytes(4).toString('hex')}`;
    const older = await cluster('createdb', name);
    const db = openPostgres({ url: older, poolSize: 1, statementTimeoutMs: 60_000 });
    const c = new pg.Client({ connectionString: older });
    await c.connect();
    try {
      await migrateUpToBefore(db, '0055_operator_idempotency_keys_apart');
      await c.query(`INSERT INTO practices (id, name) VALUES ('org_older', 'Older practice')`);
      await c.query(`INSERT INTO clients (practice_id, id, name, permissions)
                     VALUES ('org_older', 'cli_older', 'Older client', '{}')`);
      const stored = `INSERT INTO idempotency_keys (practice_id, client_id, key, fingerprint, response_status,
                        response_headers, response_body, expires_at)
                      VALUES ($1, $2, $3, 'fp', 201, '{}', $4, now() + interval '1 day')`;
      await c.query(stored, [null, null, 'operator-key', '{"id":"org_older"}']);
      await c.query(stored, ['org_older', 'cli_older', 'client-key', '{"id":"pat_older"}']);
      await placeAsBefore0055(c);
      const { applied } = await migrate(older);
      assert.ok(applied.includes('0055_operator_idempotency_keys_apart'), applied.join(', '));
      const placed = await c.query<{ method: string; colocated: boolean }>(
        `SELECT k.partmethod AS method, k.colocationid = p.colocationid AS colocated
           FROM pg_dist_partition k, pg_dist_partition p
          WHERE k.logicalrelid = 'idempotency_keys'::regclass AND p.logicalrelid = 'patients'::regclass`,
      );
      assert.deepEqual(placed.rows, [{ method: 'h', colocated: true }], 'distributed beside the patients');
      const operator = await c.query(`SELECT key, response_body FROM operator_idempotency_keys`);
      assert.deepEqual(operator.rows, [{ key: 'operator-key', response_body: '{"id":"org_older"}' }]);
      const clients = await c.query(`SELECT practice_id, key, response_body FROM idempotency_keys`);
      assert.deepEqual(clients.rows, [
        { practice_id: 'org_older', key: 'client-key', response_body: '{"id":"pat_older"}' },
      ]);
    } finally {
      await c.end();
      await db.close();
      await cluster('dropdb', name);
    }
  });

  test('the service starts on the distributed database', async () => {
    // What the coordinator sends to the nodes and runs on its own shards, after the statement that
    // caused it, goes to its log, for the counts of shards and commits below.
    await admin.query(`ALTER DATABASE ${database} SET citus.log_remote_commands = on`);
    await admin.query(`ALTER DATABASE ${database} SET citus.log_local_commands = on`);
    await admin.query(`ALTER DATABASE ${database} SET log_statement = 'all'`);
    await admin.query(`ALTER DATABASE ${database} SET log_min_messages = notice`);
    serviceMark = logMark();
    svc = await startService('postgres', { databaseUrl: url });
    const health = await fetch(`${svc.baseUrl}/health`);
    assert.ok(health.status < 500);
  });

  for (const node of ['coordinator', 'worker'] as const) {
    describe(`a practice whose rows live on the ${node}`, () => {
      let w: World & { practice: TestPractice };
      let receiver: Receiver;
      let claimed: { invoiceId: string };
      const since = new Date().toISOString();
      before(async () => {
        w = await practiceOn(node);
        worlds[node] = w;
        receiver = await Receiver.forService(svc);
        await addEndpoint(svc, w.practiceId, receiver);
      });
      after(async () => {
        await receiver?.close();
      });

      test('a patient with a coverage is registered and read back', async () => {
        const created = await w.api('POST', '/patients', {
          body: patientBody(),
          idempotencyKey: uniqueKey(),
        });
        assert.equal(created.status, 201, created.text);
        const read = await w.api('GET', `/patients/${created.body.id}`);
        assert.equal(read.status, 200, read.text);
        assert.deepEqual(read.body, created.body);
        const recorded = await admin.query(
          `SELECT 1 FROM audit_events WHERE practice_id = $1 AND resource_id = $2 AND method = 'GET' AND status = 200`,
          [w.practiceId, created.body.id],
        );
        assert.equal(recorded.rowCount, 1, 'the read is recorded in the audit log');
        await addCoverage(w, created.body.id);
        const coverages = await w.api('GET', `/patients/${created.body.id}/coverages`);
        assert.equal(coverages.status, 200, coverages.text);
        assert.equal(coverages.body.data.length, 1);
      });

      test('a visit is billed and issued', async () => {
        claimed = await issuedInvoice(w);
        assert.match((await getInvoice(w, claimed.invoiceId)).number, /\S/);
      });

      test('the claim is sent, the insurer answers, and the remittance pays the invoice', async () => {
        await sendClaim(w, claimed.invoiceId);
        await svc.worker.drain();
        const claim = await readClaim(w, claimed.invoiceId);
        assert.equal(claim.status, 'accepted');
        const paid = await payments(w, claimed.invoiceId);
        assert.ok(paid.length > 0, 'the insurer paid');
        assert.equal((await getInvoice(w, claimed.invoiceId)).status, 'balanced');
      });

      test('a payment and a refund are recorded', async () => {
        const { invoiceId } = await issuedInvoice(w, { coverage: null });
        const payment = await w.api('POST', `/invoices/${invoiceId}/payments`, {
          body: { amount: 1_000, method: 'card' },
          idempotencyKey: uniqueKey(),
        });
        assert.equal(payment.status, 201, payment.text);
        const refund = await w.api('POST', `/invoices/${invoiceId}/refunds`, {
          body: { amount: 400, method: 'card', reason: 'Charged twice at the desk' },
          idempotencyKey: uniqueKey(),
        });
        assert.equal(refund.status, 201, refund.text);
        assert.equal((await getInvoice(w, invoiceId)).amountPaid, 600);
      });

      test("the events feed and updatedSince answer the practice's changes", async () => {
        const events = await w.api('GET', '/events?limit=100');
        assert.equal(events.status, 200, events.text);
        const types = new Set(events.body.data.map((e: { type: string }) => e.type));
        for (const type of ['invoice.issued', 'claim.status_changed', 'payment.created', 'refund.created'])
          assert.ok(types.has(type), `${type} in the feed (${[...types].join(', ')})`);
        const changed = await w.api('GET', `/invoices?updatedSince=${encodeURIComponent(since)}`);
        assert.equal(changed.status, 200, changed.text);
        assert.equal(changed.body.data.length, 2);
      });

      test('each event reaches the webhook receiver once, signed', async () => {
        await svc.worker.drain();
        assert.ok(receiver.requests.length > 0, 'deliveries arrived');
        receiver.assertAllVerified();
        assert.equal(receiver.uniqueIds().size, receiver.requests.length, 'no event delivered twice');
      });

      test('each statement of a request reaches the shards of its own practice only', async () => {
        const mark = logMark();
        const patient = await w.api('POST', '/patients', {
          body: patientBody(),
          idempotencyKey: uniqueKey(),
        });
        assert.equal(patient.status, 201, patient.text);
        assert.equal((await w.api('GET', `/patients/${patient.body.id}`)).status, 200);
        await addCoverage(w, patient.body.id);
        const { invoiceId } = await issuedInvoice(w, { coverage: null });
        const paid = await w.api('POST', `/invoices/${invoiceId}/payments`, {
          body: { amount: 100, method: 'card' },
          idempotencyKey: uniqueKey(),
        });
        assert.equal(paid.status, 201, paid.text);
        assert.equal((await w.api('GET', '/events?limit=10')).status, 200);
        assert.equal((await w.api('GET', '/invoices?limit=10')).status, 200);
        const own = await groupOfPractice(w.practiceId);
        const reach = await reachSince(mark);
        assert.ok(
          reach.some((r) => r.groups.has(own)),
          "the log shows statements reaching the practice's shards",
        );
        const stray = reach.filter((r) => [...r.groups].some((g) => g !== own)).map((r) => r.text);
        assert.deepEqual(stray, [], "no statement reached another practice's shards");
      });

      test("a keyed create commits on the practice's node alone, without two-phase commit", async () => {
        const mark = logMark();
        const patient = await w.api('POST', '/patients', {
          body: patientBody(),
          idempotencyKey: uniqueKey(),
        });
        assert.equal(patient.status, 201, patient.text);
        const { invoiceId } = await issuedInvoice(w, { coverage: null });
        const paid = await w.api('POST', `/invoices/${invoiceId}/payments`, {
          body: { amount: 100, method: 'card' },
          idempotencyKey: uniqueKey(),
        });
        assert.equal(paid.status, 201, paid.text);
        const { naming, prepared } = twoPhaseCommits(mark, /\bidempotency_keys\b/);
        assert.ok(naming >= 2, `the keyed requests' transactions are in the log (${naming})`);
        assert.deepEqual(prepared, [], 'no keyed request committed with PREPARE TRANSACTION');
      });

      test("the operator's keyed payment commits on the practice's node in one phase", async () => {
        const { invoiceId } = await issuedInvoice(w, { coverage: null });
        const mark = logMark();
        const paid = await svc.admin('POST', `/practices/${w.practiceId}/payments`, {
          invoiceId,
          amount: 100,
          method: 'cash',
        });
        assert.equal(paid.status, 201, paid.text);
        const { naming, prepared } = twoPhaseCommits(mark, /\boperator_idempotency_keys\b/);
        assert.equal(naming, 1, "the operator's keyed payment is in the log");
        assert.deepEqual(prepared, [], 'it committed without PREPARE TRANSACTION');
      });

      test("each job kind's work reaches the practice's own shards; only the pick reaches others", async () => {
        const kinds = [
          'claim.submit',
          'insurer.remittance',
          'claim.reverse',
          'webhook.deliver',
          'notification.mail',
        ];
        const ran = async () => {
          const { rows } = await admin.query<{ kind: string; n: number }>(
            `SELECT kind, count(*)::int AS n FROM jobs WHERE practice_id = $1 AND state = 'done' GROUP BY kind`,
            [w.practiceId],
          );
          return new Map(rows.map((r) => [r.kind, r.n]));
        };
        const before = await ran();
        const mark = logMark();
        // The patient has an address, so the issue queues the e-mail job too.
        const { invoiceId } = await issuedInvoice(w, { email: 'patient@example.org' });
        await sendClaim(w, invoiceId);
        await svc.worker.drain();
        assert.equal((await readClaim(w, invoiceId)).status, 'accepted');
        await sendClaim(w, invoiceId, 'claim/reverse');
        await svc.worker.drain();
        assert.equal((await readClaim(w, invoiceId)).status, 'reversed');
        const after = await ran();
        for (const kind of kinds)
          assert.ok((after.get(kind) ?? 0) > (before.get(kind) ?? 0), `a ${kind} job ran`);
        const own = await groupOfPractice(w.practiceId);
        const reach = await reachSince(mark);
        const stray = reach
          .filter((r) => r.across === undefined && [...r.groups].some((g) => g !== own))
          .map((r) => r.text);
        assert.deepEqual(stray, [], "no statement of the jobs' work reached another practice's shards");
        assert.ok(
          reach.some((r) => r.across === 'the job pick' && r.groups.size > 1),
          'the job pick is seen reaching every shard',
        );
      });

      test('an event is delivered again on request, signed', async () => {
        const events = await w.api('GET', '/events?limit=1');
        const eventId = events.body.data[0].id;
        await svc.worker.drain();
        const before = receiver.requests.length;
        const redelivered = await svc.admin(
          'POST',
          `/practices/${w.practiceId}/events/${eventId}/redeliver`,
          {},
        );
        assert.equal(redelivered.status, 202, redelivered.text);
        assert.equal(redelivered.body.queued, 1);
        await svc.worker.drain();
        assert.equal(receiver.requests.length, before + 1);
        receiver.assertAllVerified();
      });

      test("the practice's own code system is changed", async () => {
        const system = await w.api('POST', '/code-systems', {
          body: { name: `Own ${randomBytes(4).toString('hex')}`, usage: ['procedure'] },
          idempotencyKey: uniqueKey(),
        });
        assert.equal(system.status, 201, system.text);
        const concept = await w.api('POST', `/code-systems/${system.body.id}/concepts`, {
          body: { code: 'OWN-01', display: 'Own procedure', defaultPrice: 5_000 },
          idempotencyKey: uniqueKey(),
        });
        assert.equal(concept.status, 201, concept.text);
        const gone = await w.api('DELETE', `/code-systems/${system.body.id}/concepts/${concept.body.id}`);
        assert.equal(gone.status, 200, gone.text);
        assert.equal(gone.body.deleted, true);
      });

      test('the key is rotated: the new key serves, the old one is refused', async () => {
        const issued = await svc.admin('POST', `/clients/${w.practice.clientId}/keys`, {});
        assert.equal(issued.status, 201, issued.text);
        const revoked = await svc.admin('POST', `/keys/${w.practice.keyId}/revoke`, {});
        assert.ok(revoked.status < 300, revoked.text);
        assert.equal((await apiClient(svc, issued.body.key)('GET', '/invoices?limit=1')).status, 200);
        assert.equal((await w.api('GET', '/invoices?limit=1')).status, 401);
        w.api = apiClient(svc, issued.body.key);
      });

      test('a refused request is answered 422', async () => {
        const refused = await w.api('POST', '/patients', {
          body: patientBody({ birthDate: '2999-01-01' }),
          idempotencyKey: uniqueKey(),
        });
        assert.equal(refused.status, 422, refused.text);
        const { rows } = await admin.query<{ status: number; route: string }>(
          `SELECT status, route FROM audit_events WHERE practice_id = $1 AND request_id = $2`,
          [w.practiceId, refused.body.requestId],
        );
        assert.deepEqual(
          rows.map((r) => r.status),
          [422],
          'the refusal has its audit row, on the node of the practice',
        );
      });
    });
  }

  test("a take of both practices' jobs leases and prepares each practice's with statements of its own", async () => {
    const both = [worlds.coordinator!, worlds.worker!];
    // Each issue queues the patient's e-mail and the invoice.issued delivery: two lanes, two practices.
    for (const w of both) await issuedInvoice(w, { coverage: null, email: 'patient@example.org' });
    const mark = logMark();
    assert.ok((await svc.worker.drain()) >= 4, 'the jobs of both practices ran');
    const reach = await reachSince(mark);
    const stray = reach.filter((r) => r.across === undefined && r.groups.size > 1).map((r) => r.text);
    assert.deepEqual(stray, [], "no statement but the pick reached two practices' shards");
    const reached = new Set(reach.flatMap((r) => (r.across === undefined ? [...r.groups] : [])));
    for (const w of both)
      assert.ok(reached.has(await groupOfPractice(w.practiceId)), `${w.practiceId}'s jobs ran on its shards`);
  });

  test("the periodic tasks that act per practice reach one practice's shards a statement", async () => {
    const mark = logMark();
    const marked = await markOverdueInvoices(svc.db, new Date(Date.now() + 120 * DAY_MS));
    assert.ok(marked > 0, 'invoices were marked overdue');
    const erased = await eraseDormantPatients(svc.db, new Date(Date.now() + 40 * 365 * DAY_MS));
    assert.ok(erased > 0, 'dormant patients were de-identified');
    const reach = await reachSince(mark);
    const stray = reach.filter((r) => r.across === undefined && r.groups.size > 1).map((r) => r.text);
    assert.deepEqual(stray, [], "no statement but the overdue pick reached two practices' shards");
    assert.ok(
      reach.some((r) => r.across === 'the overdue pick' && r.groups.size > 1),
      'the overdue pick is seen reaching every shard',
    );
  });

  test('no transaction that changed what the feeds read committed with two-phase commit', async () => {
    // Every request, job and periodic task above, on both practices (docs/scale-out.md: a change
    // committed in two phases is visible only after the coordinator's own commit, which a feed reader
    // could pass by).
    const changes = /\b(?:insert into|update) "?(?:events|invoices)"?\s/i;
    const transactions = loggedTransactions(loggedSince(serviceMark)).filter((t) =>
      t.statements.some((s) => changes.test(s.text)),
    );
    assert.ok(transactions.length > 20, `the log holds the changes (${transactions.length})`);
    const prepared = transactions
      .filter((t) => t.statements.some(preparedOnANode))
      .map((t) => t.statements.map((s) => s.text.trim().slice(0, 60)).join(' | '));
    assert.deepEqual(prepared, []);
  });

  test('the change feed checker misses nothing on the cluster', async () => {
    const seed = checkerSeed();
    const report = await runChangeFeedChecker({
      transactions: 300,
      writers: 6,
      followers: 3,
      seed,
      // Some writers held open past the readers' wait, so that readers use the samples too.
      longShare: 0.02,
      database: () => citusDatabase('pb_citus_feed'),
    });
    console.log(`change-feed checker on Citus: CHANGE_FEED_SEED=${seed}; ${summary(report)}`);
    assertNothingMissed(report);
    assert.ok(report.committed > 0 && report.samples > 0, summary(report));
  });

  // The 2+2 processes test, on a database of its own on the cluster, migrated as an operator does.
  scaleOutSuite('two API and two worker processes on the Citus cluster', {
    skip: false,
    database: () => citusDatabase('pb_citus_scale'),
  });

  /** A new practice whose shard is on `node`: practices are made until one lands there. */
  async function practiceOn(node: 'coordinator' | 'worker'): Promise<World & { practice: TestPractice }> {
    const wanted = node === 'coordinator' ? port : Number(clusterEnv.CITUS_WORKER_PORT);
    for (let i = 0; i < 40; i++) {
      const practice = await svc.newPractice();
      const { rows } = await admin.query<{ nodeport: number }>(
        `SELECT p.nodeport FROM pg_dist_shard_placement p
          WHERE p.shardid = get_shard_id_for_distribution_column('patients', $1::text)`,
        [practice.practiceId],
      );
      if (rows[0]?.nodeport === wanted)
        return {
          svc,
          api: apiClient(svc, practice.key),
          practiceId: practice.practiceId,
          practitionerId: practice.practitionerId,
          practice,
        };
    }
    throw new Error(`no practice landed on the ${node} in 40 tries`);
  }
});
