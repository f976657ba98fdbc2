// Owns child processes: spawning one with its output kept (the last part of it), waiting for its first
// 200 answer over HTTP, reading its peak resident memory from /proc, and stopping it by its process id
// (SIGTERM, then SIGKILL after a grace period). Every child is registered for cleanup while it runs.
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

export { freePort } from '../test/processes.ts';

import { onCleanup, trackPid, untrackPid } from './cleanup.ts';

export const ROOT = path.resolve(import.meta.dirname, '..');
/** The project's pinned Node 24 (the machine's default may be older). */
export const NODE = path.join(ROOT, 'node_modules', '.bin', 'node');

const KEPT_OUTPUT = 20_000;

export interface Child {
  name: string;
  process: ChildProcess;
  pid: number;
  /** performance.now() just before spawn(). */
  spawnedAt: number;
  output(): string;
  exited: Promise<number | null>;
  isRunning(): boolean;
  stop(graceMs?: number): Promise<number | null>;
}

/** The environment without anything that would point a child at another database or server. */
export function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of [
    'DATABASE_URL',
    'MIGRATION_DATABASE_URL',
    'ADMIN_TOKEN',
    'PUBLIC_BASE_URL',
    'PORT',
    'HOST',
    'DATA_DIR',
    'NODE_OPTIONS',
    'NODE_TEST_CONTEXT',
    'SECRET_ENCRYPTION_KEY',
  ]) {
    delete env[name];
  }
  return { ...env, ...extra };
}

export function spawnChild(
  name: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  options: { keepStdinOpen?: boolean } = {},
): Child {
  const spawnedAt = performance.now();
  const child = spawn(NODE, args, {
    cwd: ROOT,
    env,
    // An open stdin lets a child that watches it (the baseline) notice that the bench died.
    stdio: [options.keepStdinOpen ? 'pipe' : 'ignore', 'pipe', 'pipe'],
  });
  if (child.pid === undefined) throw new Error(`could not start ${name}`);
  const pid = child.pid;
  trackPid(pid);
  let output = '';
  const keep = (chunk: string) => {
    output = (output + chunk).slice(-KEPT_OUTPUT);
  };
  child.stdout?.setEncoding('utf8').on('data', keep);
  child.stderr?.setEncoding('utf8').on('data', keep);
  let running = true;
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      running = false;
      untrackPid(pid);
      resolve(code);
    }),
  );
  const stop = async (graceMs = 15_000): Promise<number | null> => {
    if (!running) return exited;
    child.kill('SIGTERM');
    const timer = setTimeout(() => {
      if (running) child.kill('SIGKILL');
    }, graceMs);
    try {
      return await exited;
    } finally {
      clearTimeout(timer);
    }
  };
  const forget = onCleanup(`stop ${name} (pid ${pid})`, () => stop(5_000).then(() => undefined));
  void exited.then(forget);
  return {
    name,
    process: child,
    pid,
    spawnedAt,
    output: () => output,
    exited,
    isRunning: () => running,
    stop,
  };
}

/** One GET; resolves with the status, or 0 when nothing answered. */
export function httpStatus(url: string, timeoutMs = 2_000): Promise<number> {
  return new Promise((resolve) => {
    const request = http.get(url, { agent: false, timeout: timeoutMs }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    request.on('timeout', () => request.destroy());
    request.on('error', () => resolve(0));
  });
}

/** Polls until `url` answers 200; returns performance.now() at that answer. Throws if the child exits. */
export async function waitFor200(child: Child, url: string, timeoutMs: number): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (!child.isRunning()) {
      throw new Error(`${child.name} exited before answering ${url}:\n${child.output()}`);
    }
    if ((await httpStatus(url, 1_000)) === 200) return performance.now();
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`${child.name} did not answer ${url} within ${timeoutMs} ms:\n${child.output()}`);
}

/** Peak and current resident memory in MiB, from /proc/<pid>/status (undefined when unreadable). */
export function memoryOf(pid: number): { peakRssMiB: number; rssMiB: number } | undefined {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]);
    const peak = kb('VmHWM');
    const rss = kb('VmRSS');
    if (!Number.isFinite(peak)) return undefined;
    return { peakRssMiB: Math.round((peak / 1024) * 10) / 10, rssMiB: Math.round((rss / 1024) * 10) / 10 };
  } catch {
    return undefined;
  }
}
