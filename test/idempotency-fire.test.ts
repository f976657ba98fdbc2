// Idempotency-Key under fire across processes: two `practice-billing serve` processes on one
// PostgreSQL database take rounds of identical parallel creates under one key, split between them;
// each round makes exactly one patient and every other answer is a faithful replay or 409 conflict.
// And answers given before the work ran (401, 413, 415, 429) are never stored: a retry with the same
// key after fixing the cause runs afresh. Needs DATABASE_URL. ROUNDS and PARALLEL are overridable.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { PERMISSIONS } from '../src/auth/permissions.ts';
import {
  type RemotePractice,
  remotePractice,
  type ServeProcess,
  startServeProcess,
} from './child-service.ts';
import { type Answer, call, patientBody, startService, type TestService, uniqueKey } from './harness.ts';

const ROUNDS = Number(process.env.IDEMPOTENCY_FIRE_ROUNDS ?? 100);
const PARALLEL = Number(process.env.IDEMPOTENCY_FIRE_PARALLEL ?? 50);

describe('idempotency under fire: two serve processes on one PostgreSQL', {
  skip: !process.env.DATABASE_URL && 'needs DATABASE_URL',
}, () => {
  let svc: TestService;
  let a: ServeProcess | undefined;
  let b: ServeProcess | undefined;
  let practice: RemotePractice;

  before(async () => {
    // The in-process service only makes the fresh, migrated database; the API runs in the children.
    svc = await startService('postgres');
    const env = { RATE_LIMIT_PER_MINUTE: '1000000', DATABASE_POOL_SIZE: '10' };
    [a, b] = await Promise.all([
      startServeProcess({ databaseUrl: svc.databaseUrl!, env }),
      startServeProcess({ databaseUrl: svc.databaseUrl!, env }),
    ]);
    practice = await remotePractice(a.baseUrl, a.adminToken);
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await svc?.close();
  });

  const post = (
    base: string,
    key: string,
    idem: string,
    options: { body?: unknown; rawBody?: string; headers?: Record<string, string> },
  ) => call(base, 'POST', '/api/v1/patients', { token: key, idempotencyKey: idem, ...options });

  function assertFresh(answer: Answer, what: string): void {
    assert.equal(answer.status, 201, `${what}: ${answer.text}`);
    assert.equal(answer.headers.get('idempotent-replayed'), null, `${what}: a fresh run, not a replay`);
  }

  test(`${ROUNDS} rounds of ${PARALLEL} parallel creates with one key across two processes make one patient each`, async () => {
    const values: string[] = [];
    let replays = 0;
    let conflicts = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const body = patientBody();
      const idem = uniqueKey();
      values.push(body.externalId.value);
      const answers = await Promise.all(
        Array.from({ length: PARALLEL }, (_, i) =>
          post(i % 2 === 0 ? a!.baseUrl : b!.baseUrl, practice.key, idem, { body }),
        ),
      );
      for (const answer of answers) {
        assert.ok(answer.status < 500, `round ${round}: ${answer.status} ${answer.text}`);
        assert.ok(
          answer.status === 201 || answer.status === 409,
          `round ${round}: ${answer.status} ${answer.text}`,
        );
        if (answer.status === 409) {
          assert.equal(answer.body.code, 'conflict', answer.text);
          assert.equal(answer.body.requestId, answer.headers.get('x-request-id'));
          conflicts++;
        }
      }
      const created = answers.filter((x) => x.status === 201);
      const originals = created.filter((x) => x.headers.get('idempotent-replayed') !== 'true');
      assert.equal(originals.length, 1, `round ${round}: ${originals.length} requests did the work`);
      const original = originals[0]!;
      for (const replay of created.filter((x) => x !== original)) {
        assert.equal(replay.headers.get('idempotent-replayed'), 'true');
        assert.equal(replay.text, original.text, `round ${round}: a replay differs from the original`);
        assert.equal(replay.headers.get('location'), original.headers.get('location'));
        replays++;
      }
      const found = await call(
        b!.baseUrl,
        'GET',
        `/api/v1/patients?externalSystem=${encodeURIComponent(body.externalId.system)}&externalId=${body.externalId.value}`,
        { token: practice.key },
      );
      assert.equal(found.status, 200, found.text);
      assert.deepEqual(
        found.body.data.map((p: { id: string }) => p.id),
        [original.body.id],
        `round ${round}: the API lists one patient`,
      );
    }
    const rows = await svc.db.kysely
      .selectFrom('patients')
      .select(['external_value'])
      .where('practice_id', '=', practice.practiceId)
      .execute();
    const counts = new Map<string, number>();
    for (const row of rows) counts.set(row.external_value!, (counts.get(row.external_value!) ?? 0) + 1);
    assert.equal(rows.length, ROUNDS, 'one patient per round in SQL');
    for (const value of values) assert.equal(counts.get(value), 1, `patients with external id ${value}`);
    const held = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM pg_locks
      WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`.execute(
      svc.db.kysely,
    );
    assert.equal(held.rows[0]!.n, 0, 'no key left held');
    process.stdout.write(`# ${ROUNDS} rounds: ${replays} replays, ${conflicts} conflicts, no 5xx\n`);
  });

  test('answers given before the work ran (401, 413, 415, 429) are not replayed: the retry creates the record', async () => {
    const admin = (method: string, p: string, body?: unknown) =>
      call(a!.baseUrl, method, `/admin/v1${p}`, {
        token: a!.adminToken,
        ...(body !== undefined ? { body } : {}),
      });
    const p = await remotePractice(a!.baseUrl, a!.adminToken);
    const patients = async (value: string) => {
      const found = await call(
        a!.baseUrl,
        'GET',
        `/api/v1/patients?externalSystem=urn%3Atest%3Amrn&externalId=${value}`,
        {
          token: p.key,
        },
      );
      assert.equal(found.status, 200, found.text);
      return found.body.data as Array<{ id: string }>;
    };

    // 401: the client is suspended; resumed, the same key runs afresh (on both processes' view).
    const k401 = uniqueKey();
    const body401 = patientBody();
    assert.equal((await admin('POST', `/clients/${p.clientId}/suspend`)).status, 200);
    const refused401 = await post(a!.baseUrl, p.key, k401, { body: body401 });
    assert.equal(refused401.status, 401, refused401.text);
    assert.equal(refused401.body.code, 'unauthenticated');
    assert.equal((await admin('POST', `/clients/${p.clientId}/resume`)).status, 200);
    const after401 = await post(b!.baseUrl, p.key, k401, { body: body401 });
    assertFresh(after401, '401 retry');
    assert.deepEqual(
      (await patients(body401.externalId.value)).map((x) => x.id),
      [after401.body.id],
    );

    // 413: the body was too large; the retry with a proper body under the same key creates.
    const k413 = uniqueKey();
    const body413 = patientBody();
    const refused413 = await post(a!.baseUrl, p.key, k413, {
      body: { ...body413, prefix: 'x'.repeat(300 * 1024) },
    });
    assert.equal(refused413.status, 413, refused413.text);
    assert.equal(refused413.body.code, 'payload_too_large');
    const after413 = await post(a!.baseUrl, p.key, k413, { body: body413 });
    assertFresh(after413, '413 retry');
    assert.deepEqual(
      (await patients(body413.externalId.value)).map((x) => x.id),
      [after413.body.id],
    );

    // 415: the same JSON sent as text/plain; resent as JSON under the same key it creates.
    const k415 = uniqueKey();
    const body415 = patientBody();
    const refused415 = await post(a!.baseUrl, p.key, k415, {
      rawBody: JSON.stringify(body415),
      headers: { 'content-type': 'text/plain' },
    });
    assert.equal(refused415.status, 415, refused415.text);
    assert.equal(refused415.body.code, 'unsupported_media_type');
    const after415 = await post(a!.baseUrl, p.key, k415, { body: body415 });
    assertFresh(after415, '415 retry');
    assert.deepEqual(
      (await patients(body415.externalId.value)).map((x) => x.id),
      [after415.body.id],
    );

    // 429: a client allowed one request a minute spends it; the create is refused. Its allowance
    // raised, the retry on the same process with the same key creates.
    const limited = await admin('POST', `/practices/${p.practiceId}/clients`, {
      name: 'Limited',
      permissions: [...PERMISSIONS],
      rateLimitPerMinute: 1,
    });
    assert.equal(limited.status, 201, limited.text);
    const limitedKey = await admin('POST', `/clients/${limited.body.id}/keys`, {});
    const spend = await call(a!.baseUrl, 'GET', `/api/v1/patients/${after401.body.id}`, {
      token: limitedKey.body.key,
    });
    assert.equal(spend.status, 200, spend.text);
    const k429 = uniqueKey();
    const body429 = patientBody();
    const refused429 = await post(a!.baseUrl, limitedKey.body.key, k429, { body: body429 });
    assert.equal(refused429.status, 429, refused429.text);
    assert.equal(refused429.body.code, 'rate_limited');
    const raised = await admin('PUT', `/clients/${limited.body.id}`, {
      name: 'Limited',
      permissions: [...PERMISSIONS],
      rateLimitPerMinute: 1000,
    });
    assert.equal(raised.status, 200, raised.text);
    const after429 = await post(a!.baseUrl, limitedKey.body.key, k429, { body: body429 });
    assertFresh(after429, '429 retry');
    assert.deepEqual(
      (await patients(body429.externalId.value)).map((x) => x.id),
      [after429.body.id],
    );

    // Each record made by a retry now replays, from the other process.
    for (const [idem, body, first, key] of [
      [k401, body401, after401, p.key],
      [k413, body413, after413, p.key],
      [k415, body415, after415, p.key],
      [k429, body429, after429, limitedKey.body.key as string],
    ] as const) {
      const again = await post(b!.baseUrl, key, idem, { body });
      assert.equal(again.status, 201, again.text);
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.equal(again.text, first.text);
    }
  });
});
