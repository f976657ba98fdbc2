// Helpers for tests that run `practice-billing serve` as real child processes on a PostgreSQL
// database they are given: start and wait for readiness, read the process's output and memory, stop it
// (also when a test fails), and set up a practice through the admin API over HTTP.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { PERMISSIONS } from '../src/auth/permissions.ts';
import { call } from './harness.ts';
import { BIN, childEnv, freePort, NODE, ROOT, trackChild } from './processes.ts';

export interface ServeProcess {
  child: ChildProcess;
  pid: number;
  baseUrl: string;
  adminToken: string;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /** True while the process has not exited. */
  running(): boolean;
  stop(): Promise<void>;
}

/**
 * Starts `practice-billing serve` on databaseUrl and a free loopback port, and waits until /healthz
 * answers. The process is killed if it does not become ready within timeoutMs.
 */
export async function startServeProcess(options: {
  databaseUrl: string;
  env?: Record<string, string>;
  timeoutMs?: number;
}): Promise<ServeProcess> {
  const port = await freePort();
  const adminToken = `adm_child_${randomBytes(16).toString('hex')}`;
  const child = spawn(NODE, [BIN, 'serve'], {
    cwd: ROOT,
    env: childEnv({
      DATABASE_URL: options.databaseUrl,
      ADMIN_TOKEN: adminToken,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      SECRET_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
      ...options.env,
    }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  trackChild(child, 'a `practice-billing serve` process');
  let output = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
  });
  let alive = true;
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      alive = false;
      resolve();
    }),
  );
  const stop = async () => {
    if (!alive) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };
  const baseUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  for (;;) {
    if (!alive) throw new Error(`practice-billing serve exited during start-up:\n${output}`);
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`practice-billing serve did not become ready in time:\n${output}`);
    }
    try {
      const health = await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(1000) });
      if (health.status === 200) break;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    child,
    pid: child.pid!,
    baseUrl,
    adminToken,
    output: () => output,
    running: () => alive,
    stop,
  };
}

/** Resident set size of a process in kB, from /proc/<pid>/status. */
export function rssKb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
  if (!match) throw new Error(`no VmRSS for process ${pid}`);
  return Number(match[1]);
}

export interface RemotePractice {
  practiceId: string;
  practitionerId: string;
  clientId: string;
  keyId: string;
  key: string;
}

/** A practice, a practitioner, a client with every permission and its key, through the admin API. */
export async function remotePractice(
  baseUrl: string,
  adminToken: string,
  client: { allowedIps?: string[]; rateLimitPerMinute?: number } = {},
): Promise<RemotePractice> {
  const admin = (method: string, p: string, body?: unknown) =>
    call(baseUrl, method, `/admin/v1${p}`, { token: adminToken, ...(body !== undefined ? { body } : {}) });
  const practice = await admin('POST', '/practices', { name: `Practice ${randomBytes(3).toString('hex')}` });
  assert.equal(practice.status, 201, practice.text);
  const practitioner = await admin('POST', `/practices/${practice.body.id}/practitioners`, {
    name: 'Dr Child',
  });
  assert.equal(practitioner.status, 201, practitioner.text);
  const created = await admin('POST', `/practices/${practice.body.id}/clients`, {
    name: 'Child process client',
    permissions: [...PERMISSIONS],
    ...client,
  });
  assert.equal(created.status, 201, created.text);
  const key = await admin('POST', `/clients/${created.body.id}/keys`, {});
  assert.equal(key.status, 201, key.text);
  return {
    practiceId: practice.body.id,
    practitionerId: practitioner.body.id,
    clientId: created.body.id,
    keyId: key.body.id,
    key: key.body.key,
  };
}

export interface WorkerProcess {
  child: ChildProcess;
  pid: number;
  output(): string;
  running(): boolean;
  stop(): Promise<void>;
}

/** Starts `practice-billing worker` on databaseUrl; it has no port, so it is running once spawned. */
export function startWorkerProcess(options: {
  databaseUrl: string;
  env?: Record<string, string>;
}): WorkerProcess {
  const child = spawn(NODE, [BIN, 'worker'], {
    cwd: ROOT,
    env: childEnv({
      DATABASE_URL: options.databaseUrl,
      ADMIN_TOKEN: `adm_worker_${randomBytes(16).toString('hex')}`,
      REMITTANCE_DELAY_MS: '0',
      LOG_LEVEL: 'warn',
      ...options.env,
    }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  trackChild(child, 'a `practice-billing worker` process');
  let output = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
  });
  let alive = true;
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      alive = false;
      resolve();
    }),
  );
  return {
    child,
    pid: child.pid!,
    output: () => output,
    running: () => alive,
    stop: async () => {
      if (!alive) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
