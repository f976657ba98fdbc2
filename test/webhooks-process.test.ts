// At-least-once delivery across a real crash: the sandbox server runs as a child process (`node
// src/main.ts`, embedded database in a temporary DATA_DIR), an endpoint is registered with the printed
// admin token, visits are billed and claimed, and the process is SIGKILLed while the receiver is still
// holding its first deliveries. Restarted on the same DATA_DIR, it delivers every event at least once;
// the database it leaves behind names no event the receiver did not get.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { openPglite } from '../src/platform/db/database.ts';
import { call } from './harness.ts';
import {
  freePort,
  removeDataDir,
  type ServiceProcess,
  sandboxBanner,
  startServiceProcess,
  tempDir,
} from './processes.ts';
import { billVisit } from './support/operator-scene.ts';
import { Receiver, sleep } from './webhooks-fixtures.ts';

const ENV = { INSURER_DELAY_MS: '0', REMITTANCE_DELAY_MS: '0', JOB_LEASE_SECONDS: '5', LOG_LEVEL: 'warn' };

describe('webhooks survive a killed service process (embedded database)', () => {
  const dataDir = tempDir('webhooks-crash');
  const running: ServiceProcess[] = [];
  let receiver: Receiver | undefined;

  after(async () => {
    await Promise.all(running.map((p) => p.stop('SIGKILL')));
    await receiver?.close();
    removeDataDir(dataDir);
  });

  /** Starts the service; a restart right after a kill waits for the dead process's lock to go stale. */
  async function start(port: number, deadlineMs: number): Promise<ServiceProcess> {
    for (;;) {
      const service = await startServiceProcess({ dataDir, port, env: ENV });
      running.push(service);
      if (service.stdout().includes('Demo API key')) return service;
      await service.exited;
      assert.match(service.stderr(), /in use/, `the service did not start:\n${service.stderr()}`);
      assert.ok(Date.now() < deadlineMs, 'the data directory stayed locked after the kill');
      await sleep(1_000);
    }
  }

  test('every event reaches the receiver at least once after SIGKILL and restart', {
    timeout: 180_000,
  }, async () => {
    const r = await Receiver.start();
    receiver = r;
    // The first deliveries hang (in flight when the process dies); everything after is answered.
    r.reply = (request) => (request.n <= 2 ? { hold: true, status: 200 } : { status: 200 });

    const port = await freePort();
    const first = await start(port, Date.now() + 90_000);
    const banner = sandboxBanner(first.stdout());
    const practitionerId = /practitioner +(\S+)/.exec(first.stdout())?.[1];
    assert.ok(practitionerId);
    const admin = (method: string, path: string, body?: unknown) =>
      call(first.baseUrl, method, `/admin/v1${path}`, {
        token: banner.adminToken,
        ...(body !== undefined ? { body } : {}),
      });
    const endpoint = await admin('POST', `/practices/${banner.practiceId}/webhook-endpoints`, {
      url: r.url(),
    });
    assert.equal(endpoint.status, 201, endpoint.text);
    r.secret = endpoint.body.secret;

    const invoices: string[] = [];
    for (let i = 0; i < 2; i++)
      invoices.push((await billVisit(first.baseUrl, banner.apiKey, practitionerId, { claim: true })).id);

    // Kill the process while the receiver holds its first two deliveries.
    const inFlightBy = Date.now() + 15_000;
    while (r.requests.length < 2 && Date.now() < inFlightBy) await sleep(20);
    assert.ok(r.requests.length >= 2, 'deliveries were in flight');
    const beforeKill = r.requests.length;
    first.child.kill('SIGKILL');
    assert.equal(await first.exited, null, 'killed by the signal');
    const heldIds = r.requests.slice(0, 2).map((x) => x.webhookId);

    const second = await start(port, Date.now() + 40_000);
    // Bounded wait: every invoice's payment arrives, both held events are delivered again, and the
    // receiver has been quiet for a while (any job the dead worker leased is due by then).
    const deadline = Date.now() + 30_000;
    const paidFor = () =>
      new Set(r.requests.filter((x) => x.payload?.type === 'payment.created').map((x) => x.payload.data.id));
    let lastCount = -1;
    let quietSince = Date.now();
    while (Date.now() < deadline) {
      if (r.requests.length !== lastCount) {
        lastCount = r.requests.length;
        quietSince = Date.now();
      }
      const heldRedelivered = heldIds.every((id) => r.requests.slice(2).some((x) => x.webhookId === id));
      if (paidFor().size === invoices.length && heldRedelivered && Date.now() - quietSince > 2_000) break;
      await sleep(100);
    }
    assert.equal(
      paidFor().size,
      invoices.length,
      `payments arrived for every invoice (${beforeKill} before the kill)`,
    );
    for (const id of heldIds)
      assert.ok(
        r.requests.slice(2).some((x) => x.webhookId === id),
        `event ${id}, in flight at the kill, was delivered again`,
      );
    r.assertAllVerified();

    assert.equal(await second.stop('SIGTERM'), 0);
    const db = await openPglite({ dataDir });
    try {
      const events = await db.kysely.selectFrom('events').select(['id', 'type', 'object_id']).execute();
      const deliveries = await db.kysely
        .selectFrom('webhook_deliveries')
        .select(['event_id', 'state'])
        .execute();
      const received = r.uniqueIds();
      const ours = events.filter((e) => invoices.includes(e.object_id));
      assert.ok(ours.length >= 6, `events: ${JSON.stringify(ours)}`);
      for (const type of ['invoice.issued', 'claim.status_changed', 'payment.created'])
        assert.ok(
          ours.some((e) => e.type === type),
          type,
        );
      for (const event of events)
        assert.ok(received.has(event.id), `event ${event.id} (${event.type}) never arrived`);
      assert.equal(received.size, events.length, 'nothing arrived that is not an event');
      for (const d of deliveries) assert.equal(d.state, 'delivered', JSON.stringify(d));
    } finally {
      await db.close();
    }
  });
});
