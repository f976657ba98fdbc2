// Idempotency-Key behaviour seen from outside: one record per key under concurrency, 409 at once while
// the first request still runs, replay of committed answers only, fingerprints, scoping, expiry and
// takeover of a crashed claim. Real HTTP on real databases.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { buildApp } from '../src/app.ts';
import { buildDeps } from '../src/bootstrap.ts';
import type { AuditEntry } from '../src/platform/audit-log.ts';
import { type Database, openPostgres } from '../src/platform/db/database.ts';
import { advisoryLockKey } from '../src/platform/db/transaction.ts';
import {
  type Answer,
  apiClient,
  call,
  describeEachBackend,
  patientBody,
  startService,
  type TestService,
  uniqueKey,
} from './harness.ts';
import { refusedWith } from './support/refusals.ts';

type Fault = (entry: AuditEntry) => Promise<void> | void;

/** A refusal here is also checked to carry its request's id. */
const SAME_REQUEST = { requestId: true };

/** A superuser connection to the test's database: PGlite's own, or a new one to PostgreSQL. */
function superuser(svc: TestService): { db: Database; close: () => Promise<void> } {
  if (svc.backend === 'pglite') return { db: svc.db, close: async () => {} };
  const db = openPostgres({ url: svc.databaseUrl!, poolSize: 1, statementTimeoutMs: 15_000 });
  return { db, close: () => db.close() };
}

/**
 * Sends `repeat` while a first request is held open and answers whether the repeat's answer came
 * while the first was still held. Should the repeat wait for the first, the first is let go after a
 * while so that nothing hangs, and the answer comes after that.
 */
async function whileHeld(
  release: () => void,
  repeat: () => Promise<Answer>,
): Promise<{ answer: Answer; held: boolean }> {
  let letGo = false;
  const unstick = setTimeout(() => {
    letGo = true;
    release();
  }, 30_000);
  try {
    const answer = await repeat();
    return { answer, held: !letGo };
  } finally {
    clearTimeout(unstick);
  }
}

/**
 * Runs `request` while watching PostgreSQL for a session waiting for an advisory lock, and answers
 * whether one did; `onWait` is told at once (to let the lock go, so that nothing hangs). A wait for a
 * lock held until the request is answered lasts until then, so the watch cannot miss it.
 */
async function watchingLockWaits(
  svc: TestService,
  request: () => Promise<Answer>,
  onWait: () => void,
): Promise<{ answer: Answer; waited: boolean }> {
  const watcher = new pg.Client({ connectionString: svc.databaseUrl });
  await watcher.connect();
  let waited = false;
  let answered = false;
  const watching = (async () => {
    while (!answered && !waited) {
      const found = await watcher.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_locks
          WHERE locktype = 'advisory' AND NOT granted AND database = (
            SELECT oid FROM pg_database WHERE datname = current_database())`,
      );
      if (found.rows[0]!.n > 0) {
        waited = true;
        onWait();
      }
    }
  })();
  try {
    const answer = await request();
    return { answer, waited };
  } finally {
    answered = true;
    await watching;
    await watcher.end();
  }
}

async function asSuperuser(svc: TestService, fn: (db: Database) => Promise<void>): Promise<void> {
  const su = superuser(svc);
  try {
    await fn(su.db);
  } finally {
    await su.close();
  }
}

/** A date `days` after the service clock's today (UTC), as YYYY-MM-DD. */
function dayFromNow(svc: TestService, days: number): string {
  return new Date(svc.clock.now().getTime() + days * 86_400_000).toISOString().slice(0, 10);
}

function assertFresh(answer: Answer): void {
  assert.equal(answer.status, 201, answer.text);
  assert.equal(answer.headers.get('idempotent-replayed'), null, 'a fresh run is not a replay');
}

describeEachBackend('idempotency', (backend) => {
  let svc: TestService;
  let fault: Fault | undefined;
  before(async () => {
    svc = await startService(backend, { auditFault: (entry) => fault?.(entry) });
  });
  after(async () => {
    await svc.close();
  });

  /** Holds the successful work of `idem` inside its transaction (at its audit insert) until released. */
  function holdOpen(idem: string) {
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let entered!: () => void;
    const held = new Promise<void>((r) => {
      entered = r;
    });
    fault = async (entry) => {
      if (entry.idempotencyKey === idem && entry.status === 201) {
        entered();
        await gate;
      }
    };
    return { held, release };
  }

  async function patientsWith(key: string, ext: { system: string; value: string }) {
    const found = await apiClient(svc, key)(
      'GET',
      `/patients?externalSystem=${encodeURIComponent(ext.system)}&externalId=${encodeURIComponent(ext.value)}`,
    );
    assert.equal(found.status, 200, found.text);
    return found.body.data as Array<{ id: string }>;
  }

  test('50 concurrent requests with one key make exactly one patient', async () => {
    const { key } = await svc.newPractice();
    const api = apiClient(svc, key);
    const body = patientBody();
    const idem = uniqueKey();
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => api('POST', '/patients', { body, idempotencyKey: idem })),
    );
    const created = answers.filter((a) => a.status === 201);
    for (const a of answers) {
      assert.ok(a.status === 201 || a.status === 409, `unexpected ${a.status}: ${a.text}`);
      if (a.status === 409) refusedWith(a, 409, 'conflict', undefined, SAME_REQUEST);
    }
    const originals = created.filter((a) => a.headers.get('idempotent-replayed') !== 'true');
    assert.equal(originals.length, 1, 'exactly one request did the work');
    for (const a of created) assert.deepEqual(a.body, originals[0]!.body);
    const found = await patientsWith(key, body.externalId);
    assert.deepEqual(
      found.map((p) => p.id),
      [originals[0]!.body.id],
    );
    const again = await api('POST', '/patients', { body, idempotencyKey: idem });
    assert.equal(again.status, 201);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(again.body, originals[0]!.body);
  });

  test('a repeat that spells the Authorization header otherwise answers 409 while the first runs, on either database', async () => {
    const { key } = await svc.newPractice();
    const api = apiClient(svc, key);
    const spelledOtherwise = (
      method: string,
      p: string,
      options: { body?: unknown; idempotencyKey?: string } = {},
    ) =>
      call(svc.baseUrl, method, `/api/v1${p}`, { headers: { authorization: `bearer  ${key}` }, ...options });
    // Both spellings authenticated once already, so the repeat needs no database to authenticate.
    assert.equal((await api('GET', '/code-systems?limit=1')).status, 200);
    assert.equal((await spelledOtherwise('GET', '/code-systems?limit=1')).status, 200);
    const body = patientBody();
    const idem = uniqueKey();
    const { held, release } = holdOpen(idem);
    try {
      const first = api('POST', '/patients', { body, idempotencyKey: idem });
      await held;
      // Should the repeat wait for the first instead of answering, open the gate so it cannot hang.
      const unstick = setTimeout(release, 5000);
      const second = await spelledOtherwise('POST', '/patients', { body, idempotencyKey: idem });
      clearTimeout(unstick);
      refusedWith(second, 409, 'conflict');
      release();
      assertFresh(await first);
    } finally {
      release();
    }
  });

  test('a repeat while the first is still running answers 409 at once; after it the retry replays', async () => {
    const { key } = await svc.newPractice();
    const api = apiClient(svc, key);
    const body = patientBody();
    const idem = uniqueKey();
    const { held, release } = holdOpen(idem);
    try {
      const first = api('POST', '/patients', { body, idempotencyKey: idem });
      await held;
      const { answer: second, held: stillHeld } = await whileHeld(release, () =>
        api('POST', '/patients', { body, idempotencyKey: idem }),
      );
      refusedWith(second, 409, 'conflict', undefined, SAME_REQUEST);
      assert.equal(second.headers.get('retry-after'), '1', 'says when to retry');
      assert.ok(stillHeld, 'the 409 came while the first was still running, not after it');
      // counted against the client's own allowance, like every answer it gets
      assert.equal(second.headers.get('x-ratelimit-limit'), String(svc.deps.config.rateLimitPerMinute));
      assert.match(second.headers.get('x-ratelimit-remaining') ?? '', /^\d+$/);
      assert.match(second.headers.get('x-ratelimit-reset') ?? '', /^\d+$/);
      release();
      const original = await first;
      assertFresh(original);
      const retry = await api('POST', '/patients', { body, idempotencyKey: idem });
      assert.equal(retry.status, 201, retry.text);
      assert.equal(retry.headers.get('idempotent-replayed'), 'true');
      assert.deepEqual(retry.body, original.body);
    } finally {
      release();
      fault = undefined;
    }
  });

  test('a repeat reaching another process while the first runs answers 409 at once', {
    skip: backend !== 'postgres' && 'needs two processes on one PostgreSQL',
  }, async () => {
    const db2 = openPostgres({ url: svc.databaseUrl!, poolSize: 2, statementTimeoutMs: 15_000 });
    const app2 = await buildApp(await buildDeps(svc.deps.config, db2), { adminToken: svc.adminToken });
    await app2.listen({ port: 0, host: '127.0.0.1' });
    const address = app2.server.address();
    const otherUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    const { key } = await svc.newPractice();
    const body = patientBody();
    const idem = uniqueKey();
    const { held, release } = holdOpen(idem);
    try {
      const first = apiClient(svc, key)('POST', '/patients', { body, idempotencyKey: idem });
      await held;
      const { answer: second, held: stillHeld } = await whileHeld(release, () =>
        call(otherUrl, 'POST', '/api/v1/patients', { token: key, body, idempotencyKey: idem }),
      );
      refusedWith(second, 409, 'conflict', undefined, SAME_REQUEST);
      assert.equal(second.headers.get('retry-after'), '1', 'says when to retry');
      assert.ok(stillHeld, 'the 409 came while the first was still running, not after it');
      // counted against the client's own allowance, like every answer it gets
      assert.equal(second.headers.get('x-ratelimit-limit'), String(svc.deps.config.rateLimitPerMinute));
      assert.match(second.headers.get('x-ratelimit-remaining') ?? '', /^\d+$/);
      assert.match(second.headers.get('x-ratelimit-reset') ?? '', /^\d+$/);
      release();
      assertFresh(await first);
      const retry = await call(otherUrl, 'POST', '/api/v1/patients', {
        token: key,
        body,
        idempotencyKey: idem,
      });
      assert.equal(retry.headers.get('idempotent-replayed'), 'true', retry.text);
    } finally {
      release();
      fault = undefined;
      await app2.close();
      await db2.close();
    }
  });

  test('the key is required and at most 255 characters', async () => {
    const api = apiClient(svc, (await svc.newPractice()).key);
    const missing = await api('POST', '/patients', { body: patientBody() });
    refusedWith(missing, 400, 'invalid_request', undefined, SAME_REQUEST);
    assert.ok(
      missing.body.errors.some((e: { field: string }) => e.field === 'Idempotency-Key'),
      missing.text,
    );
    const tooLong = await api('POST', '/patients', {
      body: patientBody(),
      idempotencyKey: 'k'.repeat(256),
    });
    refusedWith(tooLong, 400, 'invalid_request', undefined, SAME_REQUEST);
    assert.ok(
      tooLong.body.errors.some((e: { field: string }) => e.field === 'Idempotency-Key'),
      tooLong.text,
    );
    assertFresh(await api('POST', '/patients', { body: patientBody(), idempotencyKey: 'k'.repeat(255) }));
  });

  test('the same key with another body or another request target is refused with 422', async () => {
    const api = apiClient(svc, (await svc.newPractice()).key);
    const idem = uniqueKey();
    const body = patientBody();
    assertFresh(await api('POST', '/patients', { body, idempotencyKey: idem }));
    const otherBody = await api('POST', '/patients', {
      body: { ...body, lastName: 'Other' },
      idempotencyKey: idem,
    });
    refusedWith(otherBody, 422, 'idempotency_key_reused', undefined, SAME_REQUEST);
    const otherTarget = await api('POST', '/patients?via=retry', { body, idempotencyKey: idem });
    refusedWith(otherTarget, 422, 'idempotency_key_reused', undefined, SAME_REQUEST);
  });

  test('key order and white space of the body do not change the fingerprint', async () => {
    const api = apiClient(svc, (await svc.newPractice()).key);
    const idem = uniqueKey();
    const body = patientBody();
    const first = await api('POST', '/patients', { body, idempotencyKey: idem });
    assertFresh(first);
    const reordered = Object.fromEntries(Object.entries(body).reverse());
    const replay = await api('POST', '/patients', {
      rawBody: `\n  ${JSON.stringify(reordered, null, 4)}  \n`,
      idempotencyKey: idem,
    });
    assert.equal(replay.status, 201, replay.text);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(replay.body, first.body);
  });

  test('keys are scoped to the client: another client of the practice gets its own record', async () => {
    const practice = await svc.newPractice();
    const client = await svc.admin('POST', `/practices/${practice.practiceId}/clients`, {
      name: 'Second client',
      permissions: ['PATIENTS:CREATE', 'PATIENTS:READ'],
    });
    const key2 = await svc.admin('POST', `/clients/${client.body.id}/keys`, {});
    const idem = uniqueKey();
    const a = await apiClient(svc, practice.key)('POST', '/patients', {
      body: patientBody(),
      idempotencyKey: idem,
    });
    assertFresh(a);
    const b = await apiClient(svc, key2.body.key)('POST', '/patients', {
      body: patientBody({ lastName: 'Nkosi' }),
      idempotencyKey: idem,
    });
    assertFresh(b);
    assert.notEqual(b.body.id, a.body.id);
    assert.equal(b.body.lastName, 'Nkosi');
  });

  test('refusals decided after the work ran are stored and replayed with a fresh requestId', async () => {
    const { key } = await svc.newPractice();
    const api = apiClient(svc, key);
    const existing = await api('POST', '/patients', { body: patientBody(), idempotencyKey: uniqueKey() });
    assertFresh(existing);
    const idem = uniqueKey();
    const dup = patientBody({ lastName: 'Other', externalId: existing.body.externalId });
    const first = await api('POST', '/patients', { body: dup, idempotencyKey: idem });
    refusedWith(first, 409, 'duplicate', undefined, SAME_REQUEST);
    assert.match(first.body.detail, new RegExp(existing.body.id));
    const replay = await api('POST', '/patients', { body: dup, idempotencyKey: idem });
    refusedWith(replay, 409, 'duplicate', undefined, SAME_REQUEST);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal(replay.body.detail, first.body.detail);
    assert.notEqual(replay.body.requestId, first.body.requestId);

    // A 422 from the service's own rules (birth date in the future) stays the answer for this key
    // even once the same body would be accepted: the stored answer is replayed, the work not rerun.
    const future = patientBody({ birthDate: dayFromNow(svc, 2) });
    const key422 = uniqueKey();
    const refused = await api('POST', '/patients', { body: future, idempotencyKey: key422 });
    refusedWith(refused, 422, 'validation_failed', undefined, SAME_REQUEST);
    svc.clock.advance(3 * 86_400_000);
    const replayed = await api('POST', '/patients', { body: future, idempotencyKey: key422 });
    refusedWith(replayed, 422, 'validation_failed', undefined, SAME_REQUEST);
    assert.equal(replayed.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(replayed.body.errors, refused.body.errors);
    assert.notEqual(replayed.body.requestId, refused.body.requestId);
    assert.deepEqual(await patientsWith(key, future.externalId), []);
  });

  test('answers given before the work ran are not stored: a retry runs afresh', async () => {
    const practice = await svc.newPractice();
    const api = apiClient(svc, practice.key);
    const good = patientBody();

    const k401 = uniqueKey();
    await svc.admin('POST', `/clients/${practice.clientId}/suspend`);
    refusedWith(
      await api('POST', '/patients', { body: good, idempotencyKey: k401 }),
      401,
      'unauthenticated',
      undefined,
      SAME_REQUEST,
    );
    await svc.admin('POST', `/clients/${practice.clientId}/resume`);
    assertFresh(await api('POST', '/patients', { body: good, idempotencyKey: k401 }));

    const k415 = uniqueKey();
    const as415 = await api('POST', '/patients', {
      rawBody: JSON.stringify(patientBody()),
      headers: { 'content-type': 'text/plain' },
      idempotencyKey: k415,
    });
    refusedWith(as415, 415, 'unsupported_media_type', undefined, SAME_REQUEST);
    assertFresh(await api('POST', '/patients', { body: patientBody(), idempotencyKey: k415 }));

    const k413 = uniqueKey();
    const huge = await api('POST', '/patients', {
      body: { ...patientBody(), prefix: 'x'.repeat(300 * 1024) },
      idempotencyKey: k413,
    });
    refusedWith(huge, 413, 'payload_too_large', undefined, SAME_REQUEST);
    assertFresh(await api('POST', '/patients', { body: patientBody(), idempotencyKey: k413 }));

    const k422 = uniqueKey();
    const invalid = await api('POST', '/patients', {
      body: { ...patientBody(), lastName: undefined, givenNames: [] },
      idempotencyKey: k422,
    });
    refusedWith(invalid, 422, 'validation_failed', undefined, SAME_REQUEST);
    assertFresh(await api('POST', '/patients', { body: patientBody(), idempotencyKey: k422 }));

    const k503 = uniqueKey();
    const body503 = patientBody();
    fault = (entry) => {
      if (entry.idempotencyKey === k503) throw new Error('audit log down');
    };
    try {
      const down = await api('POST', '/patients', { body: body503, idempotencyKey: k503 });
      refusedWith(down, 503, 'service_unavailable', undefined, SAME_REQUEST);
      assert.ok(down.headers.get('retry-after'));
    } finally {
      fault = undefined;
    }
    const retried = await api('POST', '/patients', { body: body503, idempotencyKey: k503 });
    assertFresh(retried);
    assert.deepEqual(
      (await patientsWith(practice.key, body503.externalId)).map((p) => p.id),
      [retried.body.id],
    );
  });

  test('an expired key is treated as new', async () => {
    const api = apiClient(svc, (await svc.newPractice()).key);
    const idem = uniqueKey();
    const first = await api('POST', '/patients', { body: patientBody(), idempotencyKey: idem });
    assertFresh(first);
    await asSuperuser(svc, async (db) => {
      const updated = await sql`UPDATE idempotency_keys SET expires_at = now() - interval '1 minute'
          WHERE key = ${idem}`.execute(db.kysely);
      assert.equal(updated.numAffectedRows, 1n);
    });
    const second = await api('POST', '/patients', { body: patientBody(), idempotencyKey: idem });
    assertFresh(second);
    assert.notEqual(second.body.id, first.body.id);
  });

  test('a key held by a transaction elsewhere answers 409 at once; once that transaction ends, the retry runs', {
    skip: backend === 'pglite' ? 'one connection: the in-process register answers instead' : false,
  }, async () => {
    const practice = await svc.newPractice();
    const api = apiClient(svc, practice.key);
    const idem = uniqueKey();
    const body = patientBody();
    const holder = openPostgres({ url: svc.databaseUrl!, poolSize: 1, statementTimeoutMs: 15_000 });
    try {
      const clientId = await sql<{ client_id: string }>`
          SELECT client_id FROM api_keys WHERE practice_id = ${practice.practiceId} LIMIT 1`.execute(
        holder.kysely,
      );
      const name = `idempotency:${practice.practiceId}:${clientId.rows[0]!.client_id}:${idem}`;
      let release!: () => void;
      const released = new Promise<void>((r) => {
        release = r;
      });
      let locked!: () => void;
      const isLocked = new Promise<void>((r) => {
        locked = r;
      });
      const holding = holder.kysely.transaction().execute(async (trx) => {
        await sql`SELECT pg_advisory_xact_lock(${advisoryLockKey(name)}::bigint)`.execute(trx);
        locked();
        await released;
      });
      await isLocked;
      const { answer, waited } = await watchingLockWaits(
        svc,
        () => api('POST', '/patients', { body, idempotencyKey: idem }),
        release,
      );
      refusedWith(answer, 409, 'conflict', undefined, SAME_REQUEST);
      assert.equal(waited, false, 'answered without waiting for the holder');
      release();
      await holding;
      const retried = await api('POST', '/patients', { body, idempotencyKey: idem });
      assertFresh(retried);
      const replay = await api('POST', '/patients', { body, idempotencyKey: idem });
      assert.equal(replay.headers.get('idempotent-replayed'), 'true');
      assert.deepEqual(replay.body, retried.body);
      assert.deepEqual(
        (await patientsWith(practice.key, body.externalId)).map((p) => p.id),
        [retried.body.id],
      );
    } finally {
      await holder.close();
    }
  });
});
