// The harness fails a describeEachBackend block that ends with a service it started still running
// (its server, worker and database), and passes one that stopped it: run as a test file of its own
// (test/support/service-left-running.ts), on the embedded database.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';

const FIXTURE = path.join(import.meta.dirname, 'support', 'service-left-running.ts');

function runFixture(leaveRunning: boolean): { status: number | null; output: string } {
  const env: NodeJS.ProcessEnv = { ...process.env, LEAVE_RUNNING: leaveRunning ? '1' : '0' };
  delete env.DATABASE_URL;
  delete env.NODE_TEST_CONTEXT;
  const run = spawnSync(process.execPath, ['--test', '--test-force-exit', FIXTURE], {
    env,
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

test('a block that leaves its service running fails, naming where it was started', () => {
  const run = runFixture(true);
  assert.notEqual(run.status, 0, run.output);
  assert.match(run.output, /still running/);
  assert.match(run.output, /service-left-running\.ts/);
});

test('a block that stopped its service passes', () => {
  const run = runFixture(false);
  assert.equal(run.status, 0, run.output);
});
