// What the tests of the operator's procedures (test/backup-restore.test.ts,
// test/secrets-rotation.test.ts, and for roles and URLs test/least-privilege.test.ts and
// test/deployments.test.ts) share: service processes started the way an operator starts them on
// one port and data directory, a webhook receiver, the PostgreSQL roles and databases made for the
// test, all of it stopped, closed and dropped when the scene closes; and a patient's visit billed
// through the public API of a running process.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { call, emptyPostgresDatabase } from '../harness.ts';
import { freePort, removeDataDir, type ServiceProcess, startServiceProcess, tempDir } from '../processes.ts';
import { Receiver } from '../webhooks-fixtures.ts';

/** Runs statements in order on one connection as the URL's role; the rows of the last. */
export async function queryAs<R>(url: string, ...statements: string[]): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    let rows: R[] = [];
    for (const statement of statements) rows = (await client.query(statement)).rows as R[];
    return rows;
  } finally {
    await client.end();
  }
}

/** Runs one statement as DATABASE_URL's role (a superuser in the tests). */
export async function asSuperuser(statement: string): Promise<void> {
  await queryAs(process.env.DATABASE_URL!, statement);
}

/** The URL of `database` on DATABASE_URL's server, for `user` (no password). */
export function urlFor(user: string, database: string): string {
  const url = new URL(process.env.DATABASE_URL!);
  url.username = user;
  url.password = '';
  url.pathname = `/${database}`;
  return url.toString();
}

/** The pg client tools' connection flags for a user on DATABASE_URL's server. */
export function pgFlags(user: string): string[] {
  const url = new URL(process.env.DATABASE_URL!);
  return ['-h', url.hostname, '-p', url.port || '5432', '-U', user];
}

export class OperatorScene {
  readonly dataDir: string;
  readonly #running: ServiceProcess[] = [];
  /** Run when the scene closes, the last added first. */
  readonly #cleanups: Array<() => Promise<void>> = [];
  #port: number | undefined;

  constructor(prefix: string) {
    this.dataDir = tempDir(prefix);
  }

  /**
   * Starts the service as a process on the scene's port and data directory, ready once it listens;
   * `args` are Node's arguments instead of the start script's (e.g. [BIN, 'start']).
   */
  async start(env: Record<string, string>, args?: string[]): Promise<ServiceProcess> {
    this.#port ??= await freePort();
    const started = await startServiceProcess({
      dataDir: this.dataDir,
      port: this.#port,
      env,
      readyWhen: 'Server listening',
      timeoutMs: 120_000,
      ...(args ? { args } : {}),
    });
    this.#running.push(started);
    return started;
  }

  /** A webhook receiver, closed with the scene. */
  async receiver(): Promise<Receiver> {
    const receiver = await Receiver.start();
    this.onClose(() => receiver.close());
    return receiver;
  }

  /** A new empty database on DATABASE_URL's server, dropped with the scene. */
  async database(prefix: string): Promise<string> {
    const database = await emptyPostgresDatabase(prefix);
    this.onClose(database.drop);
    return database.url;
  }

  /**
   * A login role like the owner a managed PostgreSQL gives (LOGIN CREATEROLE CREATEDB, no
   * superuser), dropped with the scene, after what it owns.
   */
  async owner(prefix: string): Promise<string> {
    const owner = `${prefix}_${randomBytes(5).toString('hex')}`;
    await asSuperuser(`CREATE ROLE ${owner} LOGIN CREATEROLE CREATEDB`);
    this.onClose(async () => {
      await asSuperuser(`DROP OWNED BY ${owner}`).catch(() => {});
      await asSuperuser(`DROP ROLE IF EXISTS ${owner}`);
    });
    return owner;
  }

  /** A database made by other means (the test's own commands), dropped with the scene. */
  dropsDatabase(name: string): void {
    this.onClose(() => asSuperuser(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  }

  onClose(cleanup: () => Promise<void>): void {
    this.#cleanups.push(cleanup);
  }

  /** Kills what still runs, then closes and drops what the scene made, and removes its data directory. */
  async close(): Promise<void> {
    await Promise.all(this.#running.map((p) => p.stop('SIGKILL')));
    for (const cleanup of this.#cleanups.reverse()) await cleanup();
    removeDataDir(this.dataDir);
  }
}

/**
 * Registers a patient, records a visit an hour ago and bills it, issued; with `claim`, the patient has
 * the sandbox scheme's cover and the bill sends its claim. Answers the invoice's id and number.
 */
export async function billVisit(
  baseUrl: string,
  key: string,
  practitionerId: string,
  options: { claim?: boolean } = {},
): Promise<{ id: string; number: string }> {
  const api = (method: string, path: string, body: unknown) =>
    call(baseUrl, method, `/api/v1${path}`, {
      token: key,
      idempotencyKey: randomBytes(8).toString('hex'),
      body,
    });
  const patient = await api('POST', '/patients', {
    givenNames: ['Lerato'],
    lastName: 'Dlamini',
    birthDate: '1990-02-28',
    externalId: { system: 'urn:test:mrn', value: randomBytes(6).toString('hex') },
    // An address: the issue queues the patient's e-mail (kept in the outbox without SMTP_URL).
    contactPoints: [{ system: 'email', value: 'lerato@example.org', rank: 1 }],
  });
  assert.equal(patient.status, 201, patient.text);
  if (options.claim) {
    const coverage = await api('POST', `/patients/${patient.body.id}/coverages`, {
      planId: 'pln_ubuntu_essential',
      memberNumber: 'M1',
    });
    assert.equal(coverage.status, 201, coverage.text);
  }
  const when = new Date(Date.now() - 3600_000).toISOString();
  const encounter = await api('POST', '/encounters', {
    patientId: patient.body.id,
    practitionerId,
    start: when,
    end: when,
    diagnoses: [{ code: 'J06.9' }],
    procedures: [{ code: '0190' }],
  });
  assert.equal(encounter.status, 201, encounter.text);
  const bill = await api('POST', `/encounters/${encounter.body.id}/bill`, {
    issue: true,
    ...(options.claim ? { submitClaim: true } : {}),
  });
  assert.ok(bill.status === 200 || bill.status === 201, bill.text);
  return { id: bill.body.invoice.id as string, number: bill.body.invoice.number as string };
}
