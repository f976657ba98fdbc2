// A production install as an operator makes it, on a machine whose own Node is older than the
// project's: the repository's files copied to a new directory, `npm ci --omit=dev` with the machine's
// Node on PATH (packages from npm's cache when it has them), then `npx practice-billing --version` and
// the documented production command, `bin/practice-billing.js serve` (or `start` on the
// embedded database), which serves the API, the docs page and the console, and stops on SIGTERM.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { emptyPostgresDatabase } from './harness.ts';
import { childEnv, freePort, ROOT, removeDataDir, tempDir, trackChild } from './processes.ts';

const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  version: string;
  devDependencies: Record<string, string>;
};
const dir = tempDir('prod-install');
let drop: (() => Promise<void>) | undefined;
after(async () => {
  await drop?.();
  removeDataDir(dir);
});

/** The machine's PATH, without any node_modules/.bin (which would put the project's Node 24 first). */
function machineEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = childEnv(extra);
  env.PATH = (env.PATH ?? '')
    .split(path.delimiter)
    .filter((d) => !d.includes('node_modules'))
    .join(path.delimiter);
  for (const name of Object.keys(env)) if (name.startsWith('npm_')) delete env[name];
  return env;
}

async function status(url: string): Promise<number | undefined> {
  try {
    return (await fetch(url)).status;
  } catch {
    return undefined;
  }
}

test('npm ci --omit=dev, then --version and the production command', {
  timeout: 600_000,
}, async () => {
  const files = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' }).split('\0');
  for (const file of files.filter((f) => f && fs.existsSync(path.join(ROOT, f)))) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.copyFileSync(path.join(ROOT, file), path.join(dir, file));
  }
  const install = await new Promise<{ code: number | null; output: string }>((resolve) => {
    const child = spawn('npm', ['ci', '--omit=dev', '--prefer-offline', '--no-audit', '--no-fund'], {
      cwd: dir,
      env: machineEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => {
      output += c;
    });
    child.stderr.on('data', (c: Buffer) => {
      output += c;
    });
    child.on('exit', (code) => resolve({ code, output }));
  });
  assert.equal(install.code, 0, install.output);
  assert.doesNotMatch(install.output, /ERR_UNKNOWN_FILE_EXTENSION/);
  assert.doesNotMatch(install.output, /not yet covered by allowScripts/);
  // The heavy dev tools (a browser, the type-checker, the linter) stay out of a production install.
  for (const dev of [
    'typescript',
    '@biomejs/biome',
    '@sparticuz/chromium',
    'playwright-core',
    '@redocly/cli',
  ]) {
    assert.ok(dev in manifest.devDependencies, `${dev} is a dev dependency`);
    assert.ok(!fs.existsSync(path.join(dir, 'node_modules', dev, 'package.json')), `${dev} is not installed`);
  }

  const version = await new Promise<string>((resolve) => {
    const child = spawn('npx', ['practice-billing', '--version'], {
      cwd: dir,
      env: machineEnv(),
      stdio: 'pipe',
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c;
    });
    child.on('exit', () => resolve(out));
  });
  assert.equal(version.trim(), `practice-billing ${manifest.version}`);

  const port = await freePort();
  let env = machineEnv({ PORT: String(port), DATA_DIR: path.join(dir, 'data'), LOG_LEVEL: 'info' });
  let command = 'start';
  if (process.env.DATABASE_URL) {
    const database = await emptyPostgresDatabase('pb_prod');
    drop = database.drop;
    env = machineEnv({
      PORT: String(port),
      DATABASE_URL: database.url,
      ADMIN_TOKEN: 'production-install-admin-token-0123456789',
      MIGRATE_ON_START: 'true',
      LOG_LEVEL: 'info',
    });
    command = 'serve';
  }
  const server = spawn(path.join(dir, 'bin', 'practice-billing.js'), [command], {
    cwd: dir,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  trackChild(server, 'the installed service');
  let output = '';
  server.stdout.on('data', (c: Buffer) => {
    output += c;
  });
  server.stderr.on('data', (c: Buffer) => {
    output += c;
  });
  const exited = new Promise<number | null>((resolve) => server.once('exit', (code) => resolve(code)));
  try {
    const base = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 180_000;
    while ((await status(`${base}/readyz`)) !== 200) {
      assert.ok(Date.now() < deadline, `the installed service did not become ready:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    assert.equal(await status(`${base}/docs/`), 200, 'the docs page');
    assert.equal(await status(`${base}/console/`), 200, 'the console');
    server.kill('SIGTERM');
    assert.equal(await exited, 0, output);
  } finally {
    server.kill('SIGKILL');
  }
});
