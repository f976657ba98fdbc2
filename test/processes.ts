// Helpers for tests that run the service and the CLI as real child processes, the way an operator
// does: a free port, a temporary data directory, an environment without the caller's service settings.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startArgs } from '../scripts/start-args.ts';
import { noteRunning } from './harness.ts';

export const ROOT = path.resolve(import.meta.dirname, '..');
/** The project's pinned Node 24 (the machine's default may be older). */
export const NODE = path.join(ROOT, 'node_modules', '.bin', 'node');
export const BIN = path.join(ROOT, 'bin', 'practice-billing.js');

/** A port nothing listens on right now: bind port 0, read the port, let it go. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export function tempDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `pb-${prefix}-`));
}

/** Removes a data directory and the lock a killed server may have left beside it. */
export function removeDataDir(dir: string): void {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.rmSync(`${dir}.lock`, { recursive: true, force: true });
}

/**
 * The test's environment without anything that would point a child at another database or server, and
 * with load shedding off.
 */
export function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of [
    'DATABASE_URL',
    'MIGRATION_DATABASE_URL',
    'ADMIN_TOKEN',
    'PUBLIC_BASE_URL',
    'PRACTICE_BILLING_URL',
    'PORT',
    'HOST',
    'DATA_DIR',
    'NODE_TEST_CONTEXT',
    'NODE_OPTIONS',
  ]) {
    delete env[name];
  }
  // Load shedding is off in child services as in the harness's (test/harness.ts): on a busy test machine a
  // slow connection or a late timer would turn a test's request into a 503. test/load-shedding.test.ts
  // turns it on.
  return {
    ...env,
    LOG_LEVEL: 'warn',
    INSURER_DELAY_MS: '0',
    LOAD_SHED_CONNECTION_WAIT_MS: '0',
    LOAD_SHED_EVENT_LOOP_LAG_MS: '0',
    LOAD_SHED_MAX_IN_FLIGHT: '0',
    LOAD_SHED_CLAIM_BACKLOG_MS: '0',
    ...extra,
  };
}

export interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end (killed after timeoutMs). */
export function run(
  file: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  timeoutMs = 60_000,
): Promise<Finished> {
  return new Promise((resolve) => {
    execFile(file, args, { env, cwd: ROOT, timeout: timeoutMs }, (error, stdout, stderr) => {
      const failed = error as (Error & { code?: unknown; signal?: NodeJS.Signals | null }) | null;
      resolve({
        code: failed ? (typeof failed.code === 'number' ? failed.code : null) : 0,
        signal: failed?.signal ?? null,
        stdout,
        stderr,
      });
    });
  });
}

/** `practice-billing <args>` through the real bin script. */
export function cli(args: string[], env: NodeJS.ProcessEnv, timeoutMs?: number): Promise<Finished> {
  return run(NODE, [BIN, ...args], env, timeoutMs);
}

export interface ServiceProcess {
  child: ChildProcess;
  port: number;
  baseUrl: string;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code (or null when killed by a signal). */
  exited: Promise<number | null>;
  /** Sends the signal and waits for the process to end (SIGKILL after 10 s). */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Every service process a test started and that has not exited yet. */
const liveChildren = new Set<ChildProcess>();
// A test that timed out goes on running and may start a process after its file's hooks stopped the
// others; with --test-force-exit the file's process exits once its tests are done, and takes them all
// down with it rather than leave a server running.
process.on('exit', () => {
  for (const child of liveChildren) child.kill('SIGKILL');
});

/**
 * Tracks a spawned service or worker process: killed when the test process exits, and noted as running
 * in the current describeEachBackend block until it exits, so a block that ends with it still running
 * fails (test/harness.ts).
 */
export function trackChild(child: ChildProcess, what: string): void {
  liveChildren.add(child);
  const stopped = noteRunning(what);
  child.once('exit', () => {
    liveChildren.delete(child);
    stopped();
  });
}

/**
 * Starts the service as `npm start` does (`node <flags> src/main.ts`) and waits until its output contains `readyWhen`, or
 * it exits. The caller stops it.
 */
export async function startServiceProcess(options: {
  dataDir: string;
  port: number;
  env?: Record<string, string>;
  readyWhen?: string;
  timeoutMs?: number;
  /** Node's arguments instead of the start script's, e.g. [BIN, 'start'] for the command itself. */
  args?: string[];
}): Promise<ServiceProcess> {
  const child = spawn(NODE, options.args ?? startArgs(), {
    cwd: ROOT,
    env: childEnv({ PORT: String(options.port), DATA_DIR: options.dataDir, ...options.env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  trackChild(child, 'a service process');
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let running = true;
  void exited.then(() => {
    running = false;
  });
  const readyWhen = options.readyWhen ?? 'Demo API key';
  const deadline = Date.now() + (options.timeoutMs ?? 90_000);
  while (running && !stdout.includes(readyWhen)) {
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`the service did not start in time.\nstdout:\n${stdout}\nstderr:\n${stderr}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    child,
    port: options.port,
    baseUrl: `http://127.0.0.1:${options.port}`,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (!running) return exited;
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/** Reads the `Label  value` lines the sandbox prints at start-up. */
export function sandboxBanner(stdout: string) {
  const value = (label: string) => {
    const match = new RegExp(`^ +${label} +(\\S+)`, 'm').exec(stdout);
    if (!match) throw new Error(`no "${label}" line in the start-up output:\n${stdout}`);
    return match[1]!;
  };
  return {
    apiUrl: value('API'),
    adminToken: value('Admin token'),
    practiceId: value('Practice'),
    apiKey: value('Demo API key'),
  };
}
