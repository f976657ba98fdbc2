// The service surviving its database going away, as a real `practice-billing serve` process on a
// throwaway PostgreSQL cluster of its own (never the shared one), reached through a TCP proxy the test
// controls. Under a bounded load of reads and creates: sessions terminated, PostgreSQL restarted
// (immediate stop), and the connection stalled. While the database is away every answer is 503
// service_unavailable with Retry-After, in bounded time; the service serves again within 10 s of the
// database's return; afterwards every patient has one audit row, no key stays claimed, and a retry with
// the same Idempotency-Key yields one record.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import {
  type RemotePractice,
  remotePractice,
  type ServeProcess,
  startServeProcess,
} from './child-service.ts';
import { call, patientBody } from './harness.ts';
import { freePort } from './processes.ts';

const PG_BIN = '/usr/lib/postgresql/15/bin';
const STATEMENT_TIMEOUT_MS = 1500;
/** The pool waits this long for a connection (src/platform/db/database.ts). */
const CONNECT_TIMEOUT_MS = 5000;
/** pg's client-side query limit: the statement timeout plus one second (src/platform/db/database.ts). */
const QUERY_TIMEOUT_MS = STATEMENT_TIMEOUT_MS + 1000;
/**
 * The longest a request may take while the database is away: a wait for a pooled connection, a query
 * that gets no answer and the ROLLBACK queued behind it, and a margin for a busy machine.
 */
const ANSWER_BOUND_MS = CONNECT_TIMEOUT_MS + 2 * QUERY_TIMEOUT_MS + 1500;
/** The client gives up here and records a hang. */
const HANG_MS = 20_000;
const CONCURRENCY = Number(process.env.DB_FAULTS_CONCURRENCY ?? 6);
/** Upper bound on the requests of one load phase, whatever happens. */
const MAX_REQUESTS_PER_PHASE = 10_000;

function exec(file: string, args: string[], timeoutMs = 60_000): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: timeoutMs }, (error, stdout, stderr) => {
      if (error)
        reject(new Error(`${file} ${args.join(' ')} failed: ${error.message}\n${stdout}\n${stderr}`));
      else resolve({ stdout, stderr });
    });
  });
}

/** Why a private cluster cannot be made here, or undefined when it can. */
function clusterUnavailable(): string | undefined {
  if (os.platform() !== 'linux') return 'needs Linux';
  if (!fs.existsSync(path.join(PG_BIN, 'initdb'))) return `no PostgreSQL binaries in ${PG_BIN}`;
  if (process.getuid?.() !== 0) return 'needs root to run PostgreSQL as the postgres user';
  if (!fs.existsSync('/usr/sbin/runuser') && !fs.existsSync('/sbin/runuser')) return 'needs runuser';
  return undefined;
}

/** A PostgreSQL cluster of this test alone, in a temporary directory owned by the postgres user. */
class TempCluster {
  readonly dir: string;
  readonly dataDir: string;
  readonly port: number;
  constructor(port: number) {
    this.port = port;
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pb-faults-pg-'));
    this.dataDir = path.join(this.dir, 'data');
  }

  #asPostgres(tool: string, args: string[]) {
    return exec('runuser', ['-u', 'postgres', '--', path.join(PG_BIN, tool), ...args]);
  }

  async init(): Promise<void> {
    const { stdout } = await exec('id', ['-u', 'postgres']);
    const uid = Number(stdout.trim());
    const gid = Number((await exec('id', ['-g', 'postgres'])).stdout.trim());
    fs.chownSync(this.dir, uid, gid);
    await this.#asPostgres('initdb', ['-D', this.dataDir, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  }

  start() {
    return this.#asPostgres('pg_ctl', [
      '-D',
      this.dataDir,
      '-l',
      path.join(this.dir, 'server.log'),
      '-w',
      '-t',
      '60',
      '-o',
      `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=60`,
      'start',
    ]);
  }

  stopImmediately() {
    return this.#asPostgres('pg_ctl', ['-D', this.dataDir, '-m', 'immediate', '-w', 'stop']);
  }

  async destroy(): Promise<void> {
    if (fs.existsSync(path.join(this.dataDir, 'postmaster.pid'))) {
      await this.stopImmediately().catch(() => {});
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  url(port = this.port): string {
    return `postgres://postgres@127.0.0.1:${port}/postgres`;
  }
}

/** Forwards loopback TCP to the database; pause() holds every byte in both directions until resume(). */
class StallProxy {
  readonly #server: net.Server;
  readonly #resumers = new Set<() => void>();
  readonly #sockets = new Set<net.Socket>();
  #paused = false;
  port = 0;
  readonly targetPort: number;

  constructor(targetPort: number) {
    this.targetPort = targetPort;
    this.#server = net.createServer((client) => this.#accept(client));
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    const address = this.#server.address();
    this.port = typeof address === 'object' && address ? address.port : 0;
  }

  #accept(client: net.Socket) {
    const upstream = net.connect(this.targetPort, '127.0.0.1');
    this.#sockets.add(client).add(upstream);
    const held: Array<[net.Socket, Buffer]> = [];
    const forward = (to: net.Socket) => (data: Buffer) => {
      if (this.#paused) held.push([to, data]);
      else to.write(data);
    };
    client.on('data', forward(upstream));
    upstream.on('data', forward(client));
    const flush = () => {
      for (const [to, data] of held.splice(0)) to.write(data);
    };
    this.#resumers.add(flush);
    const end = () => {
      this.#resumers.delete(flush);
      this.#sockets.delete(client);
      this.#sockets.delete(upstream);
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  }

  pause(): void {
    this.#paused = true;
  }

  resume(): void {
    this.#paused = false;
    for (const flush of this.#resumers) flush();
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

interface Outcome {
  phase: string;
  kind: 'read' | 'create';
  status: number;
  ms: number;
  code: string | undefined;
  retryAfter: string | null;
  idem?: string;
  body?: ReturnType<typeof patientBody>;
  id?: string;
}

async function timedCall(
  baseUrl: string,
  key: string,
  kind: 'read' | 'create',
  target: string,
  phase: string,
): Promise<Outcome> {
  const started = performance.now();
  const body = kind === 'create' ? patientBody() : undefined;
  const idem = kind === 'create' ? `fault-${randomBytes(8).toString('hex')}` : undefined;
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  if (body) headers['content-type'] = 'application/json';
  if (idem) headers['idempotency-key'] = idem;
  try {
    const response = await fetch(`${baseUrl}/api/v1${kind === 'create' ? '/patients' : target}`, {
      method: kind === 'create' ? 'POST' : 'GET',
      headers,
      ...(body ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(HANG_MS),
    });
    const text = await response.text();
    let parsed: { code?: string; id?: string } | undefined;
    try {
      parsed = JSON.parse(text) as { code?: string; id?: string };
    } catch {
      parsed = undefined;
    }
    return {
      phase,
      kind,
      status: response.status,
      ms: performance.now() - started,
      code: parsed?.code,
      retryAfter: response.headers.get('retry-after'),
      ...(idem && body ? { idem, body } : {}),
      ...(response.status === 201 && parsed?.id ? { id: parsed.id } : {}),
    };
  } catch (error) {
    // A hang (aborted by the client) or a dropped connection: status 0, checked below.
    return {
      phase,
      kind,
      status: 0,
      ms: performance.now() - started,
      code: error instanceof Error ? error.name : String(error),
      retryAfter: null,
      ...(idem && body ? { idem, body } : {}),
    };
  }
}

describe('database faults (own PostgreSQL cluster)', {
  skip: clusterUnavailable() ?? false,
}, () => {
  let cluster: TempCluster | undefined;
  let proxy: StallProxy | undefined;
  let service: ServeProcess | undefined;
  let direct: pg.Pool | undefined;
  let practice: RemotePractice;
  let knownPatient: string;
  const outcomes: Outcome[] = [];
  const recoveries: Record<string, number> = {};

  before(async () => {
    cluster = new TempCluster(await freePort());
    await cluster.init();
    await cluster.start();
    proxy = new StallProxy(cluster.port);
    await proxy.listen();
    direct = new pg.Pool({ connectionString: cluster.url(), max: 2, connectionTimeoutMillis: 5000 });
    direct.on('error', () => {});
    service = await startServeProcess({
      databaseUrl: cluster.url(proxy.port),
      env: {
        // A fresh cluster: this serve process migrates it (serve only checks by default).
        MIGRATE_ON_START: 'true',
        STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
        DATABASE_POOL_SIZE: '5',
        RATE_LIMIT_PER_MINUTE: '1000000',
      },
    });
    practice = await remotePractice(service.baseUrl, service.adminToken);
    const created = await call(service.baseUrl, 'POST', '/api/v1/patients', {
      token: practice.key,
      body: patientBody(),
      idempotencyKey: `fault-${randomBytes(8).toString('hex')}`,
    });
    assert.equal(created.status, 201, created.text);
    knownPatient = created.body.id;
  });

  after(async () => {
    proxy?.resume();
    await service?.stop();
    await direct?.end().catch(() => {});
    await proxy?.close();
    await cluster?.destroy();
  });

  /**
   * Runs reads and creates from CONCURRENCY loops while `fault` runs, then until `fault` has resolved
   * and the service has answered a create with 201 again (or 20 s passed). Returns the milliseconds
   * from the fault's end (the database back) to that first success.
   */
  async function underLoad(phase: string, fault: () => Promise<void>): Promise<number> {
    let faultDone = false;
    let faultEndedAt = 0;
    let recoveredAt = 0;
    let count = 0;
    const hardStop = Date.now() + 60_000;
    const loop = async (worker: number) => {
      while (count < MAX_REQUESTS_PER_PHASE && Date.now() < hardStop) {
        if (faultDone && recoveredAt && performance.now() - recoveredAt > 500) return;
        if (faultDone && performance.now() - faultEndedAt > 20_000) return;
        count++;
        const kind = (count + worker) % 2 === 0 ? 'read' : 'create';
        const outcome = await timedCall(
          service!.baseUrl,
          practice.key,
          kind,
          `/patients/${knownPatient}`,
          phase,
        );
        outcomes.push(outcome);
        // A client backs off a little after a 503, as Retry-After asks (shorter here, to keep probing).
        if (outcome.status === 503) await new Promise((resolve) => setTimeout(resolve, 25));
        if (faultDone && kind === 'create' && outcome.status === 201 && !recoveredAt) {
          recoveredAt = performance.now();
        }
      }
    };
    const loops = Array.from({ length: CONCURRENCY }, (_, i) => loop(i));
    try {
      await fault();
    } finally {
      faultEndedAt = performance.now();
      faultDone = true;
    }
    await Promise.all(loops);
    if (!recoveredAt) {
      const mine = outcomes.filter((o) => o.phase === phase);
      const tally = mine.map((o) => `${o.kind} ${o.status} ${o.code ?? ''}`).slice(-20);
      assert.fail(
        `${phase}: the service did not create a patient again within 20 s (${count} requests; last:\n${tally.join('\n')})\nservice output:\n${service!.output().slice(-4000)}`,
      );
    }
    return Math.max(0, recoveredAt - faultEndedAt);
  }

  function assertFaultAnswers(phase: string): void {
    const mine = outcomes.filter((o) => o.phase === phase);
    assert.ok(mine.length > 0, `${phase}: no requests ran`);
    assert.ok(service!.running(), `the service process died during ${phase}:\n${service!.output()}`);
    const unavailable = mine.filter((o) => o.status === 503);
    for (const o of mine) {
      assert.ok(
        [200, 201, 503].includes(o.status),
        `${phase}: ${o.kind} answered ${o.status} ${o.code ?? ''} after ${Math.round(o.ms)} ms\n${errorsLogged()}`,
      );
      assert.ok(
        o.ms < ANSWER_BOUND_MS,
        `${phase}: ${o.kind} took ${Math.round(o.ms)} ms (${o.status}); bound ${ANSWER_BOUND_MS} ms`,
      );
      if (o.status === 503) {
        assert.equal(o.code, 'service_unavailable');
        assert.match(o.retryAfter ?? '', /^[1-9][0-9]*$/, `${phase}: 503 without Retry-After`);
      }
    }
    const slowest = Math.max(...mine.map((o) => o.ms));
    process.stdout.write(
      `# ${phase}: ${mine.length} requests, ${unavailable.length} answered 503, slowest ${Math.round(slowest)} ms, back after ${recoveries[phase]} ms\n`,
    );
  }

  /** The service's own error log lines, for a failure message. */
  function errorsLogged(): string {
    return service!
      .output()
      .split('\n')
      .filter((line) => line.includes('"level":50'))
      .slice(-3)
      .join('\n');
  }

  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  test('terminated database sessions: 503 with Retry-After, then service again', async () => {
    recoveries.terminate = await underLoad('terminate', async () => {
      for (let round = 0; round < 5; round++) {
        await pause(400);
        await direct!.query(
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
           WHERE application_name LIKE 'practice-billing%' AND pid <> pg_backend_pid()`,
        );
      }
    });
    assertFaultAnswers('terminate');
    assert.ok(recoveries.terminate! < 10_000, `served again after ${recoveries.terminate} ms`);
  });

  test('PostgreSQL stopped immediately and started again: 503 while down, service within 10 s', async () => {
    recoveries.restart = await underLoad('restart', async () => {
      await pause(500);
      await cluster!.stopImmediately();
      await pause(3000);
      await cluster!.start();
    });
    assertFaultAnswers('restart');
    const down = outcomes.filter((o) => o.phase === 'restart' && o.status === 503);
    assert.ok(down.length > 0, 'requests while the database was down answered 503');
    assert.ok(recoveries.restart! < 10_000, `served again after ${recoveries.restart} ms`);
  });

  test('a stalled connection: 503 within the query and connect timeouts, service within 10 s', async () => {
    recoveries.stall = await underLoad('stall', async () => {
      await pause(500);
      proxy!.pause();
      await pause(STATEMENT_TIMEOUT_MS + CONNECT_TIMEOUT_MS + 2000);
      proxy!.resume();
    });
    assertFaultAnswers('stall');
    const down = outcomes.filter((o) => o.phase === 'stall' && o.status === 503);
    assert.ok(down.length > 0, 'requests while the database was stalled answered 503');
    assert.ok(recoveries.stall! < 10_000, `served again after ${recoveries.stall} ms`);
  });

  test('afterwards: one audit row per patient, no key left held, a retry with the key yields one record', async () => {
    assert.ok(outcomes.length > 0, 'the fault tests ran');
    const answered201 = outcomes.filter((o) => o.kind === 'create' && o.status === 201);
    const failed = outcomes.filter((o) => o.kind === 'create' && o.status !== 201);
    // Every key answered 201 has its answer stored.
    const done = await direct!.query<{ key: string; response_status: number }>(
      'SELECT key, response_status FROM idempotency_keys WHERE practice_id = $1',
      [practice.practiceId],
    );
    const stored = new Map(done.rows.map((r) => [r.key, r.response_status]));
    for (const o of answered201)
      assert.equal(stored.get(o.idem!), 201, `key of a 201 stores ${stored.get(o.idem!)}`);

    // Retry every create that did not answer 201 with its key and body, until the service answers 201
    // (a request cut off mid-way left nothing behind: its key was held only by its transaction).
    const deadline = Date.now() + 30_000;
    const retryOne = async (o: Outcome) => {
      for (;;) {
        const retry = await call(service!.baseUrl, 'POST', '/api/v1/patients', {
          token: practice.key,
          body: o.body,
          idempotencyKey: o.idem!,
        });
        if (retry.status === 201) return retry.body.id as string;
        assert.ok(
          retry.status === 409 && retry.body.code === 'conflict',
          `retry answered ${retry.status}: ${retry.text}`,
        );
        assert.ok(Date.now() < deadline, 'retries kept answering 409 past the lease');
        await pause(500);
      }
    };
    const retried: Array<{ o: Outcome; id: string }> = [];
    for (let i = 0; i < failed.length; i += 8) {
      const batch = failed.slice(i, i + 8);
      const ids = await Promise.all(batch.map(retryOne));
      for (const [j, o] of batch.entries()) retried.push({ o, id: ids[j]! });
    }
    process.stdout.write(
      `# ${answered201.length} creates answered 201 under faults; ${failed.length} retried\n`,
    );

    // One patient per external id: each create made at most one record, each retry exactly one.
    const byExternal = await direct!.query<{ value: string; n: number; ids: string[] }>(
      `SELECT external_value AS value, count(*)::int AS n, array_agg(id) AS ids
       FROM patients WHERE practice_id = $1 GROUP BY external_value`,
      [practice.practiceId],
    );
    const records = new Map(byExternal.rows.map((r) => [r.value, r]));
    for (const { o, id } of retried) {
      const row = records.get(o.body!.externalId.value);
      assert.ok(row, 'the retried patient exists');
      assert.equal(row.n, 1, `${row.n} patients for one key`);
      assert.deepEqual(row.ids, [id]);
    }
    for (const o of answered201) assert.deepEqual(records.get(o.body!.externalId.value)?.ids, [o.id]);
    for (const r of byExternal.rows) assert.equal(r.n, 1, `external id ${r.value} has ${r.n} patients`);

    // Exactly one successful creation audit row per patient.
    const audit = await direct!.query<{ id: string; n: number }>(
      `SELECT p.id, count(a.id)::int AS n FROM patients p
       LEFT JOIN audit_events a ON a.practice_id = p.practice_id AND a.resource_id = p.id
         AND a.method = 'POST' AND a.status = 201 AND a.outcome = 'succeeded'
       WHERE p.practice_id = $1 GROUP BY p.id`,
      [practice.practiceId],
    );
    for (const row of audit.rows)
      assert.equal(row.n, 1, `patient ${row.id} has ${row.n} creation audit rows`);

    const held = await direct!.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory'`,
    );
    assert.equal(held.rows[0]!.n, 0, 'no Idempotency-Key left held');
    assert.ok(service!.running(), 'the service process is still running');
  });
});
