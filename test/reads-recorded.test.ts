// The patient reads answered by one statement (GET a patient, find by externalId): the statement that
// reads also writes the request's audit row from what it found, and on PostgreSQL the transaction's
// frame, that statement and its COMMIT leave together: one round trip and one transaction a read,
// counted by the service's own counters (src/platform/db/statement-counts.ts).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { statementCounts } from '../src/platform/db/statement-counts.ts';
import {
  type Answer,
  apiClient,
  describeEachBackend,
  patientBody,
  startService,
  type TestService,
  uniqueKey,
} from './harness.ts';
import { countsSince } from './support/statement-counts.ts';

interface AuditRow {
  requestId: string;
  method: string;
  route: string;
  status: number;
  outcome: string;
  reason: string | null;
  resourceType: string | null;
  resourceId: string | null;
  patientId: string | null;
  performerId: string | null;
}

describeEachBackend('reads that record themselves', (backend) => {
  let svc: TestService;
  before(async () => {
    // No heartbeat and no key refresh among the counted reads: they are the process's, not the reads'.
    svc = await startService(backend, {
      env: { DATABASE_LISTEN_HEARTBEAT_MS: '60000', API_KEY_CACHE_SECONDS: '3600' },
    });
  });
  after(async () => {
    await svc.close();
  });

  async function rowOf(practiceId: string, answer: Answer): Promise<AuditRow> {
    const log = await svc.admin('GET', `/practices/${practiceId}/audit-events?limit=100`);
    assert.equal(log.status, 200, log.text);
    const rows = (log.body.data as AuditRow[]).filter(
      (row) => row.requestId === answer.headers.get('x-request-id'),
    );
    assert.equal(rows.length, 1, `one audit row for ${answer.status} ${answer.text}`);
    return rows[0]!;
  }

  const findPath = (ext: { system: string; value: string }) =>
    `/patients?externalSystem=${encodeURIComponent(ext.system)}&externalId=${encodeURIComponent(ext.value)}`;

  test('each read writes one audit row saying what it found, the patient named when one was found', async () => {
    const practice = await svc.newPractice();
    const api = apiClient(svc, practice.key);
    const body = patientBody();
    const created = await api('POST', '/patients', { body, idempotencyKey: uniqueKey() });
    assert.equal(created.status, 201, created.text);
    const patientId = created.body.id as string;
    const missingId = 'pat_0000000000000000000000000';

    const read = await api('GET', `/patients/${patientId}`, {
      headers: { 'x-service-performer': practice.practitionerId },
    });
    assert.equal(read.status, 200, read.text);
    assert.equal(read.body.id, patientId);
    const missing = await api('GET', `/patients/${missingId}`);
    assert.equal(missing.status, 404, missing.text);
    assert.equal(missing.body.code, 'not_found');
    const found = await api('GET', findPath(body.externalId));
    assert.equal(found.status, 200, found.text);
    assert.deepEqual(
      found.body.data.map((p: { id: string }) => p.id),
      [patientId],
    );
    const none = await api('GET', findPath({ system: body.externalId.system, value: 'no-such-number' }));
    assert.equal(none.status, 200, none.text);
    assert.deepEqual(none.body.data, []);

    const common = { resourceType: 'patient', reason: null };
    assert.deepEqual(pick(await rowOf(practice.practiceId, read)), {
      ...common,
      method: 'GET',
      route: '/api/v1/patients/:patientId',
      status: 200,
      outcome: 'succeeded',
      resourceId: patientId,
      patientId,
      performerId: practice.practitionerId,
    });
    assert.deepEqual(pick(await rowOf(practice.practiceId, missing)), {
      ...common,
      method: 'GET',
      route: '/api/v1/patients/:patientId',
      status: 404,
      outcome: 'refused',
      reason: 'not_found',
      resourceId: missingId,
      patientId: null,
      performerId: null,
    });
    assert.deepEqual(pick(await rowOf(practice.practiceId, found)), {
      ...common,
      method: 'GET',
      route: '/api/v1/patients',
      status: 200,
      outcome: 'succeeded',
      resourceId: patientId,
      patientId,
      performerId: null,
    });
    assert.deepEqual(pick(await rowOf(practice.practiceId, none)), {
      ...common,
      method: 'GET',
      route: '/api/v1/patients',
      status: 200,
      outcome: 'succeeded',
      resourceId: null,
      patientId: null,
      performerId: null,
    });
  });

  test('a read, its audit row and its COMMIT take one round trip and one transaction', {
    skip: backend === 'pglite' ? 'PGlite runs in process: there is no round trip to save' : false,
  }, async () => {
    const practice = await svc.newPractice();
    const api = apiClient(svc, practice.key);
    const body = patientBody();
    const created = await api('POST', '/patients', { body, idempotencyKey: uniqueKey() });
    assert.equal(created.status, 201, created.text);
    // The key is remembered once used: the counted reads authenticate without the database.
    assert.equal((await api('GET', `/patients/${created.body.id}`)).status, 200);

    for (const [what, path, status] of [
      ['a patient by id', `/patients/${created.body.id}`, 200],
      ['no such patient', '/patients/pat_0000000000000000000000000', 404],
      ['a patient by externalId', findPath(body.externalId), 200],
    ] as const) {
      const before = statementCounts();
      for (let i = 0; i < 5; i++) assert.equal((await api('GET', path)).status, status);
      assert.deepEqual(countsSince(before), { statements: 10, roundTrips: 5, transactions: 5 }, what);
    }
  });
});

function pick(row: AuditRow) {
  const { method, route, status, outcome, reason, resourceType, resourceId, patientId, performerId } = row;
  return { method, route, status, outcome, reason, resourceType, resourceId, patientId, performerId };
}
