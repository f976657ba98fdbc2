// The first session the documents show, and how tests run it: the bash blocks between README.md's
// `<!-- first-session -->` markers, step by step in one shell with curl and jq, and the TypeScript
// blocks between packages/client/README.md's `<!-- first-session-sdk -->` markers, as one program
// using the client package; both against a sandbox started the way `npm start` starts it.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  childEnv,
  type Finished,
  freePort,
  NODE,
  ROOT,
  removeDataDir,
  run,
  type ServiceProcess,
  sandboxBanner,
  startServiceProcess,
  tempDir,
} from '../processes.ts';

export const README = 'README.md';
export const CLIENT_README = path.join('packages', 'client', 'README.md');

export function readDocument(relative: string): string {
  return fs.readFileSync(path.join(ROOT, relative), 'utf8');
}

export interface Block {
  lang: string;
  body: string;
}

export function fencedBlocks(markdown: string): Block[] {
  return [...markdown.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((m) => ({ lang: m[1]!, body: m[2]! }));
}

/** The blocks in `lang` between a document's `<!-- name -->` and `<!-- /name -->` markers, in order. */
export function markedBlocks(document: string, name: string, lang: string): string[] {
  const markdown = readDocument(document);
  const start = markdown.indexOf(`<!-- ${name} -->`);
  const end = markdown.indexOf(`<!-- /${name} -->`);
  assert.ok(start >= 0 && end > start, `${document} marks a part with <!-- ${name} -->`);
  return fencedBlocks(markdown.slice(start, end))
    .filter((b) => b.lang === lang)
    .map((b) => b.body);
}

export const firstSessionSteps = () => markedBlocks(README, 'first-session', 'bash');
export const firstSessionSdkSteps = () => markedBlocks(CLIENT_README, 'first-session-sdk', 'ts');

/** Whether this machine has what the README's session needs besides the service: bash, curl and jq. */
export function hasSessionTools(): boolean {
  try {
    execFileSync('bash', ['-c', 'command -v curl && command -v jq'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export interface Sandbox {
  service: ServiceProcess;
  /** The environment the session reads: BASE, API_KEY and PRACTITIONER, from the start-up banner. */
  env: NodeJS.ProcessEnv;
  /** Stops the service and removes its data directory; its output stays readable. */
  stop(): Promise<void>;
}

/** A sandbox of its own (a fresh data directory), started as `npm start` starts it. */
export async function startSandbox(prefix: string, env: Record<string, string> = {}): Promise<Sandbox> {
  const dataDir = tempDir(prefix);
  const service = await startServiceProcess({ dataDir, port: await freePort(), env, timeoutMs: 40_000 });
  const stop = async () => {
    await service.stop();
    removeDataDir(dataDir);
  };
  try {
    const out = service.stdout();
    const practitioner = /practitioner +(prt_\S+)/.exec(out)?.[1];
    assert.ok(practitioner, out);
    const sessionEnv = childEnv({
      BASE: service.baseUrl,
      API_KEY: sandboxBanner(out).apiKey,
      PRACTITIONER: practitioner,
    });
    return { service, env: sessionEnv, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

export interface SessionRun extends Finished {
  /** How many steps ran to their end. */
  stepsDone: number;
  steps: number;
  /** Exit, stdout and stderr, for an assertion's message. */
  report: string;
}

/**
 * Runs the README's bash steps in one shell, in order, stopping at the first that fails; a marker
 * after each shows how far it got. `runId` fixes the run's number (RUN), which the steps otherwise
 * take from the clock.
 */
export async function runFirstSession(
  sandbox: Sandbox,
  options: { runId?: string } = {},
): Promise<SessionRun> {
  const steps = firstSessionSteps();
  assert.ok(steps.length >= 7, `${steps.length} bash blocks in the first session`);
  const fixed =
    options.runId === undefined
      ? steps
      : [steps[0]!.replace(/^RUN=.*$/m, `RUN=${options.runId}`), ...steps.slice(1)];
  const script = [
    'set -euo pipefail',
    ...fixed.flatMap((body, i) => [body, `echo "@@ step ${i + 1} done" >&2`]),
  ].join('\n');
  const result = await run('bash', ['--noprofile', '--norc', '-c', script], sandbox.env, 30_000);
  const report = `exit ${result.code}${result.signal ? ` (${result.signal})` : ''}\nstdout:\n${result.stdout}\nstderr:\n${result.stderr}`;
  const stepsDone = [...result.stderr.matchAll(/^@@ step (\d+) done$/gm)].length;
  return { ...result, stepsDone, steps: steps.length, report };
}

/**
 * Runs the client README's TypeScript steps as one program, inside the repository so that
 * `@practice-billing/client` resolves to the workspace as it does for a reader of that README there.
 */
export async function runFirstSessionSdk(sandbox: Sandbox): Promise<Finished & { report: string }> {
  const steps = firstSessionSdkSteps();
  assert.ok(steps.length >= 7, `${steps.length} ts blocks in the client package's session`);
  const program = path.join(ROOT, '.tmp', `first-session-${process.pid}.ts`);
  fs.mkdirSync(path.dirname(program), { recursive: true });
  fs.writeFileSync(program, steps.join('\n'));
  try {
    const result = await run(NODE, [program], sandbox.env, 30_000);
    return { ...result, report: `exit ${result.code}\nstdout:\n${result.stdout}\nstderr:\n${result.stderr}` };
  } finally {
    fs.rmSync(program, { force: true });
  }
}
