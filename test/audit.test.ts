// The practice audit log seen from outside: one row per request that reaches a practice (reads,
// refusals and replays included), a withheld result (503) when the row cannot be written, rows that
// the service roles cannot change, and the admin API's paging of the log.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { APP_ROLE, OPERATOR_ROLE } from '../migrations/security.ts';
import type { AuditEntry } from '../src/platform/audit-log.ts';
import { type Database, openPostgres } from '../src/platform/db/database.ts';
import {
  type Answer,
  apiClient,
  describeEachBackend,
  patientBody,
  startService,
  type TestService,
  uniqueKey,
} from './harness.ts';

type Fault = (entry: AuditEntry) => Promise<void> | void;

interface AuditEvent {
  id: string;
  actor: string;
  clientId: string | null;
  keyId: string | null;
  performerId: string | null;
  method: string;
  route: string;
  status: number;
  outcome: string;
  reason: string | null;
  resourceType: string | null;
  resourceId: string | null;
  patientId: string | null;
  requestId: string;
  idempotencyKey: string | null;
}

describeEachBackend('audit', (backend) => {
  let svc: TestService;
  let fault: Fault | undefined;
  before(async () => {
    svc = await startService(backend, { auditFault: (entry) => fault?.(entry) });
  });
  after(async () => {
    await svc.close();
  });

  /** The whole log of a practice, newest first, read page by page. */
  async function auditLog(practiceId: string, limit = 100): Promise<AuditEvent[]> {
    const events: AuditEvent[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 100; page++) {
      const query: string = `limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const answer = await svc.admin('GET', `/practices/${practiceId}/audit-events?${query}`);
      assert.equal(answer.status, 200, answer.text);
      events.push(...answer.body.data);
      if (!answer.body.hasMore) {
        assert.equal(answer.body.nextCursor, null);
        return events;
      }
      cursor = answer.body.nextCursor;
    }
    throw new Error('the audit log did not end');
  }

  function onlyRowFor(events: AuditEvent[], answer: Answer): AuditEvent {
    const requestId = answer.headers.get('x-request-id');
    assert.ok(requestId);
    const rows = events.filter((e) => e.requestId === requestId);
    assert.equal(rows.length, 1, `audit rows for ${answer.status} ${answer.text}`);
    return rows[0]!;
  }

  async function externalIdCount(key: string, ext: { system: string; value: string }): Promise<number> {
    const found = await apiClient(svc, key)(
      'GET',
      `/patients?externalSystem=${encodeURIComponent(ext.system)}&externalId=${encodeURIComponent(ext.value)}`,
    );
    assert.equal(found.status, 200, found.text);
    return found.body.data.length;
  }

  test('every request that reaches the practice writes exactly one audit row', async () => {
    const practice = await svc.newPractice();
    const api = apiClient(svc, practice.key);
    const readOnly = await svc.admin('POST', `/practices/${practice.practiceId}/clients`, {
      name: 'Read only',
      permissions: ['PATIENTS:READ'],
    });
    const readOnlyKey = await svc.admin('POST', `/clients/${readOnly.body.id}/keys`, {});
    const idem = uniqueKey();
    const body = patientBody();
    const created = await api('POST', '/patients', {
      body,
      idempotencyKey: idem,
      headers: { 'x-service-performer': practice.practitionerId },
    });
    assert.equal(created.status, 201, created.text);
    const patientId = created.body.id as string;
    const read = await api('GET', `/patients/${patientId}`);
    assert.equal(read.status, 200);
    const missing = await api('GET', `/patients/pat_${randomBytes(12).toString('hex')}`);
    assert.equal(missing.status, 404);
    const forbidden = await apiClient(svc, readOnlyKey.body.key)('POST', '/patients', {
      body: patientBody(),
      idempotencyKey: uniqueKey(),
    });
    assert.equal(forbidden.status, 403);
    const invalid = await api('POST', '/patients', {
      body: { ...patientBody(), birthDate: '2023-02-29' },
      idempotencyKey: uniqueKey(),
    });
    assert.equal(invalid.status, 422);
    const replay = await api('POST', '/patients', { body, idempotencyKey: idem });
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    await svc.admin('POST', `/keys/${readOnlyKey.body.id}/revoke`);
    const revoked = await apiClient(svc, readOnlyKey.body.key)('GET', `/patients/${patientId}`);
    assert.equal(revoked.status, 401);

    // The revoked key's refusal is recorded just after its answer was sent.
    let events = await auditLog(practice.practiceId);
    for (let i = 0; i < 60 && !events.some((e) => e.requestId === revoked.headers.get('x-request-id')); i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      events = await auditLog(practice.practiceId);
    }
    const clientRows = events.filter((e) => e.actor === 'client');
    assert.equal(clientRows.length, 7, 'one row per API request, no more');

    const c = onlyRowFor(events, created);
    assert.equal(c.method, 'POST');
    assert.equal(c.status, 201);
    assert.equal(c.outcome, 'succeeded');
    assert.equal(c.resourceType, 'patient');
    assert.equal(c.resourceId, patientId);
    assert.equal(c.patientId, patientId);
    assert.equal(c.idempotencyKey, idem);
    assert.equal(c.performerId, practice.practitionerId);
    assert.equal(c.clientId, practice.clientId);
    assert.equal(c.keyId, practice.keyId);

    const r = onlyRowFor(events, read);
    assert.equal(r.method, 'GET');
    assert.equal(r.status, 200);
    assert.equal(r.outcome, 'succeeded');
    assert.equal(r.patientId, patientId);
    assert.equal(r.idempotencyKey, null);

    const m = onlyRowFor(events, missing);
    assert.equal(m.status, 404);
    assert.equal(m.outcome, 'refused');
    assert.equal(m.reason, 'not_found');
    assert.equal(m.patientId, null);

    const f = onlyRowFor(events, forbidden);
    assert.equal(f.status, 403);
    assert.equal(f.reason, 'forbidden');
    assert.equal(f.clientId, readOnly.body.id);

    const v = onlyRowFor(events, invalid);
    assert.equal(v.status, 422);
    assert.equal(v.reason, 'validation_failed');

    const p = onlyRowFor(events, replay);
    assert.equal(p.status, 201);
    assert.equal(p.outcome, 'replayed');
    assert.equal(p.idempotencyKey, idem);
    assert.equal(p.resourceType, 'patient');

    const u = onlyRowFor(events, revoked);
    assert.equal(u.status, 401);
    assert.equal(u.outcome, 'refused');
    assert.equal(u.reason, 'revoked_key');
    assert.equal(u.keyId, readOnlyKey.body.id);
  });

  test('a request whose audit row cannot be written answers 503 and leaves nothing behind', async () => {
    const practice = await svc.newPractice();
    const api = apiClient(svc, practice.key);
    const body = patientBody();
    const existing = await api('POST', '/patients', { body: patientBody(), idempotencyKey: uniqueKey() });
    assert.equal(existing.status, 201);
    const readOnly = await svc.admin('POST', `/practices/${practice.practiceId}/clients`, {
      name: 'Read only',
      permissions: ['PATIENTS:READ'],
    });
    const readOnlyKey = await svc.admin('POST', `/clients/${readOnly.body.id}/keys`, {});
    fault = (entry) => {
      if (entry.actor === 'client') throw new Error('audit log down');
    };
    let answers: Answer[];
    try {
      answers = [
        await api('POST', '/patients', { body, idempotencyKey: uniqueKey() }),
        await api('GET', `/patients/${existing.body.id}`),
        await apiClient(svc, readOnlyKey.body.key)('POST', '/patients', {
          body: patientBody(),
          idempotencyKey: uniqueKey(),
        }),
      ];
    } finally {
      fault = undefined;
    }
    for (const answer of answers) {
      assert.equal(answer.status, 503, answer.text);
      assert.equal(answer.body.code, 'service_unavailable');
      assert.equal(answer.body.requestId, answer.headers.get('x-request-id'));
      assert.match(answer.headers.get('retry-after') ?? '', /^[1-9][0-9]*$/);
      assert.equal(answer.headers.get('location'), null);
      assert.ok(!answer.text.includes(existing.body.lastName), 'the withheld result is not sent');
    }
    assert.equal(await externalIdCount(practice.key, body.externalId), 0, 'no patient was created');
    const events = await auditLog(practice.practiceId);
    for (const answer of answers) {
      assert.ok(!events.some((e) => e.requestId === answer.headers.get('x-request-id')));
    }
  });

  test('audit rows cannot be changed or deleted by the service roles', async () => {
    const practice = await svc.newPractice();
    const api = apiClient(svc, practice.key);
    const created = await api('POST', '/patients', { body: patientBody(), idempotencyKey: uniqueKey() });
    assert.equal(created.status, 201);
    const before = await auditLog(practice.practiceId);
    const owner: Database =
      svc.backend === 'pglite'
        ? svc.db
        : openPostgres({ url: svc.databaseUrl!, poolSize: 1, statementTimeoutMs: 15_000 });
    try {
      for (const role of [APP_ROLE, OPERATOR_ROLE]) {
        for (const statement of [
          sql`UPDATE audit_events SET status = 299, reason = 'tampered' WHERE practice_id = ${practice.practiceId}`,
          sql`DELETE FROM audit_events WHERE practice_id = ${practice.practiceId}`,
        ]) {
          await assert.rejects(
            owner.kysely.transaction().execute(async (trx) => {
              await sql`SELECT set_config('role', ${role}, true), set_config('app.practice_id', ${practice.practiceId}, true)`.execute(
                trx,
              );
              const visible = await sql<{ n: number }>`SELECT count(*)::int AS n FROM audit_events`.execute(
                trx,
              );
              assert.ok(visible.rows[0]!.n > 0, `${role} sees the practice's rows`);
              await statement.execute(trx);
            }),
            /permission denied|append-only/,
            `${role} must not change audit rows`,
          );
        }
      }
    } finally {
      if (owner !== svc.db) await owner.close();
    }
    assert.deepEqual(await auditLog(practice.practiceId), before);
  });

  test('the log pages newest first and refuses cursors it did not issue for this practice', async () => {
    const a = await svc.newPractice();
    const b = await svc.newPractice();
    const api = apiClient(svc, a.key);
    for (let i = 0; i < 5; i++) assert.equal((await api('GET', `/patients/pat_missing${i}`)).status, 404);
    const whole = await auditLog(a.practiceId);
    const paged = await auditLog(a.practiceId, 2);
    assert.ok(whole.length >= 9, `practice setup and 5 reads are logged, got ${whole.length}`);
    assert.deepEqual(paged, whole);
    const ids = whole.map((e) => BigInt(e.id));
    assert.deepEqual(
      ids,
      [...ids].sort((x, y) => (x > y ? -1 : x < y ? 1 : 0)),
      'newest first',
    );

    const first = await svc.admin('GET', `/practices/${a.practiceId}/audit-events?limit=2`);
    assert.equal(first.body.hasMore, true);
    const cursor = first.body.nextCursor as string;
    for (const bad of ['not-a-cursor', `${cursor}x`, Buffer.from('[1]').toString('base64url')]) {
      const answer = await svc.admin(
        'GET',
        `/practices/${a.practiceId}/audit-events?cursor=${encodeURIComponent(bad)}`,
      );
      assert.equal(answer.status, 400, answer.text);
      assert.equal(answer.body.code, 'invalid_cursor');
    }
    const elsewhere = await svc.admin(
      'GET',
      `/practices/${b.practiceId}/audit-events?cursor=${encodeURIComponent(cursor)}`,
    );
    assert.equal(elsewhere.status, 400, elsewhere.text);
    assert.equal(elsewhere.body.code, 'invalid_cursor');
  });
});
