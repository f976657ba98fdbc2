// Starting and stopping the service as an operator does, through the real bin script: a start that
// cannot listen or reach its database exits non-zero and says why, naming the variable; an unreachable
// database is waited for (DATABASE_CONNECT_TIMEOUT_S); and the production command, run on the machine's
// own Node (which may be older than the project's), stops gracefully on SIGTERM and SIGINT.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { emptyPostgresDatabase } from './harness.ts';
import { BIN, childEnv, cli, freePort, ROOT, removeDataDir, tempDir, trackChild } from './processes.ts';

const ADMIN_TOKEN = 'start-stop-admin-token-0123456789abcdef';
/** serve on a fresh database migrates only when told to (MIGRATE_ON_START is on by default for start only). */
const MIGRATE_ON_START = 'true';
const needsPostgres = process.env.DATABASE_URL ? false : 'needs DATABASE_URL';
const dirs: string[] = [];
after(() => {
  for (const dir of dirs) removeDataDir(dir);
});

/** Holds a port as another program would, until released. */
async function holdPort(): Promise<{ port: number; release: () => Promise<void> }> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    release: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** Forwards a port to PostgreSQL once started: a database that comes up after the service. */
function lateDatabase(port: number): { open: () => Promise<void>; close: () => Promise<void> } {
  const target = new URL(process.env.DATABASE_URL!);
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => {});
      s.on('close', () => sockets.delete(s));
    }
    client.pipe(upstream).pipe(client);
  });
  return {
    open: () => new Promise((resolve) => server.listen(port, '127.0.0.1', resolve)),
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

function urlOnPort(url: string, port: number): string {
  const parsed = new URL(url);
  parsed.host = `127.0.0.1:${port}`;
  return parsed.toString();
}

async function answers(url: string): Promise<number | undefined> {
  try {
    return (await fetch(url)).status;
  } catch {
    return undefined;
  }
}

/** The production command, `node_modules/.bin/practice-billing serve`, run as an executable on the machine's PATH. */
function startProduction(env: NodeJS.ProcessEnv) {
  const machinePath = (process.env.PATH ?? '')
    .split(path.delimiter)
    .filter((dir) => !dir.includes('node_modules'))
    .join(path.delimiter);
  const child = spawn(BIN, ['serve'], { cwd: ROOT, env: { ...env, PATH: machinePath }, stdio: 'pipe' });
  trackChild(child, 'the production command');
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, exited, output: () => `${stdout}\n${stderr}`, stderr: () => stderr };
}

async function until(what: string, check: () => Promise<boolean> | boolean, output: () => string) {
  const deadline = Date.now() + 120_000;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`${what} did not happen:\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('a start that cannot run says why and exits', () => {
  test('DATABASE_URL that is not a URL is refused, naming the variable', async () => {
    const run = await cli(['serve'], childEnv({ DATABASE_URL: 'not-a-url', ADMIN_TOKEN }));
    assert.equal(run.code, 1);
    assert.match(run.stderr, /DATABASE_URL must be a PostgreSQL connection URL/);
    assert.doesNotMatch(run.stderr, /ENOTFOUND/);
  });

  test('PUBLIC_BASE_URL that is not a URL is refused, naming the variable', async () => {
    const dir = tempDir('pub');
    dirs.push(dir);
    const run = await cli(['start'], childEnv({ PUBLIC_BASE_URL: 'not a url', DATA_DIR: dir }));
    assert.equal(run.code, 1);
    assert.match(run.stderr, /PUBLIC_BASE_URL must be an http or https URL.*"not a url"/);
  });

  test('a port in use: the embedded start exits 1 naming PORT', async () => {
    const held = await holdPort();
    const dir = tempDir('inuse');
    dirs.push(dir);
    try {
      const run = await cli(['start'], childEnv({ PORT: String(held.port), DATA_DIR: dir }), 120_000);
      assert.equal(run.code, 1, run.stderr);
      assert.match(
        run.stderr,
        new RegExp(`cannot listen on HOST 127.0.0.1, PORT ${held.port}: .*EADDRINUSE`),
      );
    } finally {
      await held.release();
    }
  });
});

describe('starting against PostgreSQL', { skip: needsPostgres }, () => {
  test('a port in use: serve exits 1 naming PORT', async () => {
    const database = await emptyPostgresDatabase('pb_start');
    const held = await holdPort();
    try {
      const env = childEnv({
        DATABASE_URL: database.url,
        ADMIN_TOKEN,
        MIGRATE_ON_START,
        PORT: String(held.port),
      });
      const run = await cli(['serve'], env, 120_000);
      assert.equal(run.code, 1, run.stderr);
      assert.match(run.stderr, /EADDRINUSE/);
      assert.match(run.stderr, /PORT/);
    } finally {
      await held.release();
      await database.drop();
    }
  });

  test('an unresolvable HOST: serve exits 1 naming HOST', async () => {
    const database = await emptyPostgresDatabase('pb_start');
    try {
      const env = childEnv({
        DATABASE_URL: database.url,
        ADMIN_TOKEN,
        MIGRATE_ON_START,
        HOST: 'no-such-host.invalid',
      });
      const run = await cli(['serve'], env, 120_000);
      assert.equal(run.code, 1, run.stderr);
      assert.match(run.stderr, /cannot listen on HOST no-such-host\.invalid/);
    } finally {
      await database.drop();
    }
  });

  test('a database that does not exist is named with its variable, not as a failed migration', async () => {
    const url = new URL(process.env.DATABASE_URL!);
    url.pathname = '/pb_no_such_database';
    const run = await cli(['serve'], childEnv({ DATABASE_URL: url.toString(), ADMIN_TOKEN }));
    assert.equal(run.code, 1);
    assert.match(run.stderr, /DATABASE_URL .*database "pb_no_such_database" does not exist/);
    assert.doesNotMatch(run.stderr, /Migration/);
  });

  test('an unreachable database is given up after DATABASE_CONNECT_TIMEOUT_S, naming it', async () => {
    const port = await freePort();
    const env = childEnv({
      DATABASE_URL: urlOnPort(process.env.DATABASE_URL!, port),
      ADMIN_TOKEN,
      DATABASE_CONNECT_TIMEOUT_S: '0',
    });
    const run = await cli(['serve'], env);
    assert.equal(run.code, 1);
    assert.match(
      run.stderr,
      /cannot reach the database of DATABASE_URL .*ECONNREFUSED.*DATABASE_CONNECT_TIMEOUT_S/,
    );
  });

  test('a database that comes up after the service is waited for, and SIGTERM stops the production command', async () => {
    const database = await emptyPostgresDatabase('pb_start');
    const dbPort = await freePort();
    const port = await freePort();
    const late = lateDatabase(dbPort);
    const proc = startProduction(
      childEnv({
        DATABASE_URL: urlOnPort(database.url, dbPort),
        ADMIN_TOKEN,
        MIGRATE_ON_START,
        PORT: String(port),
        DATABASE_CONNECT_TIMEOUT_S: '300',
        LOG_LEVEL: 'info',
      }),
    );
    try {
      await until(
        'a wait for the database',
        () => proc.output().includes('waiting for the database'),
        proc.output,
      );
      await late.open();
      await until(
        'readiness',
        async () => (await answers(`http://127.0.0.1:${port}/readyz`)) === 200,
        proc.output,
      );
      proc.child.kill('SIGTERM');
      assert.equal(await proc.exited, 0, proc.output());
      assert.match(proc.output(), /shutting down/);
      assert.equal(await answers(`http://127.0.0.1:${port}/healthz`), undefined, 'the server still answers');
    } finally {
      proc.child.kill('SIGKILL');
      await late.close();
      await database.drop();
    }
  });

  test('SIGINT stops the production command gracefully too', async () => {
    const database = await emptyPostgresDatabase('pb_start');
    const port = await freePort();
    const proc = startProduction(
      childEnv({
        DATABASE_URL: database.url,
        ADMIN_TOKEN,
        MIGRATE_ON_START,
        PORT: String(port),
        LOG_LEVEL: 'info',
      }),
    );
    try {
      await until(
        'readiness',
        async () => (await answers(`http://127.0.0.1:${port}/readyz`)) === 200,
        proc.output,
      );
      proc.child.kill('SIGINT');
      assert.equal(await proc.exited, 0, proc.output());
      assert.match(proc.output(), /"signal":"SIGINT".*shutting down/);
      assert.equal(await answers(`http://127.0.0.1:${port}/healthz`), undefined, 'the server still answers');
    } finally {
      proc.child.kill('SIGKILL');
      await database.drop();
    }
  });
});
