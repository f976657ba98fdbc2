// Rotating SECRET_ENCRYPTION_KEY and the admin token as an operator does, with the service as a real
// process on each database: a webhook secret and a kept answer sealed with the old key; a start with
// only the new key refused, naming SECRET_ENCRYPTION_KEY; with the old key in
// SECRET_ENCRYPTION_PREVIOUS_KEYS deliveries verify; `practice-billing secrets re-encrypt` reseals
// (while the service runs, on PostgreSQL), a second run changes nothing, and the new key alone then
// starts. Two admin tokens (ADMIN_TOKENS) both let the operator in; a short token is refused at start.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { after, describe, test } from 'node:test';
import { judgeSealed } from '../src/secrets/service.ts';
import { remotePractice } from './child-service.ts';
import { type Backend, call } from './harness.ts';
import { childEnv, cli, removeDataDir, tempDir } from './processes.ts';
import { billVisit, OperatorScene } from './support/operator-scene.ts';
import { sleep } from './webhooks-fixtures.ts';

const OLD_KEY = randomBytes(32).toString('hex');
// Made as docs/operations.md says: `openssl rand -hex 32`.
const NEW_KEY = execFileSync('openssl', ['rand', '-hex', '32'], { encoding: 'utf8' }).trim();
const TOKEN_A = execFileSync('openssl', ['rand', '-hex', '32'], { encoding: 'utf8' }).trim();
const TOKEN_B = `adm_b_${randomBytes(16).toString('hex')}`;

test('start is judged by how many stored secrets the keys open', () => {
  assert.deepEqual(judgeSealed({ current: 0, previous: 0, unopenable: 0 }), {});
  assert.deepEqual(judgeSealed({ current: 2, previous: 1, unopenable: 0 }), {});
  assert.match(
    judgeSealed({ current: 0, previous: 0, unopenable: 3 }).refuse ?? '',
    /SECRET_ENCRYPTION_KEY opens none of the 3/,
  );
  const some = judgeSealed({ current: 1, previous: 1, unopenable: 2 });
  assert.equal(some.refuse, undefined);
  assert.match(some.warn ?? '', /^2 of the 4 stored secrets cannot be opened/);
  const noKey = judgeSealed({ current: 0, previous: 0, unopenable: 3 }, false);
  assert.equal(noKey.refuse, undefined);
  assert.match(noKey.warn ?? '', /SECRET_ENCRYPTION_KEY is not set: the 3 stored secrets cannot be opened/);
});

test('an admin token shorter than 32 characters is refused at start, naming its variable', async (t) => {
  const dir = tempDir('short');
  t.after(() => removeDataDir(dir));
  const short = await cli(['start'], childEnv({ ADMIN_TOKEN: 'too-short', DATA_DIR: dir }));
  assert.equal(short.code, 1);
  assert.match(short.stderr, /ADMIN_TOKEN must hold tokens of at least 32 characters/);
  const inList = await cli(['start'], childEnv({ ADMIN_TOKENS: `${TOKEN_A},short`, DATA_DIR: dir }));
  assert.equal(inList.code, 1);
  assert.match(inList.stderr, /ADMIN_TOKENS must hold tokens of at least 32 characters/);
});

for (const backend of (process.env.DATABASE_URL ? ['pglite', 'postgres'] : ['pglite']) as Backend[]) {
  describe(`rotating the secret key (${backend})`, () => {
    const scene = new OperatorScene('rotate');
    after(() => scene.close());

    test('old key refused alone, opened as a previous key, resealed, then the new key alone starts', {
      timeout: 300_000,
    }, async () => {
      let base: Record<string, string> = { ADMIN_TOKENS: `${TOKEN_A},${TOKEN_B}`, LOG_LEVEL: 'info' };
      if (backend === 'postgres') {
        base = { ...base, DATABASE_URL: await scene.database('pb_rotate'), WEBHOOK_ALLOW_PRIVATE: 'true' };
      }
      const start = (keys: Record<string, string>) => scene.start({ ...base, ...keys });

      const first = await start({ SECRET_ENCRYPTION_KEY: OLD_KEY });
      const practice = await remotePractice(first.baseUrl, TOKEN_B);
      const r = await scene.receiver();
      const endpoint = await call(
        first.baseUrl,
        'POST',
        `/admin/v1/practices/${practice.practiceId}/webhook-endpoints`,
        { token: TOKEN_A, idempotencyKey: 'endpoint-1', body: { url: r.url() } },
      );
      assert.equal(endpoint.status, 201, endpoint.text);
      r.secret = endpoint.body.secret;
      assert.equal(await first.stop(), 0);

      const refused = await start({ SECRET_ENCRYPTION_KEY: NEW_KEY });
      assert.equal(await refused.exited, 1, refused.stdout());
      assert.match(refused.stderr(), /SECRET_ENCRYPTION_KEY opens none of the 2 stored secrets/);

      const rotated = await start({
        SECRET_ENCRYPTION_KEY: NEW_KEY,
        SECRET_ENCRYPTION_PREVIOUS_KEYS: OLD_KEY,
      });
      await billVisit(rotated.baseUrl, practice.key, practice.practitionerId);
      const deadline = Date.now() + 60_000;
      while (r.requests.length === 0 && Date.now() < deadline) await sleep(50);
      r.assertAllVerified();
      assert.ok(r.requests.length > 0, 'a delivery arrived');

      // On PostgreSQL the re-encryption runs beside the service; the embedded database is one process's.
      if (backend === 'pglite') assert.equal(await rotated.stop(), 0);
      const env = childEnv({
        ...base,
        DATA_DIR: scene.dataDir,
        SECRET_ENCRYPTION_KEY: NEW_KEY,
        SECRET_ENCRYPTION_PREVIOUS_KEYS: OLD_KEY,
      });
      const once = await cli(['secrets', 're-encrypt'], env, 120_000);
      assert.equal(once.code, 0, once.stderr);
      const report = JSON.parse(once.stdout);
      assert.equal(report.webhookSecrets.resealed, 1);
      assert.equal(report.idempotentAnswers.resealed, 1);
      const twice = await cli(['secrets', 're-encrypt'], env, 120_000);
      assert.equal(twice.code, 0, twice.stderr);
      assert.deepEqual(JSON.parse(twice.stdout), {
        webhookSecrets: { resealed: 0, alreadyCurrent: 1, changedMeanwhile: 0, unopenable: 0 },
        idempotentAnswers: { resealed: 0, alreadyCurrent: 1, changedMeanwhile: 0, unopenable: 0 },
      });
      if (backend === 'postgres') assert.equal(await rotated.stop(), 0);

      const renewed = await start({ SECRET_ENCRYPTION_KEY: NEW_KEY });
      const replay = await call(
        renewed.baseUrl,
        'POST',
        `/admin/v1/practices/${practice.practiceId}/webhook-endpoints`,
        { token: TOKEN_A, idempotencyKey: 'endpoint-1', body: { url: r.url() } },
      );
      assert.equal(replay.status, 201, replay.text);
      assert.equal(replay.body.secret, r.secret, 'the kept answer opens with the new key');
      assert.equal(await renewed.stop(), 0);
    });
  });
}
