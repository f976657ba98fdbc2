// The service on a two-node Citus cluster (../shared/citus/cluster.sh, beside the repository: a
// coordinator that holds shards too and one worker node), as an operator runs it (docs/scale-out.md):
// `practice-billing migrate` against a database with the citus extension and the worker added places
// the schema itself (tenant tables distributed by practice_id and colocated, catalogue tables as
// reference tables, the functions on every node), then the service serves a practice whose rows live
// on the coordinator and one whose rows live on the worker. Runs wherever the cluster script is
// present (CI has it); skipped, saying so, where it is not.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import pg from 'pg';
import { apiClient, patientBody, startService, type TestService, uniqueKey } from './harness.ts';
import type { Api } from './support/factories.ts';
import { skipInMidnightRun } from './support/midnight-run.ts';
import { addEndpoint, Receiver } from './webhooks-fixtures.ts';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '..');
const CLUSTER = path.resolve(ROOT, '../shared/citus/cluster.sh');
const skip =
  skipInMidnightRun ||
  (!fs.existsSync(CLUSTER) &&
    `the Citus cluster script is absent (${CLUSTER}): nothing to run a cluster with`);

/** The cluster's own directory and ports, so that it never meets another run's. */
const port = 56_000 + Math.floor(Math.random() * 3_000) * 2;
const clusterEnv = {
  ...process.env,
  CITUS_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'pb-citus-')),
  CITUS_COORDINATOR_PORT: String(port),
  CITUS_WORKER_PORT: String(port + 1),
};

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
    await cluster('start');
    url = await cluster('createdb', database);
    admin = new pg.Client({ connectionString: url });
    await admin.connect();
  });
  after(async () => {
    await svc?.close();
    await admin?.end();
    await cluster('destroy').catch(() => undefined);
    fs.rmSync(clusterEnv.CITUS_DIR, { recursive: true, force: true });
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
    const worker = new pg.Client({ connectionString: url.replace(`:${port}/`, `:${port + 1}/`) });
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

  test('the service starts on the distributed database', async () => {
    svc = await startService('postgres', { databaseUrl: url });
    const health = await fetch(`${svc.baseUrl}/health`);
    assert.ok(health.status < 500);
  });

  for (const node of ['coordinator', 'worker'] as const) {
    describe(`a practice whose rows live on the ${node}`, () => {
      let api: Api;
      let patientId: string;
      before(async () => {
        const wanted = node === 'coordinator' ? port : port + 1;
        for (let i = 0; i < 40; i++) {
          const practice = await svc.newPractice();
          const { rows } = await admin.query<{ nodeport: number }>(
            `SELECT p.nodeport FROM pg_dist_shard_placement p
              WHERE p.shardid = get_shard_id_for_distribution_column('patients', $1::text)`,
            [practice.practiceId],
          );
          if (rows[0]?.nodeport === wanted) {
            api = apiClient(svc, practice.key);
            return;
          }
        }
        throw new Error(`no practice landed on the ${node} in 40 tries`);
      });

      test('a patient is registered and read back', async () => {
        const created = await api('POST', '/patients', { body: patientBody(), idempotencyKey: uniqueKey() });
        assert.equal(created.status, 201, created.text);
        patientId = created.body.id;
        const read = await api('GET', `/patients/${patientId}`);
        assert.equal(read.status, 200, read.text);
        assert.deepEqual(read.body, created.body);
      });

      test('a refused request is answered 422', async () => {
        const refused = await api('POST', '/patients', {
          body: patientBody({ birthDate: '2999-01-01' }),
          idempotencyKey: uniqueKey(),
        });
        assert.equal(refused.status, 422, refused.text);
      });
    });
  }
});

export { addEndpoint, Receiver };
