// Crash consistency: the real service runs as a child process (`node src/main.ts`, API and worker in
// one process) and is made to SIGKILL itself at each named fault point (FAULT_POINTS), three times per
// point, on the 1st, 2nd and 3rd time the point is reached. An integrator's client bills visits
// (patient, coverage, encounter, bill with issue and submitClaim) and retries every request with its
// Idempotency-Key across the restarts. After each point the service is restarted without faults, its
// queue is let run dry, and the database is checked in SQL: every created record has its one audit
// row and exists once per key, no Idempotency-Key is left claimed, every invoice and claim change has
// its event, every event reached the webhook receiver (which may see one twice under one webhook-id),
// no job is left unfinished, and the sandbox insurer answered each submission id once, as recorded.
// On PostgreSQL (DATABASE_URL) and on the embedded database (one process on a data directory, which
// each restart reopens).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { after, test } from 'node:test';
import { sql } from 'kysely';
import { type Database, openPglite } from '../src/platform/db/database.ts';
import { FAULT_POINT_NAMES, type FaultPointName } from '../src/platform/fault-points.ts';
import { type Answer, call, describeEachBackend, startService, type TestService } from './harness.ts';
import {
  freePort,
  removeDataDir,
  type ServiceProcess,
  sandboxBanner,
  startServiceProcess,
  tempDir,
} from './processes.ts';
import { Receiver, sleep } from './webhooks-fixtures.ts';

const KILLS_PER_POINT = 3;
const JOB_LEASE_SECONDS = 5;
const ENV = {
  INSURER_DELAY_MS: '0',
  REMITTANCE_DELAY_MS: '0',
  JOB_LEASE_SECONDS: String(JOB_LEASE_SECONDS),
  JOB_POLL_MS: '50',
  WEBHOOK_ALLOW_PRIVATE: 'true',
};
const FINAL_CLAIM = ['accepted', 'partially_accepted', 'rejected'];

/** The answer never came: the service process died while (or before) it was asked. */
class Gone extends Error {}

type StepName = 'patient' | 'coverage' | 'encounter' | 'bill';

interface Step {
  name: StepName;
  key: string;
  path: string;
  body: unknown;
  /** The record the final answer created (for bill, the invoice). */
  id?: string;
  replayed?: boolean;
}

/** One visit billed by the integrator: four creating requests, each with its own Idempotency-Key. */
interface Visit {
  n: number;
  steps: Step[];
}

interface Kill {
  point: FaultPointName;
  /** The request the client was waiting on when the process died, if any. */
  inFlight: Step | undefined;
}

const exitedWithin = (proc: ServiceProcess, ms: number) =>
  Promise.race([proc.exited.then(() => true), sleep(ms).then(() => false)]);

describeEachBackend('crash consistency at every fault point', (backend) => {
  const dataDir = tempDir(`crash-${backend}`);
  const started: ServiceProcess[] = [];
  let svc: TestService | undefined;
  let receiver: Receiver | undefined;

  after(async () => {
    await Promise.all(started.map((p) => p.stop('SIGKILL')));
    await receiver?.close();
    await svc?.close();
    removeDataDir(dataDir);
  });

  test('no request, job or delivery is lost or done twice across SIGKILLs', {
    timeout: 300_000,
  }, async (t) => {
    const port = await freePort();
    const secretKey = randomBytes(32).toString('hex');
    let env: Record<string, string> = { ...ENV, LOG_LEVEL: 'warn' };
    let readyWhen = 'Demo API key';
    if (backend === 'postgres') {
      svc = await startService('postgres', { env: { SECRET_ENCRYPTION_KEY: secretKey } });
      env = {
        ...ENV,
        DATABASE_URL: svc.databaseUrl!,
        ADMIN_TOKEN: svc.adminToken,
        SECRET_ENCRYPTION_KEY: secretKey,
        // The PostgreSQL service prints no banner: its "listening" log line says it is ready.
        LOG_LEVEL: 'info',
      };
      readyWhen = 'Server listening';
    }
    const postgres = svc;

    /** SQL on the service's database; the embedded one is opened only while no service runs. */
    async function withDb<T>(fn: (db: Database) => Promise<T>): Promise<T> {
      if (postgres) return fn(postgres.db);
      assert.ok(
        started.every((p) => p.child.exitCode !== null || p.child.signalCode !== null),
        'no process holds the data directory',
      );
      const db = await openPglite({ dataDir });
      try {
        return await fn(db);
      } finally {
        await db.close();
      }
    }

    async function start(faults?: string): Promise<ServiceProcess> {
      if (backend === 'pglite') {
        // Every earlier process is dead (the test waited for its exit): the lock a SIGKILLed one
        // left beside the data directory is stale, and the supervisor knows it.
        assert.ok(started.every((p) => p.child.exitCode !== null || p.child.signalCode !== null));
        fs.rmSync(`${dataDir}.lock`, { recursive: true, force: true });
      }
      const proc = await startServiceProcess({
        dataDir,
        port,
        env: { ...env, ...(faults ? { FAULT_POINTS: faults } : {}) },
        readyWhen,
      });
      started.push(proc);
      assert.ok(
        proc.stdout().includes(readyWhen),
        `the service did not start:\n${proc.stdout().slice(-2000)}\n${proc.stderr()}`,
      );
      return proc;
    }

    async function stop(proc: ServiceProcess): Promise<void> {
      assert.equal(await proc.stop('SIGTERM'), 0, `a clean stop:\n${proc.stderr()}`);
    }

    // First start: the practice (PostgreSQL: made through the harness; embedded: the sandbox's own)
    // and a webhook endpoint registered before any visit, so every event has a delivery.
    let proc = await start();
    let practiceId: string;
    let practitionerId: string;
    let apiKey: string;
    let adminToken: string;
    if (postgres) {
      const practice = await postgres.newPractice();
      ({ practiceId, practitionerId, key: apiKey } = practice);
      adminToken = postgres.adminToken;
    } else {
      const banner = sandboxBanner(proc.stdout());
      ({ practiceId, apiKey, adminToken } = banner);
      const match = /practitioner +(\S+)/.exec(proc.stdout());
      assert.ok(match?.[1]);
      practitionerId = match[1];
    }
    const r = await Receiver.start();
    receiver = r;
    const endpoint = await call(proc.baseUrl, 'POST', `/admin/v1/practices/${practiceId}/webhook-endpoints`, {
      token: adminToken,
      body: { url: r.url() },
    });
    assert.equal(endpoint.status, 201, endpoint.text);
    r.secret = endpoint.body.secret;
    await stop(proc);

    const visits: Visit[] = [];
    const run = randomBytes(3).toString('hex');
    const newVisit = (): Visit => {
      const n = visits.length + 1;
      const when = new Date(Date.now() - 3600_000).toISOString();
      const key = (step: string) => `crash-${run}-${n}-${step}`;
      const visit: Visit = {
        n,
        steps: [
          {
            name: 'patient',
            key: key('patient'),
            path: '/patients',
            body: { givenNames: ['Crash'], lastName: `Visit-${run}-${n}`, birthDate: '1980-01-01' },
          },
          {
            name: 'coverage',
            key: key('coverage'),
            path: '/patients/{patient}/coverages',
            body: { planId: 'pln_ubuntu_essential', memberNumber: `M-${n}` },
          },
          {
            name: 'encounter',
            key: key('encounter'),
            path: '/encounters',
            body: {
              patientId: '{patient}',
              practitionerId,
              start: when,
              end: when,
              diagnoses: [{ code: 'J06.9' }],
              procedures: [{ code: '0190' }],
            },
          },
          {
            name: 'bill',
            key: key('bill'),
            path: '/encounters/{encounter}/bill',
            body: { issue: true, submitClaim: true },
          },
        ],
      };
      visits.push(visit);
      return visit;
    };
    const idOf = (visit: Visit, name: StepName) => visit.steps.find((s) => s.name === name)?.id ?? '';
    const fill = (visit: Visit, text: string) =>
      text.replace('{patient}', idOf(visit, 'patient')).replace('{encounter}', idOf(visit, 'encounter'));

    let inFlight: Step | undefined;
    /** Sends one step until it has a real answer, as an integrator would: same key, same body. */
    async function send(p: ServiceProcess, visit: Visit, step: Step, deadline: number): Promise<Answer> {
      const body = JSON.parse(fill(visit, JSON.stringify(step.body))) as unknown;
      for (;;) {
        assert.ok(Date.now() < deadline, `no answer to ${step.key} in time`);
        let answer: Answer;
        inFlight = step;
        try {
          answer = await call(p.baseUrl, 'POST', `/api/v1${fill(visit, step.path)}`, {
            token: apiKey,
            idempotencyKey: step.key,
            body,
          });
        } catch {
          if (await exitedWithin(p, 2_000)) throw new Gone();
          await sleep(100);
          continue;
        }
        inFlight = undefined;
        // The key is still claimed by the request the crash cut short: retry once its lease is over.
        if (answer.status === 409 && answer.body?.code === 'conflict') {
          await sleep(200);
          continue;
        }
        return answer;
      }
    }

    /** Runs the visit's remaining steps; throws Gone when the process dies. */
    async function advance(p: ServiceProcess, visit: Visit, deadline: number): Promise<void> {
      for (const step of visit.steps) {
        if (step.id) continue;
        const answer = await send(p, visit, step, deadline);
        const log = (p.stdout() + p.stderr())
          .split('\n')
          .filter((line) => answer.body?.requestId && line.includes(answer.body.requestId));
        assert.equal(answer.status, 201, `${step.key}: ${answer.text}\n${log.join('\n')}`);
        step.id = step.name === 'bill' ? answer.body.invoice.id : answer.body.id;
        step.replayed = answer.headers.get('idempotent-replayed') === 'true';
      }
    }
    const unfinished = () => visits.find((v) => v.steps.some((s) => !s.id));

    // A job leased by a killed process is taken again once its lease runs out: at most the lease
    // after the last kill, whenever the clean process started.
    let lastKillAt = 0;
    /** Bills visits on an armed process until the fault point kills it. */
    async function driveUntilKilled(p: ServiceProcess, point: FaultPointName): Promise<Kill> {
      const deadline = Date.now() + 40_000;
      try {
        for (;;) {
          assert.ok(Date.now() < deadline, `${point} was not reached in time`);
          await advance(p, unfinished() ?? newVisit(), deadline);
          if (await exitedWithin(p, 50)) throw new Gone();
        }
      } catch (error) {
        if (!(error instanceof Gone)) throw error;
      }
      assert.equal(p.child.signalCode, 'SIGKILL', `killed by its fault point:\n${p.stderr()}`);
      assert.match(p.stderr(), new RegExp(`fault point ${point.replace('.', '\\.')} reached`));
      const kill = { point, inFlight };
      inFlight = undefined;
      lastKillAt = Date.now();
      return kill;
    }

    /** Every claim answered (and, when accepted, paid by the insurer), through the API. */
    const settledInvoices = new Set<string>();
    async function claimsSettled(p: ServiceProcess): Promise<boolean> {
      for (const visit of visits) {
        const invoiceId = idOf(visit, 'bill');
        if (settledInvoices.has(invoiceId)) continue;
        const claim = await call(p.baseUrl, 'GET', `/api/v1/invoices/${invoiceId}/claim`, {
          token: apiKey,
        });
        assert.equal(claim.status, 200, claim.text);
        if (!FINAL_CLAIM.includes(claim.body.status)) return false;
        if (claim.body.status !== 'rejected') {
          const paid = await call(p.baseUrl, 'GET', `/api/v1/invoices/${invoiceId}/payments`, {
            token: apiKey,
          });
          if (!paid.body.data.some((x: { source: string }) => x.source === 'insurer')) return false;
        }
        settledInvoices.add(invoiceId);
      }
      return true;
    }

    const unfinishedJobs = (db: Database) =>
      sql<{ id: string; kind: string; state: string; attempts: number; last_error: string | null }>`
          SELECT id, kind, state, attempts, last_error FROM jobs WHERE state <> 'done'`
        .execute(db.kysely)
        .then((result) => result.rows);

    /**
     * A process without faults finishes the client's visit and runs until its queue is dry. On the
     * embedded database the queue can be read only after the stop, so it is restarted if a job a
     * killed process had leased was still waiting.
     */
    async function settle(): Promise<void> {
      for (let round = 1; ; round++) {
        const p = await start();
        const startedAt = Date.now();
        const deadline = startedAt + 60_000;
        const visit = unfinished();
        if (visit) await advance(p, visit, deadline);
        for (;;) {
          assert.ok(Date.now() < deadline, 'the service did not finish its work in time');
          const lastDelivery = r.requests.at(-1)?.at ?? 0;
          const quiet = Date.now() - lastDelivery > 1_500;
          // Leases of killed processes are over, and this one has had time to take what was due.
          const leasesOver =
            Date.now() - lastKillAt > (JOB_LEASE_SECONDS + 1) * 1000 && Date.now() - startedAt > 2_000;
          if (await claimsSettled(p)) {
            if (postgres && (await unfinishedJobs(postgres.db)).length === 0) break;
            if (!postgres && quiet && leasesOver) break;
          }
          await sleep(250);
        }
        await stop(p);
        if (postgres || (await withDb(unfinishedJobs)).length === 0 || round === 3) return;
      }
    }

    const kills: Kill[] = [];
    const phaseTimes: string[] = [];
    for (const point of FAULT_POINT_NAMES) {
      const phaseStart = Date.now();
      const receivedBefore = r.requests.length;
      const uniqueBefore = r.uniqueIds().size;
      for (let time = 1; time <= KILLS_PER_POINT; time++) {
        proc = await start(`${point}:${time}`);
        kills.push(await driveUntilKilled(proc, point));
      }
      await settle();
      const ofPoint = kills.filter((k) => k.point === point);
      assert.equal(ofPoint.length, KILLS_PER_POINT);

      // What the integrator saw on the request the crash cut short: committed work is replayed,
      // work that never committed runs afresh.
      if (point.startsWith('request.') || point === 'idempotency.after_claim') {
        for (const kill of ofPoint) {
          assert.ok(kill.inFlight, `${point}: the kill cut a request short`);
          assert.equal(
            kill.inFlight.replayed,
            point === 'request.after_commit',
            `${point}: the retry of ${kill.inFlight.key} replayed (${kill.inFlight.replayed})`,
          );
        }
      }
      if (point === 'claim.after_insurer_answer') {
        const retaken = await withDb((db) =>
          sql<{ again: number }>`
              SELECT coalesce(sum(attempts - 1), 0)::int AS again FROM jobs WHERE kind = 'claim.submit'`.execute(
            db.kysely,
          ),
        );
        const again = retaken.rows[0]?.again ?? 0;
        assert.ok(
          again >= KILLS_PER_POINT,
          `each submission killed after its answer was taken again (${again})`,
        );
      }
      if (point === 'webhook.after_2xx') {
        const again = r.requests.length - receivedBefore - (r.uniqueIds().size - uniqueBefore);
        assert.ok(again >= KILLS_PER_POINT, `each delivery killed after its 2xx was sent again (${again})`);
      }

      await withDb((db) => checkInvariants(db, { practiceId, visits, receiver: r, point }));
      phaseTimes.push(`${point} ${((Date.now() - phaseStart) / 1000).toFixed(1)} s`);
    }
    t.diagnostic(`${visits.length} visits, ${kills.length} kills; ${phaseTimes.join(', ')}`);
  });
});

interface Expectations {
  practiceId: string;
  visits: Visit[];
  receiver: Receiver;
  point: FaultPointName;
}

async function checkInvariants(db: Database, x: Expectations): Promise<void> {
  const { practiceId, visits, receiver, point } = x;
  const steps = visits.flatMap((v) => v.steps);
  const at = `after ${point}`;
  for (const step of steps) assert.ok(step.id, `${at}: ${step.key} was answered`);

  // Every created record has exactly one audit row of its creation, and exists once per key.
  const created = await sql<{ kind: string; id: string; audited: number }>`
    WITH created AS (
      SELECT 'patient' AS kind, id FROM patients WHERE practice_id = ${practiceId}
      UNION ALL SELECT 'coverage', id FROM coverages WHERE practice_id = ${practiceId}
      UNION ALL SELECT 'encounter', id FROM encounters WHERE practice_id = ${practiceId}
      UNION ALL SELECT 'invoice', id FROM invoices WHERE practice_id = ${practiceId}
    )
    SELECT c.kind, c.id,
      (SELECT count(*) FROM audit_events a
        WHERE a.practice_id = ${practiceId} AND a.resource_id = c.id AND a.method = 'POST'
          AND a.status = 201 AND a.outcome = 'succeeded')::int AS audited
    FROM created c`.execute(db.kysely);
  for (const row of created.rows) assert.equal(row.audited, 1, `${at}: ${row.kind} ${row.id} audited once`);
  const kindOf: Record<StepName, string> = {
    patient: 'patient',
    coverage: 'coverage',
    encounter: 'encounter',
    bill: 'invoice',
  };
  for (const name of Object.keys(kindOf) as StepName[]) {
    const answered = steps.filter((s) => s.name === name).map((s) => s.id!);
    const stored = created.rows.filter((r) => r.kind === kindOf[name]).map((r) => r.id);
    assert.deepEqual(stored.sort(), [...answered].sort(), `${at}: one ${kindOf[name]} per Idempotency-Key`);
  }

  // Each key holds the answer the client finally got.
  const keys = await sql<{ key: string; response_status: number; response_body: string }>`
    SELECT key, response_status, response_body FROM idempotency_keys WHERE practice_id = ${practiceId}`.execute(
    db.kysely,
  );
  const byKey = new Map(keys.rows.map((k) => [k.key, k]));
  for (const step of steps) {
    const stored = byKey.get(step.key);
    assert.ok(stored, `${at}: ${step.key} is stored`);
    assert.equal(stored.response_status, 201);
    const body = JSON.parse(stored.response_body ?? '{}');
    assert.equal(
      step.name === 'bill' ? body.invoice.id : body.id,
      step.id,
      `${at}: ${step.key} replays its record`,
    );
  }

  // Every invoice and claim change has its event; the claim holds the insurer's one answer.
  const invoices = await sql<{
    id: string;
    status: string;
    claim_status: string | null;
    claim: string | null;
    authorization_reference: string | null;
    issued_events: number;
    claim_events: number;
    payment_events: number;
    payments: number;
    insurer_payments: number;
    insurer_kind: string | null;
    insurer_status: string | null;
    insurer_reference: string | null;
  }>`
    SELECT i.id, i.status, i.claim_status, c.status AS claim, c.authorization_reference,
      (SELECT count(*) FROM events e WHERE e.practice_id = i.practice_id AND e.object_id = i.id
         AND e.type = 'invoice.issued')::int AS issued_events,
      (SELECT count(*) FROM events e WHERE e.practice_id = i.practice_id AND e.object_id = i.id
         AND e.type = 'claim.status_changed')::int AS claim_events,
      (SELECT count(*) FROM events e WHERE e.practice_id = i.practice_id AND e.object_id = i.id
         AND e.type = 'payment.created')::int AS payment_events,
      (SELECT count(*) FROM payments p WHERE p.practice_id = i.practice_id AND p.invoice_id = i.id)::int AS payments,
      (SELECT count(*) FROM payments p WHERE p.practice_id = i.practice_id AND p.invoice_id = i.id
         AND p.source = 'insurer')::int AS insurer_payments,
      m.kind AS insurer_kind, m.answer->>'status' AS insurer_status,
      m.answer->>'authorizationReference' AS insurer_reference
    FROM invoices i
    LEFT JOIN claims c ON c.practice_id = i.practice_id AND c.invoice_id = i.id
    LEFT JOIN sandbox_insurer_messages m ON m.message_id = c.submission_id
    WHERE i.practice_id = ${practiceId}`.execute(db.kysely);
  for (const i of invoices.rows) {
    const what = `${at}: invoice ${i.id}`;
    assert.notEqual(i.status, 'draft', `${what} was issued`);
    assert.equal(i.issued_events, 1, `${what}: one invoice.issued event`);
    assert.ok(i.claim && FINAL_CLAIM.includes(i.claim), `${what}: its claim was answered (${i.claim})`);
    assert.equal(i.claim_status, i.claim, `${what}: claimStatus mirrors the claim`);
    assert.equal(i.claim_events, 2, `${what}: claim.status_changed for submitting and for the answer`);
    assert.equal(i.insurer_kind, 'submit', `${what}: the insurer answered its submission id`);
    assert.equal(i.claim, i.insurer_status, `${what}: the recorded status is the insurer's answer`);
    assert.equal(i.authorization_reference, i.insurer_reference, `${what}: and its reference`);
    assert.equal(i.payment_events, i.payments, `${what}: one payment.created per payment`);
    assert.equal(i.insurer_payments, i.claim === 'rejected' ? 0 : 1, `${what}: the remittance paid once`);
  }
  const messages = await sql<{ orphans: number }>`
    SELECT count(*)::int AS orphans FROM sandbox_insurer_messages m
    WHERE m.kind = 'submit' AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.submission_id = m.message_id)`.execute(
    db.kysely,
  );
  assert.equal(
    messages.rows[0]?.orphans,
    0,
    `${at}: no submission the claims do not know reached the insurer`,
  );

  // Every event has its delivery, delivered; the receiver got each at least once and nothing else.
  const events = await sql<{ id: string; type: string; deliveries: number; delivered: number }>`
    SELECT e.id, e.type, count(d.id)::int AS deliveries,
      count(d.id) FILTER (WHERE d.state = 'delivered')::int AS delivered
    FROM events e LEFT JOIN webhook_deliveries d ON d.practice_id = e.practice_id AND d.event_id = e.id
    WHERE e.practice_id = ${practiceId} GROUP BY e.id, e.type`.execute(db.kysely);
  const received = receiver.uniqueIds();
  for (const e of events.rows) {
    assert.equal(e.deliveries, 1, `${at}: event ${e.id} (${e.type}) has one delivery`);
    assert.equal(e.delivered, 1, `${at}: event ${e.id} (${e.type}) was delivered`);
    assert.ok(received.has(e.id), `${at}: event ${e.id} (${e.type}) reached the receiver`);
  }
  assert.deepEqual(
    [...received].sort(),
    events.rows.map((e) => e.id).sort(),
    `${at}: the receiver got no event that was not committed`,
  );
  for (const id of received) {
    const copies = receiver.requests.filter((q) => q.webhookId === id);
    for (const copy of copies)
      assert.equal(copy.body, copies[0]!.body, `${at}: ${id} is the same event each time`);
  }
  receiver.assertAllVerified();

  // No job is left queued, leased or failed.
  const jobs = await sql<{ id: string; kind: string; state: string; last_error: string | null }>`
    SELECT id, kind, state, last_error FROM jobs WHERE state <> 'done'`.execute(db.kysely);
  assert.deepEqual(jobs.rows, [], `${at}: every job finished`);
}
