// The API-key cache when LISTEN does not deliver (PostgreSQL; src/platform/db/listen.ts). A listening
// connection can be up and still hear nothing: behind a pooler in transaction mode, or pointed at
// another database. Without the heartbeat the cache would trust it and serve a revoked key until the
// key's time in memory ran out (API_KEY_CACHE_SECONDS, here ten minutes). With it: a listener that
// never hears its own heartbeat never serves from memory, and one that stops hearing it stops serving
// within one period plus the miss threshold, then serves again once the heartbeat is heard again.
// A connection whose peer vanishes without a reset (nothing arrives, nothing closes) is given up after
// a few unheard beats and opened again, and the cache trusts the new one once it hears its heartbeat.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { MISSED_BEATS, RECONNECT_AFTER_MISSED_BEATS } from '../src/platform/db/listen.ts';
import { postgresDatabase, startService, type TestService } from './harness.ts';
import {
  askUntil,
  changeByHand,
  countLookUps,
  lookUps,
  rememberedPractice,
  until,
} from './support/key-cache.ts';
import { type NotifyProxy, startNotifyProxy } from './support/notify-proxy.ts';

const HEARTBEAT_MS = 500;
const CACHE = { API_KEY_CACHE_SECONDS: '600', DATABASE_LISTEN_HEARTBEAT_MS: String(HEARTBEAT_MS) };

describe('API key cache when notifications do not arrive (postgres)', {
  skip: !process.env.DATABASE_URL,
}, () => {
  test('listening on a database that never hears this one: nothing is served from memory', async () => {
    const elsewhere = await postgresDatabase();
    const svc = await startService('postgres', { poolSize: 1, listenUrl: () => elsewhere.url, env: CACHE });
    const admin = new pg.Client({ connectionString: svc.databaseUrl });
    try {
      await admin.connect();
      await countLookUps(svc);
      const practice = await rememberedPractice(svc);
      // Several heartbeats go by, none heard.
      await new Promise((resolve) => setTimeout(resolve, (MISSED_BEATS + 1) * HEARTBEAT_MS));
      assert.equal(svc.deps.keyCache.following, false, 'the cache does not trust this listener');
      const start = await lookUps(svc);
      for (let i = 0; i < 3; i++) assert.equal((await practice.ask()).status, 404);
      assert.equal((await lookUps(svc)) - start, 3, 'every request looked its key up');
      // Revoked on another connection: its NOTIFY reaches no listener, and the next request is refused.
      await changeByHand(admin, practice.practiceId, 'UPDATE api_keys SET revoked_at = now() WHERE id = $1', [
        practice.keyId,
      ]);
      const refused = await practice.ask();
      assert.equal(refused.status, 401, refused.text);
    } finally {
      await admin.end();
      await svc.close();
      await elsewhere.drop();
    }
  });

  describe('a listening connection that stops delivering', () => {
    let proxy: NotifyProxy;
    let svc: TestService;
    let admin: pg.Client;
    before(async () => {
      proxy = await startNotifyProxy(process.env.DATABASE_URL!);
      svc = await startService('postgres', { poolSize: 1, listenUrl: (url) => proxy.urlOf(url), env: CACHE });
      await countLookUps(svc);
      admin = new pg.Client({ connectionString: svc.databaseUrl });
      await admin.connect();
    });
    after(async () => {
      await admin?.end();
      await svc?.close();
      await proxy?.close();
    });

    test('a revoked key is refused within one heartbeat and the miss threshold; once heard again, keys are remembered again', async () => {
      await until(() => svc.deps.keyCache.following, 5000, 'listening through the proxy works');
      const practice = await rememberedPractice(svc);
      const start = await lookUps(svc);
      assert.equal((await practice.ask()).status, 404);
      assert.equal(await lookUps(svc), start, 'answered from memory while heartbeats are heard');

      // From now on the listening connection stays up and answers, but hears nothing.
      proxy.dropping = true;
      const dropped = Date.now();
      await changeByHand(admin, practice.practiceId, 'UPDATE api_keys SET revoked_at = now() WHERE id = $1', [
        practice.keyId,
      ]);
      const bound = (1 + MISSED_BEATS) * HEARTBEAT_MS;
      const refused = await askUntil(practice.ask, (a) => a.status === 401, bound + 5000);
      const ms = Date.now() - dropped;
      assert.equal(refused.answer.status, 401, `still ${refused.answer.status} after ${ms} ms`);
      // Slack for a busy machine: timers and the heartbeat's own round trip run late.
      assert.ok(ms <= bound + 1500, `refused after ${ms} ms; one heartbeat and the threshold: ${bound} ms`);
      assert.equal(svc.deps.keyCache.following, false);
      process.stdout.write(
        `# revoked key refused ${ms} ms after notifications stopped (bound ${bound} ms)\n`,
      );

      // Delivering again: the next heartbeat heard brings the cache back.
      proxy.dropping = false;
      const back = await until(() => svc.deps.keyCache.following, 5000, 'heard again');
      process.stdout.write(`# heartbeat heard again after ${back} ms\n`);
      const again = await rememberedPractice(svc);
      const before = await lookUps(svc);
      assert.equal((await again.ask()).status, 404);
      assert.equal(await lookUps(svc), before, 'answered from memory again');
    });

    test('a listening connection that goes silent without closing is opened again by itself', async () => {
      await until(() => svc.deps.keyCache.following, 5000, 'listening through the proxy works');
      const practice = await rememberedPractice(svc);
      const start = await lookUps(svc);
      assert.equal((await practice.ask()).status, 404);
      assert.equal(await lookUps(svc), start, 'answered from memory while heartbeats are heard');
      const connections = proxy.accepted;

      // The listening connection now neither delivers nor answers, and no reset ever comes.
      proxy.blackhole();
      const silenced = Date.now();
      await changeByHand(admin, practice.practiceId, 'UPDATE api_keys SET revoked_at = now() WHERE id = $1', [
        practice.keyId,
      ]);
      const bound = (1 + MISSED_BEATS) * HEARTBEAT_MS;
      const refused = await askUntil(practice.ask, (a) => a.status === 401, bound + 5000);
      assert.equal(
        refused.answer.status,
        401,
        `still ${refused.answer.status} after ${Date.now() - silenced} ms`,
      );

      // Given up after RECONNECT_AFTER_MISSED_BEATS unheard beats, opened again a second later (the
      // proxy lets new connections through), trusted once its first heartbeat is heard.
      await until(() => svc.deps.keyCache.following, 15_000, 'listening again on a new connection');
      process.stdout.write(
        `# listening again ${Date.now() - silenced} ms after the connection went silent (gives up after ${RECONNECT_AFTER_MISSED_BEATS} beats of ${HEARTBEAT_MS} ms)\n`,
      );
      assert.ok(proxy.accepted > connections, 'a new listening connection was opened');
      // The revocation's notification was lost with the old connection; the key stays refused.
      assert.equal((await practice.ask()).status, 401);
      // And keys are remembered again, kept right by notifications on the new connection.
      const again = await rememberedPractice(svc);
      const before = await lookUps(svc);
      assert.equal((await again.ask()).status, 404);
      assert.equal(await lookUps(svc), before, 'answered from memory again');
      await changeByHand(admin, again.practiceId, 'UPDATE api_keys SET revoked_at = now() WHERE id = $1', [
        again.keyId,
      ]);
      const revokedAgain = await askUntil(again.ask, (a) => a.status === 401, 2000);
      assert.equal(revokedAgain.answer.status, 401, 'a revocation heard on the new connection');
    });
  });
});
