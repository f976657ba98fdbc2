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
import { skipInMidnightRun } from './support/midnight-run.ts';
import { addEndpoint, Receiver } from './webhooks-fixtures.ts';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '..');
const CLUSTER = path.resolve(ROOT, '../shared/citus/cluster.sh');
const skip =
  skipInMidnightRun ||
  (!fs.existsSync(CLUSTER) &&
    `the Citus cluster script is absent (${CLUSTER}): nothing to run a cluster with`);

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

describe('the service on a two-node Citus cluster', { skip }, () => {
  let url: string;
  let admin: pg.Client;
  let svc: TestService;
  const database = `pb_citus_${randomBytes(4).toString('hex')}`;

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

  test('the service starts on the distributed database', async () => {
    // What the coordinator sends to the nodes goes to its log, for the shard count below.
    await admin.query(`ALTER DATABASE ${database} SET citus.log_remote_commands = on`);
    await admin.query(`ALTER DATABASE ${database} SET log_min_messages = notice`);
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

      test("a request's statements touch the shards of its own practice only", async () => {
        const before = fs.statSync(coordinatorLog).size;
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
        const sent = fs.readFileSync(coordinatorLog).subarray(before).toString('utf8');
        const touched = new Set([...sent.matchAll(/\b[a-z_]+_(\d{6,})\b/g)].map((m) => Number(m[1])));
        const { rows } = await admin.query<{ shardid: string; own: boolean }>(
          `SELECT s.shardid, s.shardid = get_shard_id_for_distribution_column(s.logicalrelid, $1::text) AS own
             FROM pg_dist_shard s JOIN pg_dist_partition p USING (logicalrelid)
            WHERE p.partmethod = 'h'`,
          [w.practiceId],
        );
        const others = rows.filter((r) => !r.own && touched.has(Number(r.shardid))).map((r) => r.shardid);
        if (node === 'worker')
          assert.ok(touched.size > 0, 'the coordinator sent statements to the worker node');
        assert.deepEqual(others, [], "no statement went to another practice's shard");
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
