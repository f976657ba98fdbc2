// A backup and a restore with the plain tools, as the owner login a managed PostgreSQL gives (LOGIN
// CREATEROLE CREATEDB, not a superuser): createdb, `practice-billing migrate`, the service, pg_dump
// --format=custom, createdb and pg_restore into a new database; the copy, started with
// DELIVERIES_HELD=true, is ready, serves the API and the admin API, holds its webhook deliveries, and
// numbers a new bill after the old ones. /readyz says not ready where the key look-up cannot run.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { remotePractice } from './child-service.ts';
import { call } from './harness.ts';
import { BIN, childEnv, cli, run } from './processes.ts';
import { billVisit, OperatorScene, pgFlags, urlFor } from './support/operator-scene.ts';
import { sleep } from './webhooks-fixtures.ts';

const SUPER = process.env.DATABASE_URL;
const TOKEN = `adm_backup_${randomBytes(16).toString('hex')}`;
const KEY = randomBytes(32).toString('hex');

describe('backup and restore by a non-superuser owner (postgres)', {
  skip: SUPER ? false : 'needs DATABASE_URL',
}, () => {
  const scene = new OperatorScene('backup');
  const source = `pb_bk_${randomBytes(5).toString('hex')}`;
  const copy = `${source}_copy`;
  const dump = path.join(scene.dataDir, 'practice_billing.dump');
  let owner = '';

  before(async () => {
    owner = await scene.owner('pb_owner');
    scene.dropsDatabase(source);
    scene.dropsDatabase(copy);
  });
  after(() => scene.close());

  test('pg_dump, createdb and pg_restore by the owner give a copy that serves', {
    timeout: 300_000,
  }, async () => {
    const tools = childEnv();
    const created = await run('createdb', [...pgFlags(owner), source], tools);
    assert.equal(created.code, 0, created.stderr);
    const migrated = await cli(['migrate'], childEnv({ DATABASE_URL: urlFor(owner, source) }), 120_000);
    assert.equal(migrated.code, 0, migrated.stderr);

    const env = {
      ADMIN_TOKEN: TOKEN,
      SECRET_ENCRYPTION_KEY: KEY,
      WEBHOOK_ALLOW_PRIVATE: 'true',
      LOG_LEVEL: 'info',
    };
    const first = await scene.start({ ...env, DATABASE_URL: urlFor(owner, source) });
    const practice = await remotePractice(first.baseUrl, TOKEN);
    const { number: before } = await billVisit(first.baseUrl, practice.key, practice.practitionerId);
    assert.equal(await first.stop(), 0);

    const dumped = await run(
      'pg_dump',
      [...pgFlags(owner), '--format=custom', '--file', dump, source],
      tools,
    );
    assert.equal(dumped.code, 0, dumped.stderr);
    const copied = await run('createdb', [...pgFlags(owner), copy], tools);
    assert.equal(copied.code, 0, copied.stderr);
    const restored = await run('pg_restore', [...pgFlags(owner), '--dbname', copy, dump], tools);
    assert.equal(restored.code, 0, restored.stderr);
    assert.equal(restored.stderr, '');
    assert.ok(fs.statSync(dump).size > 0);
    // A dump holds no database-level rights: the owner takes PUBLIC's back on the copy (docs/operations.md).
    const copyClient = new pg.Client({ connectionString: urlFor(owner, copy) });
    await copyClient.connect();
    try {
      await copyClient.query(`REVOKE CONNECT, TEMPORARY ON DATABASE ${copy} FROM PUBLIC`);
      await copyClient.query(
        `GRANT CONNECT ON DATABASE ${copy} TO practice_billing_app, practice_billing_operator`,
      );
    } finally {
      await copyClient.end();
    }

    const r = await scene.receiver();
    // As docs/operations.md starts a restored copy: `DELIVERIES_HELD=true bin/practice-billing.js start`.
    const second = await scene.start({ ...env, DATABASE_URL: urlFor(owner, copy), DELIVERIES_HELD: 'true' }, [
      BIN,
      'start',
    ]);
    assert.match(second.stdout(), /webhook deliveries are held \(DELIVERIES_HELD=true\)/);
    const ready = await call(second.baseUrl, 'GET', '/readyz');
    assert.equal(ready.status, 200, ready.text);
    const practices = await call(second.baseUrl, 'GET', '/admin/v1/practices', { token: TOKEN });
    assert.equal(practices.status, 200, practices.text);
    assert.ok(practices.body.data.some((p: { id: string }) => p.id === practice.practiceId));
    const endpoint = await call(
      second.baseUrl,
      'POST',
      `/admin/v1/practices/${practice.practiceId}/webhook-endpoints`,
      { token: TOKEN, body: { url: r.url() } },
    );
    assert.equal(endpoint.status, 201, endpoint.text);
    const outbox = () =>
      call(second.baseUrl, 'GET', `/admin/v1/practices/${practice.practiceId}/outbox`, { token: TOKEN });
    const kept = (await outbox()).body.data.length;
    const { number: after } = await billVisit(second.baseUrl, practice.key, practice.practitionerId);
    assert.ok(after > before, `the copy's new bill ${after} is numbered after the old ${before}`);
    // The bill's commit queued its e-mail and its webhook delivery together: once the worker has kept
    // the e-mail in the outbox, it has taken what it would take, and the delivery is still held.
    for (let tries = 0; (await outbox()).body.data.length === kept; tries++) {
      assert.ok(tries < 300, "the worker kept the bill's e-mail in the outbox");
      await sleep(50);
    }
    assert.equal(r.requests.length, 0, 'a held copy delivered a webhook');

    // A copy whose key look-up cannot run (a restore that lost the function) is not ready.
    const broken = new pg.Client({ connectionString: urlFor(new URL(SUPER!).username || 'postgres', copy) });
    await broken.connect();
    try {
      await broken.query('ALTER FUNCTION api_key_for_request(text) RENAME TO api_key_for_request_gone');
    } finally {
      await broken.end();
    }
    const notReady = await call(second.baseUrl, 'GET', '/readyz');
    assert.equal(notReady.status, 503, notReady.text);
    assert.match(notReady.body.reason, /API key look-up cannot run/);
    assert.equal(await second.stop(), 0);
  });
});
