// The API-key cache seen from outside (src/auth/key-cache.ts, migration 0012): a key that let a
// request in is answered from memory, so its next requests call api_key_for_request no more (counted
// by PostgreSQL's own function statistics, on the service's single connection), while every refusal
// still takes the look-up; a key revoked, a client suspended or changed, the add-on switched off
// through the admin API, or a key expired by the service clock, tells on the very next request; plain
// SQL reaches it too. On PostgreSQL, a change made by another process or on another connection
// reaches a serving process within moments (through NOTIFY), and whatever it remembered is forgotten
// when its listening connection breaks.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { KEY_CHANGES_CHANNEL } from '../src/auth/key-cache.ts';
import { type ServeProcess, startServeProcess } from './child-service.ts';
import { apiClient, call, describeEachBackend, startService, type TestService } from './harness.ts';
import { createPatient } from './support/factories.ts';
import {
  askUntil,
  changeByHand,
  countLookUps,
  followingKeyChanges,
  keyChangesHeard,
  lookUps,
  PROMPTLY_MS,
  rememberedPractice,
  UNKNOWN_PATIENT,
} from './support/key-cache.ts';

function otherSecretOf(key: string): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  const secret = Array.from(randomBytes(43), (b) => alphabet[b % 62]).join('');
  return `${key.slice(0, key.lastIndexOf('_') + 1)}${secret}`;
}

describeEachBackend('API key cache', (backend) => {
  let svc: TestService;
  before(async () => {
    // TRUST_PROXY lets a test call from another address (X-Forwarded-For).
    svc = await startService(backend, {
      poolSize: 1,
      env: { API_KEY_CACHE_SECONDS: '600', TRUST_PROXY: 'true' },
    });
    await countLookUps(svc);
    await followingKeyChanges(svc);
  });
  after(async () => {
    await svc.close();
  });

  test('a key that let a request in is not looked up again; every refusal still is', async () => {
    const practice = await svc.newPractice();
    await keyChangesHeard(svc);
    const api = apiClient(svc, practice.key);
    const start = await lookUps(svc);
    const patient = await createPatient(api);
    for (let i = 0; i < 20; i++) {
      const read = await api('GET', `/patients/${patient.id}`);
      assert.equal(read.status, 200, read.text);
    }
    assert.equal((await lookUps(svc)) - start, 1, 'one look-up for 21 requests with one key');

    // A refusal is never decided from memory: a wrong secret for the remembered key's id, the
    // remembered key from an address its client does not allow, and an unknown key each cost one
    // look-up, as before the cache.
    const restricted = await svc.newPractice({ allowedIps: ['127.0.0.1'] });
    await keyChangesHeard(svc);
    const askRestricted = (headers: Record<string, string> = {}) =>
      call(svc.baseUrl, 'GET', `/api/v1${UNKNOWN_PATIENT}`, { token: restricted.key, headers });
    assert.equal((await askRestricted()).status, 404);
    const before = await lookUps(svc);
    assert.equal((await askRestricted()).status, 404);
    assert.equal(await lookUps(svc), before, 'remembered');
    const refusals = [
      () => call(svc.baseUrl, 'GET', `/api/v1${UNKNOWN_PATIENT}`, { token: otherSecretOf(practice.key) }),
      () => askRestricted({ 'x-forwarded-for': '192.0.2.7' }),
      () => askRestricted({ 'x-forwarded-for': '192.0.2.7' }),
      () =>
        call(svc.baseUrl, 'GET', `/api/v1${UNKNOWN_PATIENT}`, {
          token: `pbk_${'A'.repeat(22)}_${'B'.repeat(43)}`,
        }),
    ];
    for (const refuse of refusals) assert.equal((await refuse()).status, 401);
    assert.equal((await lookUps(svc)) - before, refusals.length, 'one look-up per refusal');
    // And the remembered key still serves from memory.
    const afterRefusals = await lookUps(svc);
    assert.equal((await api('GET', `/patients/${patient.id}`)).status, 200);
    assert.equal(await lookUps(svc), afterRefusals);
  });

  test('a key revoked through the admin API answers 401 on the very next request', async () => {
    const practice = await rememberedPractice(svc);
    assert.equal((await svc.admin('POST', `/keys/${practice.keyId}/revoke`)).status, 200);
    const next = await practice.ask();
    assert.equal(next.status, 401, next.text);
  });

  test('a client suspended answers 401 on the very next request, and 200 again once resumed', async () => {
    const practice = await rememberedPractice(svc);
    assert.equal((await svc.admin('POST', `/clients/${practice.clientId}/suspend`)).status, 200);
    assert.equal((await practice.ask()).status, 401);
    assert.equal((await svc.admin('POST', `/clients/${practice.clientId}/resume`)).status, 200);
    assert.equal((await practice.ask()).status, 404);
  });

  test('the add-on switched off answers 403 on the very next request; a narrowed client 403 forbidden', async () => {
    const practice = await rememberedPractice(svc);
    const off = await svc.admin('PUT', `/practices/${practice.practiceId}/integrations`, { enabled: false });
    assert.equal(off.status, 200, off.text);
    const refused = await practice.ask();
    assert.equal(refused.status, 403);
    assert.equal(refused.body.code, 'addon_inactive');
    assert.equal(
      (await svc.admin('PUT', `/practices/${practice.practiceId}/integrations`, { enabled: true })).status,
      200,
    );
    assert.equal((await practice.ask()).status, 404);

    const narrowed = await svc.admin('PUT', `/clients/${practice.clientId}`, {
      name: 'Test client',
      permissions: ['INVOICES:READ'],
    });
    assert.equal(narrowed.status, 200, narrowed.text);
    const forbidden = await practice.ask();
    assert.equal(forbidden.status, 403);
    assert.equal(forbidden.body.code, 'forbidden');
  });

  test('a remembered key expires by the service clock, not by what was remembered', async () => {
    const practice = await svc.newPractice();
    const issued = await svc.admin('POST', `/clients/${practice.clientId}/keys`, {
      expiresAt: new Date(svc.clock.now().getTime() + 60_000).toISOString(),
    });
    assert.equal(issued.status, 201, issued.text);
    await keyChangesHeard(svc);
    const ask = () => apiClient(svc, issued.body.key as string)('GET', UNKNOWN_PATIENT);
    assert.equal((await ask()).status, 404);
    const start = await lookUps(svc);
    assert.equal((await ask()).status, 404);
    assert.equal(await lookUps(svc), start, 'answered from memory');
    svc.clock.advance(61_000);
    try {
      assert.equal((await ask()).status, 401);
    } finally {
      svc.clock.reset();
    }
  });

  test('a key replaced with a grace period keeps working from memory until the grace ends, then answers 401 as a revoked key', async () => {
    const practice = await svc.newPractice();
    const old = await svc.admin('POST', `/clients/${practice.clientId}/keys`, {});
    assert.equal(old.status, 201, old.text);
    const ask = (key: string) => apiClient(svc, key)('GET', UNKNOWN_PATIENT);
    assert.equal((await ask(old.body.key)).status, 404);

    const before = svc.clock.now().getTime();
    const fresh = await svc.admin('POST', `/clients/${practice.clientId}/keys`, {
      expireOldKeyId: old.body.id,
      graceSeconds: 3600,
    });
    assert.equal(fresh.status, 201, fresh.text);
    assert.equal(fresh.body.replacedKey.id, old.body.id);
    const graceEnds = Date.parse(fresh.body.replacedKey.expiresAt);
    assert.ok(
      graceEnds >= before + 3_600_000 && graceEnds <= svc.clock.now().getTime() + 3_600_000,
      'the old key expires an hour after the new one is issued',
    );
    assert.equal(fresh.body.expiresAt, null, 'the new key does not expire');
    await keyChangesHeard(svc);
    assert.equal((await ask(old.body.key)).status, 404, 'the old key still works during the grace');
    const start = await lookUps(svc);
    assert.equal((await ask(old.body.key)).status, 404);
    assert.equal(await lookUps(svc), start, 'answered from memory');
    assert.equal((await ask(fresh.body.key)).status, 404);

    svc.clock.advance(3_600_000 + 1_000);
    try {
      const expired = await ask(old.body.key);
      assert.equal(expired.status, 401, 'refused at the end of the grace, with no change signal since');
      await svc.admin('POST', `/keys/${fresh.body.id}/revoke`);
      const revoked = await ask(fresh.body.key);
      assert.equal(revoked.status, 401);
      const strip = (body: Record<string, unknown>) => ({
        ...body,
        instance: undefined,
        requestId: undefined,
      });
      assert.deepEqual(
        strip(expired.body),
        strip(revoked.body),
        'an expired key is refused exactly as a revoked one',
      );
    } finally {
      svc.clock.reset();
    }
  });

  test('a key replaced twice keeps the sooner expiry; a key of another client or a revoked one cannot be replaced', async () => {
    const practice = await svc.newPractice();
    const old = await svc.admin('POST', `/clients/${practice.clientId}/keys`, {});
    const first = await svc.admin('POST', `/clients/${practice.clientId}/keys`, {
      expireOldKeyId: old.body.id,
      graceSeconds: 60,
    });
    assert.equal(first.status, 201, first.text);
    const second = await svc.admin('POST', `/clients/${practice.clientId}/keys`, {
      expireOldKeyId: old.body.id,
    });
    assert.equal(second.status, 201, second.text);
    assert.equal(second.body.replacedKey.expiresAt, first.body.replacedKey.expiresAt, 'never lengthened');

    const other = await svc.admin('POST', `/practices/${practice.practiceId}/clients`, {
      name: 'Other',
      permissions: ['PATIENTS:READ'],
    });
    const refused = await svc.admin('POST', `/clients/${other.body.id}/keys`, {
      expireOldKeyId: old.body.id,
    });
    assert.equal(refused.status, 422, refused.text);
    assert.equal(refused.body.errors[0].field, 'expireOldKeyId');
    await svc.admin('POST', `/keys/${first.body.id}/revoke`);
    const ofRevoked = await svc.admin('POST', `/clients/${practice.clientId}/keys`, {
      expireOldKeyId: first.body.id,
    });
    assert.equal(ofRevoked.status, 422, ofRevoked.text);
    const lonely = await svc.admin('POST', `/clients/${practice.clientId}/keys`, { graceSeconds: 5 });
    assert.equal(lonely.status, 422, lonely.text);
    assert.equal(lonely.body.errors[0].field, 'graceSeconds');

    // An expiry set on an existing key: from then on 401.
    const ask = () => apiClient(svc, second.body.key)('GET', UNKNOWN_PATIENT);
    assert.equal((await ask()).status, 404);
    const at = new Date(svc.clock.now().getTime() + 30_000).toISOString();
    const expiring = await svc.admin('POST', `/keys/${second.body.id}/expire`, { expiresAt: at });
    assert.equal(expiring.status, 200, expiring.text);
    assert.equal(expiring.body.expiresAt, at);
    assert.equal((await ask()).status, 404);
    svc.clock.advance(31_000);
    try {
      assert.equal((await ask()).status, 401);
    } finally {
      svc.clock.reset();
    }
  });

  test('past half its time a remembered key is served and refreshed behind; past all of it, looked up', async () => {
    const practice = await rememberedPractice(svc);
    try {
      svc.clock.advance(301_000);
      const start = await lookUps(svc);
      assert.equal((await practice.ask()).status, 404);
      // The refresh runs after the answer; wait for its look-up.
      const deadline = Date.now() + PROMPTLY_MS;
      while ((await lookUps(svc)) === start) {
        assert.ok(Date.now() < deadline, 'no refresh');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.equal((await lookUps(svc)) - start, 1, 'one refresh');
      assert.equal((await practice.ask()).status, 404);
      assert.equal((await practice.ask()).status, 404);
      assert.equal((await lookUps(svc)) - start, 1, 'fresh again: served from memory');
      svc.clock.advance(600_000);
      assert.equal((await practice.ask()).status, 404);
      assert.equal((await lookUps(svc)) - start, 2, 'too old to serve: looked up before answering');
    } finally {
      svc.clock.reset();
    }
  });

  test('a change made in plain SQL, with its NOTIFY, reaches the next requests', async () => {
    const practice = await rememberedPractice(svc);
    // PostgreSQL: on a connection of its own; PGlite: its single session.
    const client = backend === 'postgres' ? new pg.Client({ connectionString: svc.databaseUrl }) : undefined;
    await client?.connect();
    try {
      const suspend = `UPDATE clients SET suspended_at = now() WHERE id = '${practice.clientId}'`;
      if (client) await changeByHand(client, practice.practiceId, suspend);
      else
        await svc.db.kysely.transaction().execute(async (trx) => {
          await sql.raw(suspend).execute(trx);
          await sql`SELECT pg_notify(${KEY_CHANGES_CHANNEL}, ${practice.practiceId})`.execute(trx);
        });
      const { answer, ms, asks } = await askUntil(practice.ask, (a) => a.status === 401);
      assert.equal(answer.status, 401, `still ${answer.status} after ${ms} ms`);
      process.stdout.write(`# plain SQL suspension heard after ${ms} ms, ${asks} request(s) (${backend})\n`);
      if (backend === 'pglite') assert.equal(asks, 1, 'PGlite hears it before the commit returns');
    } finally {
      await client?.end();
    }
  });
});

/** The process id of the connection listening for key changes, once one is listening. */
async function keyListener(admin: pg.Client, notPid?: number): Promise<number> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const found = await admin.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity
       WHERE datname = current_database() AND query = 'LISTEN "api_keys_changed"' AND state = 'idle'
         AND pid IS DISTINCT FROM $1`,
      [notPid ?? null],
    );
    if (found.rows.length === 1) return found.rows[0]!.pid;
    assert.ok(Date.now() < deadline, `no listener for key changes (${found.rows.length})`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('API key cache across processes and connections (postgres)', {
  skip: !process.env.DATABASE_URL,
}, () => {
  let svc: TestService;
  let child: ServeProcess | undefined;
  let admin: pg.Client;
  before(async () => {
    svc = await startService('postgres', { poolSize: 1, env: { API_KEY_CACHE_SECONDS: '600' } });
    await countLookUps(svc);
    await followingKeyChanges(svc);
    admin = new pg.Client({ connectionString: svc.databaseUrl });
    await admin.connect();
  });
  after(async () => {
    await child?.stop();
    await admin?.end();
    await svc.close();
  });

  test('a change made through another process reaches this one promptly, and the other way round', async () => {
    child = await startServeProcess({ databaseUrl: svc.databaseUrl! });
    const childAdmin = (method: string, p: string, body?: unknown) =>
      call(child!.baseUrl, method, `/admin/v1${p}`, {
        token: child!.adminToken,
        ...(body !== undefined ? { body } : {}),
      });

    // Remembered here, suspended there.
    const here = await rememberedPractice(svc);
    assert.equal((await childAdmin('POST', `/clients/${here.clientId}/suspend`)).status, 200);
    const heard = await askUntil(here.ask, (a) => a.status === 401);
    assert.equal(heard.answer.status, 401, `still ${heard.answer.status} after ${heard.ms} ms`);

    // Remembered there, revoked here.
    const there = await svc.newPractice();
    const askThere = () => call(child!.baseUrl, 'GET', `/api/v1${UNKNOWN_PATIENT}`, { token: there.key });
    for (let i = 0; i < 2; i++) assert.equal((await askThere()).status, 404);
    assert.equal((await svc.admin('POST', `/keys/${there.keyId}/revoke`)).status, 200);
    const heardThere = await askUntil(askThere, (a) => a.status === 401);
    assert.equal(
      heardThere.answer.status,
      401,
      `still ${heardThere.answer.status} after ${heardThere.ms} ms`,
    );
    process.stdout.write(
      `# heard from another process after ${heard.ms} ms; by another process after ${heardThere.ms} ms\n`,
    );
    // Its listening connection would be counted with this process's below.
    await child.stop();
  });

  test('switched off in plain SQL on another connection: 403 within moments', async () => {
    const practice = await rememberedPractice(svc);
    await changeByHand(
      admin,
      practice.practiceId,
      'UPDATE practices SET integrations_enabled = false WHERE id = $1',
      [practice.practiceId],
    );
    const { answer, ms } = await askUntil(practice.ask, (a) => a.status === 403);
    assert.equal(answer.status, 403, `still ${answer.status} after ${ms} ms`);
    assert.equal(answer.body.code, 'addon_inactive');
  });

  test('a billing settings change notifies no one: the key stays remembered', async () => {
    const practice = await rememberedPractice(svc);
    await admin.query('UPDATE practices SET payment_terms_days = payment_terms_days + 1 WHERE id = $1', [
      practice.practiceId,
    ]);
    // A NOTIFY, had there been one, arrives on the listening connection within milliseconds; the
    // request after the next change signal is the check. Make one that this practice does not hear.
    const other = await rememberedPractice(svc);
    await changeByHand(admin, other.practiceId, 'UPDATE clients SET suspended_at = now() WHERE id = $1', [
      other.clientId,
    ]);
    await askUntil(other.ask, (a) => a.status === 401);
    const before = await lookUps(svc);
    assert.equal((await practice.ask()).status, 404);
    assert.equal((await lookUps(svc)) - before, 0, 'still answered from memory');
  });

  test('whatever was remembered is forgotten when the listening connection breaks', async () => {
    const changed = await rememberedPractice(svc);
    const unchanged = await rememberedPractice(svc);
    const listener = await keyListener(admin);
    await admin.query('SELECT pg_terminate_backend($1)', [listener]);
    const gone = Date.now() + 5000;
    while ((await admin.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [listener])).rowCount) {
      assert.ok(Date.now() < gone, 'the listener was not terminated');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    // Made while no one listens: its NOTIFY reaches no one.
    await changeByHand(admin, changed.practiceId, `UPDATE clients SET permissions = '{}' WHERE id = $1`, [
      changed.clientId,
    ]);
    await keyListener(admin, listener);

    const refused = await changed.ask();
    assert.equal(refused.status, 403, refused.text);
    const start = await lookUps(svc);
    assert.equal((await unchanged.ask()).status, 404);
    assert.equal((await lookUps(svc)) - start, 1, 'the unchanged key was forgotten too, and looked up again');
    // Remembered again once the new connection listens.
    const again = await askUntil(
      async () => {
        const before = await lookUps(svc);
        const answer = await unchanged.ask();
        return { ...answer, status: (await lookUps(svc)) === before ? answer.status : -1 };
      },
      (a) => a.status === 404,
    );
    assert.equal(again.answer.status, 404, 'answered from memory again');
  });
});
