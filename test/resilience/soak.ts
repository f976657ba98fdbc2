// The soak: the service as `npm start` runs it (API and worker in one process) under a bounded mixed
// workload for SOAK_SECONDS (default 600), SOAK_CLIENTS (8) clients each pausing SOAK_THINK_MS (30)
// between requests: register patients with a coverage, read and find them,
// record visits, bill them with issue and submitClaim, read claims, page the invoice change feed, while
// a local receiver verifies every webhook. Afterwards: no error answer, every claim answered, every
// claim event delivered and verified, memory flat (the last minute's resident size within 15% of the
// second minute's). Latencies are printed, never judged: speed is judged only by the bench, against a
// baseline run side by side.
// On PostgreSQL when DATABASE_URL is set, else on the embedded database. Run by `npm run test:resilience`.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { rssKb } from '../child-service.ts';
import { call } from '../harness.ts';
import { freePort, removeDataDir, type ServiceProcess, startServiceProcess, tempDir } from '../processes.ts';
import { Receiver } from '../webhooks-fixtures.ts';

const SECONDS = Number(process.env.SOAK_SECONDS ?? 600);
const CLIENTS = Number(process.env.SOAK_CLIENTS ?? 8);
/** Each client's pause between requests: a steady load well below saturation, not a stress test. */
const THINK_MS = Number(process.env.SOAK_THINK_MS ?? 30);
const ADMIN_TOKEN = `adm_soak_${randomBytes(12).toString('hex')}`;
const PLAN_ID = 'pln_ubuntu_essential';

interface Sample {
  operation: string;
  status: number;
  ms: number;
}

function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

function mean(values: number[]): number {
  return values.reduce((a, b) => a + b, 0) / values.length;
}

describe(`soak (${process.env.DATABASE_URL ? 'postgres' : 'pglite'}, ${SECONDS} s)`, () => {
  let service: ServiceProcess;
  let receiver: Receiver;
  let dataDir: string;
  let database: { name: string; admin: string } | undefined;

  before(async () => {
    dataDir = tempDir('soak');
    const env: Record<string, string> = {
      ADMIN_TOKEN,
      INSURER_DELAY_MS: '50',
      REMITTANCE_DELAY_MS: '1000',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      LOG_LEVEL: 'warn',
    };
    if (process.env.DATABASE_URL) {
      const name = `pb_soak_${randomBytes(4).toString('hex')}`;
      const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
      await admin.connect();
      await admin.query(`CREATE DATABASE ${name}`);
      await admin.end();
      const url = new URL(process.env.DATABASE_URL);
      url.pathname = `/${name}`;
      database = { name, admin: process.env.DATABASE_URL };
      Object.assign(env, {
        DATABASE_URL: url.toString(),
        SECRET_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
      });
    }
    service = await startServiceProcess({ dataDir, port: await freePort(), env, readyWhen: '' });
    for (let i = 0; i < 600; i++) {
      const ready = await fetch(`${service.baseUrl}/readyz`).catch(() => undefined);
      if (ready?.status === 200) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    receiver = await Receiver.start();
  });

  after(async () => {
    await service?.stop();
    await receiver?.close();
    removeDataDir(dataDir);
    if (database) {
      const admin = new pg.Client({ connectionString: database.admin });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS ${database.name} WITH (FORCE)`);
      await admin.end();
    }
  });

  test('a bounded mixed workload: no errors, reads within budget, memory flat, every claim answered and delivered', {
    timeout: (SECONDS + 300) * 1000,
  }, async () => {
    const base = service.baseUrl;
    const admin = (method: string, path: string, body?: unknown) =>
      call(base, method, `/admin/v1${path}`, { token: ADMIN_TOKEN, ...(body !== undefined ? { body } : {}) });
    const practice = await admin('POST', '/practices', { name: 'Soak Practice' });
    assert.equal(practice.status, 201, practice.text);
    const practiceId = practice.body.id as string;
    const practitioner = await admin('POST', `/practices/${practiceId}/practitioners`, { name: 'Dr Soak' });
    const client = await admin('POST', `/practices/${practiceId}/clients`, {
      name: 'Soak client',
      permissions: [
        'PATIENTS:CREATE',
        'PATIENTS:READ',
        'PATIENT_COVERAGE:CREATE',
        'ENCOUNTERS:CREATE',
        'INVOICES:CREATE',
        'INVOICES:READ',
        'INVOICES:UPDATE',
        'CLAIMS:READ',
        'CLAIMS:SUBMIT',
      ],
      rateLimitPerMinute: 10_000_000,
    });
    const key = (await admin('POST', `/clients/${client.body.id}/keys`, {})).body.key as string;
    const endpoint = await admin('POST', `/practices/${practiceId}/webhook-endpoints`, {
      url: receiver.url(),
    });
    assert.equal(endpoint.status, 201, endpoint.text);
    receiver.secret = endpoint.body.secret;

    const samples: Sample[] = [];
    const failures: string[] = [];
    const timed = async (
      operation: string,
      method: string,
      path: string,
      body?: unknown,
      expected = [200, 201],
    ) => {
      const started = performance.now();
      const answer = await call(base, method, `/api/v1${path}`, {
        token: key,
        ...(body !== undefined ? { body } : {}),
        ...(method === 'POST' ? { idempotencyKey: randomBytes(12).toString('hex') } : {}),
      });
      samples.push({ operation, status: answer.status, ms: performance.now() - started });
      await new Promise((resolve) => setTimeout(resolve, THINK_MS));
      if (!expected.includes(answer.status))
        failures.push(`${operation} ${answer.status} ${answer.text.slice(0, 300)}`);
      return answer;
    };

    const invoices: string[] = [];
    const rss: Array<{ at: number; kb: number }> = [];
    const startedAt = Date.now();
    const endAt = startedAt + SECONDS * 1000;
    const sampler = setInterval(
      () => rss.push({ at: Date.now() - startedAt, kb: rssKb(service.child.pid!) }),
      5_000,
    );
    let feedSince = new Date(startedAt - 60_000).toISOString();

    const loop = async (n: number) => {
      for (let round = 0; Date.now() < endAt && round < 100_000; round++) {
        const patient = await timed('create patient', 'POST', '/patients', {
          givenNames: ['Thandi'],
          lastName: `Soak${n}`,
          birthDate: '1985-06-15',
          externalId: { system: 'urn:soak:mrn', value: `${n}-${round}-${randomBytes(3).toString('hex')}` },
        });
        if (patient.status !== 201) continue;
        const patientId = patient.body.id as string;
        for (let i = 0; i < 5; i++) await timed('get patient', 'GET', `/patients/${patientId}`);
        await timed(
          'find patient',
          'GET',
          `/patients?externalSystem=${encodeURIComponent('urn:soak:mrn')}&externalId=${encodeURIComponent(patient.body.externalId.value)}`,
        );
        await timed('create coverage', 'POST', `/patients/${patientId}/coverages`, {
          planId: PLAN_ID,
          memberNumber: `S${n}${round}`,
        });
        const end = Date.now() - 60_000;
        const visit = await timed('create encounter', 'POST', '/encounters', {
          patientId,
          practitionerId: practitioner.body.id,
          start: new Date(end - 15 * 60_000).toISOString(),
          end: new Date(end).toISOString(),
          diagnoses: [{ code: 'J06.9' }],
          procedures: [{ code: '0190', diagnosisCodes: ['J06.9'] }],
        });
        if (visit.status !== 201) continue;
        const bill = await timed('bill', 'POST', `/encounters/${visit.body.id}/bill`, {
          issue: true,
          submitClaim: true,
        });
        if (bill.status === 201) {
          assert.equal(bill.body.claimQueued, true, JSON.stringify(bill.body));
          invoices.push(bill.body.invoice.id);
          await timed('get claim', 'GET', `/invoices/${bill.body.invoice.id}/claim`);
        }
        if (round % 5 === 0) {
          const page = await timed(
            'invoice feed',
            'GET',
            `/invoices?updatedSince=${encodeURIComponent(feedSince)}&limit=100`,
          );
          const last = page.body?.data?.at(-1);
          if (last && n === 0) feedSince = last.updatedAt;
        }
      }
    };
    try {
      await Promise.all(Array.from({ length: CLIENTS }, (_, n) => loop(n)));
    } finally {
      clearInterval(sampler);
    }

    // Drain: every claim answered, every claim event delivered.
    const claimFinal = new Set(['accepted', 'partially_accepted', 'rejected']);
    const deadline = Date.now() + 120_000;
    let pending = [...invoices];
    while (pending.length > 0 && Date.now() < deadline) {
      const still: string[] = [];
      for (const id of pending) {
        const claim = await call(base, 'GET', `/api/v1/invoices/${id}/claim`, { token: key });
        if (!claimFinal.has(claim.body?.status)) still.push(id);
      }
      pending = still;
      if (pending.length > 0) await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const eventsDeadline = Date.now() + 120_000;
    const claimEvents = () =>
      new Set(
        receiver.requests
          .filter((r) => r.verified && r.payload?.type === 'claim.status_changed')
          .map((r) => `${r.payload.data.id}`),
      );
    while (claimEvents().size < invoices.length && Date.now() < eventsDeadline) {
      await new Promise((resolve) => setTimeout(resolve, 500));
    }

    const byOperation = new Map<string, number[]>();
    for (const s of samples) byOperation.set(s.operation, [...(byOperation.get(s.operation) ?? []), s.ms]);
    const lines = [...byOperation].map(
      ([op, ms]) =>
        `${op}: ${ms.length} requests, p50 ${percentile(ms, 50).toFixed(1)} ms, p99 ${percentile(ms, 99).toFixed(1)} ms`,
    );
    const minute = (from: number, to: number) =>
      rss.filter((r) => r.at >= from && r.at < to).map((r) => r.kb);
    const second = minute(60_000, 120_000);
    const last = minute(SECONDS * 1000 - 60_000, SECONDS * 1000);
    const summary = [
      `# soak: ${samples.length} requests in ${SECONDS} s by ${CLIENTS} clients (${(samples.length / SECONDS).toFixed(0)}/s), ${invoices.length} claims`,
      ...lines.map((l) => `#   ${l}`),
      `#   RSS second minute ${(mean(second) / 1024).toFixed(0)} MiB, last minute ${(mean(last) / 1024).toFixed(0)} MiB, peak ${(Math.max(...rss.map((r) => r.kb)) / 1024).toFixed(0)} MiB`,
      `#   webhooks received ${receiver.requests.length}, unverified ${receiver.requests.filter((r) => !r.verified).length}`,
    ];
    process.stdout.write(`${summary.join('\n')}\n`);

    assert.deepEqual(failures.slice(0, 10), [], `${failures.length} error answers`);
    assert.ok(samples.length > 0);
    assert.deepEqual(pending, [], 'every claim reached its answer');
    assert.equal(claimEvents().size, invoices.length, 'a verified claim.status_changed for every claim');
    assert.equal(receiver.requests.filter((r) => !r.verified).length, 0, 'every delivery verifies');
    if (second.length > 0 && last.length > 0) {
      assert.ok(mean(last) <= mean(second) * 1.15, `RSS grew from ${mean(second)} kB to ${mean(last)} kB`);
    }
  });
});
