// No patient data in any log line, at any level: the README's first session (the bash blocks between
// its `<!-- first-session -->` markers) runs against a sandbox started as `npm start` starts it, with
// LOG_LEVEL=debug, and the whole log (stdout and stderr) is searched for the session's patient: names,
// birth date, medical record number, member number. The request lines are checked to name the
// practice, the client, the route template, the status and the duration. Embedded database only.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { freePort, removeDataDir, startServiceProcess, tempDir } from './processes.ts';
import { hasSessionTools, runFirstSession, startSandbox } from './support/first-session.ts';

test('the first session with LOG_LEVEL=debug: no patient data in the whole log; request lines name practice, client, route, status, duration', {
  timeout: 90_000,
  skip: hasSessionTools() ? false : 'needs bash, curl and jq',
}, async () => {
  const sandbox = await startSandbox('logs', { LOG_LEVEL: 'debug' });
  const service = sandbox.service;
  // The start-up banner (printed once, its sample request naming the README's sample patient) is not
  // a log line: every other line the process wrote is searched.
  const banner = new Set(
    service
      .stdout()
      .split('\n')
      .filter((line) => !line.startsWith('{')),
  );
  try {
    const result = await runFirstSession(sandbox, { runId: '424242' });
    assert.equal(result.code, 0, result.report);
    assert.match(result.stdout, /"status": "accepted"/);
  } finally {
    await sandbox.stop();
  }
  const log = `${service.stdout()}\n${service.stderr()}`
    .split('\n')
    .filter((line) => !banner.has(line))
    .join('\n');
  // The session's patient, as the README's steps send it (RUN fixed above: MRN-424242).
  for (const secret of ['Lerato', 'Dlamini', '1990-02-28', 'MRN-424242']) {
    const line = log.split('\n').find((l) => l.includes(secret));
    assert.ok(!log.includes(secret), `the log carries "${secret}": ${line}`);
  }
  const requests = log
    .split('\n')
    .filter((line) => line.includes('"request completed"'))
    .map(
      (line) =>
        JSON.parse(line) as {
          req: Record<string, string>;
          res: { statusCode: number };
          responseTime: number;
        },
    );
  const billed = requests.find((line) => line.req.route === '/api/v1/encounters/:encounterId/bill');
  assert.ok(billed, log);
  assert.match(billed.req.practiceId ?? '', /^org_/);
  assert.match(billed.req.clientId ?? '', /^cli_/);
  assert.equal(billed.res.statusCode, 201);
  assert.equal(typeof billed.responseTime, 'number');
  // The worker's job lines at info: start and end, with kind, practice, attempt, outcome, duration.
  const ended = log
    .split('\n')
    .filter((line) => line.includes('"job ended"'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  const submit = ended.find((line) => line.kind === 'claim.submit');
  assert.ok(submit, log);
  assert.equal(submit.practiceId, billed.req.practiceId);
  assert.equal(submit.outcome, 'done');
  assert.equal(typeof submit.attempt, 'number');
  assert.equal(typeof submit.durationMs, 'number');
});

test('LOG_FORMAT=pretty writes lines for a person at a terminal, not JSON', { timeout: 90_000 }, async () => {
  const dataDir = tempDir('pretty');
  const service = await startServiceProcess({
    dataDir,
    port: await freePort(),
    env: { LOG_LEVEL: 'info', LOG_FORMAT: 'pretty' },
    timeoutMs: 40_000,
  });
  try {
    const health = await fetch(`${service.baseUrl}/healthz`);
    assert.equal(health.status, 200);
  } finally {
    await service.stop();
    removeDataDir(dataDir);
  }
  const lines = service.stdout().split('\n');
  const completed = lines.find((line) => line.includes('request completed'));
  assert.ok(completed, service.stdout());
  assert.ok(!completed.trimStart().startsWith('{'), completed);
  assert.match(completed, /INFO/);
  assert.ok(!lines.some((line) => line.startsWith('{"level"')), service.stdout());
});
