// Several processes on one database: two `practice-billing serve` and two `practice-billing worker`
// processes, with visits billed, issued and claimed through both APIs in turn. Nothing is lost or done
// twice: every job ran once, each practice's invoice numbers have no gap, every event reached its
// practice's webhook receiver exactly once, one Idempotency-Key sent to both APIs at the same moment
// makes one record, and a key revoked through one API is refused by the other within the documented
// bound (docs/scale-out.md, "The LISTEN connection"). Run on one PostgreSQL database
// (test/resilience/scale-out.test.ts) and on a Citus cluster (test/citus.test.ts).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import {
  type RemotePractice,
  remotePractice,
  type ServeProcess,
  startServeProcess,
  startWorkerProcess,
  type WorkerProcess,
} from '../child-service.ts';
import { call } from '../harness.ts';
import { Receiver, sleep } from '../webhooks-fixtures.ts';

/** Visits billed, issued and claimed, spread over both APIs and both practices. */
const VISITS = 40;
/** A heartbeat period plus two (docs/scale-out.md): the longest a revoked key may still be served. */
const REVOCATION_BOUND_MS = 6_000;
const PLAN_ID = 'pln_ubuntu_essential';

export function scaleOutSuite(
  title: string,
  options: { skip: string | false; database: () => Promise<{ url: string; drop: () => Promise<void> }> },
): void {
  describe(title, { skip: options.skip, timeout: 120_000 }, () => {
    let database: { url: string; drop: () => Promise<void> };
    const apis: ServeProcess[] = [];
    const workers: WorkerProcess[] = [];
    const receivers: Receiver[] = [];
    let admin: pg.Client;
    const env = {
      SECRET_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
      WEBHOOK_ALLOW_PRIVATE: 'true',
      API_KEY_CACHE_SECONDS: '600',
      REMITTANCE_DELAY_MS: '0',
    };

    before(async () => {
      database = await options.database();
      for (let i = 0; i < 2; i++) apis.push(await startServeProcess({ databaseUrl: database.url, env }));
      for (let i = 0; i < 2; i++) workers.push(startWorkerProcess({ databaseUrl: database.url, env }));
      admin = new pg.Client({ connectionString: database.url });
      await admin.connect();
    });
    after(async () => {
      await Promise.all([...apis, ...workers].map((p) => p.stop()));
      await Promise.all(receivers.map((r) => r.close()));
      await admin?.end();
      await database?.drop();
    });

    const api = (
      n: number,
      practice: RemotePractice,
      method: string,
      path: string,
      body?: unknown,
      key?: string,
    ) =>
      call(apis[n % 2]!.baseUrl, method, `/api/v1${path}`, {
        token: practice.key,
        idempotencyKey: key ?? `k-${randomBytes(8).toString('hex')}`,
        ...(body !== undefined ? { body } : {}),
      });

    async function practiceWithReceiver(): Promise<{ practice: RemotePractice; receiver: Receiver }> {
      const practice = await remotePractice(apis[0]!.baseUrl, apis[0]!.adminToken);
      const receiver = await Receiver.start();
      receivers.push(receiver);
      const endpoint = await call(
        apis[1]!.baseUrl,
        'POST',
        `/admin/v1/practices/${practice.practiceId}/webhook-endpoints`,
        { token: apis[1]!.adminToken, body: { url: receiver.url() } },
      );
      assert.equal(endpoint.status, 201, endpoint.text);
      receiver.secret = endpoint.body.secret;
      return { practice, receiver };
    }

    /** A visit billed with issue and submitClaim, its four requests alternating between the APIs. */
    async function billedVisit(n: number, practice: RemotePractice): Promise<string> {
      const patient = await api(n, practice, 'POST', '/patients', {
        givenNames: ['Thandi'],
        lastName: 'Mokoena',
        birthDate: '1985-06-01',
        externalId: { system: 'urn:test:mrn', value: `scale-${n}-${randomBytes(4).toString('hex')}` },
      });
      assert.equal(patient.status, 201, patient.text);
      const coverage = await api(n + 1, practice, 'POST', `/patients/${patient.body.id}/coverages`, {
        planId: PLAN_ID,
        memberNumber: `M${n}`,
      });
      assert.equal(coverage.status, 201, coverage.text);
      const when = new Date(Date.now() - 3600_000).toISOString();
      const encounter = await api(n, practice, 'POST', '/encounters', {
        patientId: patient.body.id,
        practitionerId: practice.practitionerId,
        start: when,
        end: when,
        diagnoses: [{ code: 'J06.9' }],
        procedures: [{ code: '0190' }],
      });
      assert.equal(encounter.status, 201, encounter.text);
      const bill = await api(n + 1, practice, 'POST', `/encounters/${encounter.body.id}/bill`, {
        issue: true,
        submitClaim: true,
      });
      assert.ok(bill.status === 200 || bill.status === 201, bill.text);
      return bill.body.invoice.id;
    }

    test('billing through both APIs: every job once, numbers without gaps, every webhook once', async () => {
      const tenants = [await practiceWithReceiver(), await practiceWithReceiver()];
      const invoices: string[] = [];
      // Four clients at once, each on its own practice and API in turn.
      await Promise.all(
        [0, 1, 2, 3].map(async (lane) => {
          for (let n = lane; n < VISITS; n += 4)
            invoices.push(await billedVisit(n, tenants[n % 2]!.practice));
        }),
      );
      assert.equal(invoices.length, VISITS);

      // Settled: every claim paid, no job left queued, every delivery made, the receivers quiet.
      const ids = tenants.map((t) => t.practice.practiceId);
      const deadline = Date.now() + 60_000;
      let settled = false;
      while (!settled && Date.now() < deadline) {
        const open = await admin.query<{ queued: number; payments: number; undelivered: number }>(
          `SELECT (SELECT count(*)::int FROM jobs WHERE practice_id = ANY($1) AND state = 'queued') AS queued,
                (SELECT count(*)::int FROM payments WHERE practice_id = ANY($1) AND source = 'insurer') AS payments,
                (SELECT count(*)::int FROM webhook_deliveries
                  WHERE practice_id = ANY($1) AND state <> 'delivered') AS undelivered`,
          [ids],
        );
        const { queued, payments, undelivered } = open.rows[0]!;
        settled = queued === 0 && payments >= VISITS && undelivered === 0;
        if (!settled) await sleep(200);
      }
      assert.ok(settled, 'every claim was paid and every delivery made within a minute');

      const jobs = await admin.query<{ id: string; kind: string; state: string; attempts: number }>(
        'SELECT id, kind, state, attempts FROM jobs WHERE practice_id = ANY($1)',
        [ids],
      );
      assert.ok(jobs.rows.length >= VISITS * 2, `${jobs.rows.length} jobs`);
      for (const job of jobs.rows)
        assert.deepEqual([job.state, job.attempts], ['done', 1], JSON.stringify(job));

      for (const { practice, receiver } of tenants) {
        const numbers = await admin.query<{ number: string }>(
          'SELECT number FROM invoices WHERE practice_id = $1 AND number IS NOT NULL ORDER BY number',
          [practice.practiceId],
        );
        const sequence = numbers.rows.map((r) => Number(/(\d+)$/.exec(r.number)![1]));
        assert.deepEqual(
          sequence,
          sequence.map((_, i) => i + 1),
          `${practice.practiceId}: invoice numbers 1..${sequence.length}`,
        );

        const events = await admin.query<{ id: string }>('SELECT id FROM events WHERE practice_id = $1', [
          practice.practiceId,
        ]);
        assert.ok(events.rows.length >= (VISITS / 2) * 3, `${events.rows.length} events`);
        const arrived = new Map<string, number>();
        for (const r of receiver.requests) arrived.set(r.webhookId, (arrived.get(r.webhookId) ?? 0) + 1);
        for (const { id } of events.rows)
          assert.equal(arrived.get(id), 1, `event ${id} arrived ${arrived.get(id)} times`);
        assert.equal(
          arrived.size,
          events.rows.length,
          'nothing arrived that is not an event of the practice',
        );
        receiver.assertAllVerified();
      }
    });

    test('one Idempotency-Key sent to both APIs at the same moment makes one record, 20 times out of 20', async () => {
      const practice = await remotePractice(apis[0]!.baseUrl, apis[0]!.adminToken);
      for (let i = 0; i < 20; i++) {
        const key = `both-${i}-${randomBytes(6).toString('hex')}`;
        const body = {
          givenNames: ['Sipho'],
          lastName: 'Dlamini',
          birthDate: '1990-01-01',
          externalId: { system: 'urn:test:mrn', value: key },
        };
        const answers = await Promise.all(
          [0, 1].map((n) => api(n, practice, 'POST', '/patients', body, key)),
        );
        for (const a of answers) assert.ok([201, 409].includes(a.status), a.text);
        const made = answers.filter((a) => a.status === 201).map((a) => a.body.id);
        assert.ok(made.length >= 1, 'at least one answer carries the record');
        assert.equal(new Set(made).size, 1, 'both answers name the same record');
        const rows = await admin.query(
          'SELECT id FROM patients WHERE practice_id = $1 AND external_value = $2',
          [practice.practiceId, key],
        );
        assert.equal(rows.rowCount, 1, `attempt ${i}: one patient`);
      }
    });

    test('a key revoked through one API is refused by the other within the bound', async () => {
      const practice = await remotePractice(apis[0]!.baseUrl, apis[0]!.adminToken);
      const askOther = () =>
        call(apis[1]!.baseUrl, 'GET', '/api/v1/patients/pat_0000000000000000000000', { token: practice.key });
      // Remembered by the other API.
      for (let i = 0; i < 2; i++) assert.equal((await askOther()).status, 404);
      const revoked = await call(apis[0]!.baseUrl, 'POST', `/admin/v1/keys/${practice.keyId}/revoke`, {
        token: apis[0]!.adminToken,
      });
      assert.equal(revoked.status, 200, revoked.text);
      const started = Date.now();
      let status = 0;
      while (Date.now() - started < REVOCATION_BOUND_MS) {
        status = (await askOther()).status;
        if (status === 401) break;
        await sleep(20);
      }
      assert.equal(status, 401, `still ${status} ${Date.now() - started} ms after the revocation`);
    });
  });
}
