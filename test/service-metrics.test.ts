// What an operator watches under load, from the admin API (JSON) and from /metrics (Prometheus text,
// behind the admin token): per lane the jobs waiting and running and the oldest one's age, the
// practices with the deepest backlogs, the deliveries in flight per endpoint, requests shed and in flight.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { takeDueJobs } from '../src/jobs/queue.ts';
import { call, describeEachBackend, startService, type TestService, uniqueKey } from './harness.ts';
import { addEndpoint, billVisit, Receiver } from './webhooks-fixtures.ts';

describeEachBackend('service metrics', (backend) => {
  let svc: TestService;
  let receiver: Receiver;
  before(async () => {
    // Shedding on event-loop lag only at a bound no real lag reaches: a test sets the reading.
    svc = await startService(backend, {
      env: {
        WEBHOOK_ENDPOINT_CONCURRENCY: '2',
        WEBHOOK_JOB_CONCURRENCY: '6',
        LOAD_SHED_CONNECTION_WAIT_MS: '0',
        LOAD_SHED_EVENT_LOOP_LAG_MS: '60000',
        LOAD_SHED_MAX_IN_FLIGHT: '50',
        // A target no answer here reaches: the limit stays at its ceiling.
        LOAD_SHED_LATENCY_TARGET_MS: '60000',
      },
    });
    receiver = await Receiver.forService(svc);
  });
  after(async () => {
    await receiver.close();
    await svc.close();
  });

  test('the queue per lane, the deepest backlog and the deliveries in flight per endpoint, as JSON and as Prometheus text', async () => {
    const busy = await svc.newPractice();
    const endpoint = await addEndpoint(svc, busy.practiceId, receiver);
    // Three visits: three invoice.issued events, three deliveries to the one endpoint.
    for (let i = 0; i < 3; i++) await billVisit(svc, busy, { email: `patient${i}@example.org` });
    // A worker elsewhere has taken what the endpoint's cap lets run.
    const taken = await takeDueJobs(svc.db, 'wrk_elsewhere', 8, 60_000, { lanes: ['webhooks'], keyCap: 2 });
    assert.equal(taken.length, 2);

    const answer = await svc.admin('GET', '/metrics');
    assert.equal(answer.status, 200, answer.text);
    const metrics = answer.body;
    assert.equal(metrics.object, 'service_metrics');
    const webhooks = metrics.lanes.find((lane: { lane: string }) => lane.lane === 'webhooks');
    assert.equal(webhooks.running, 2);
    assert.equal(webhooks.waiting, 1);
    assert.equal(webhooks.slots, 6);
    assert.ok(webhooks.oldestWaitingSeconds >= 0);
    const claims = metrics.lanes.find((lane: { lane: string }) => lane.lane === 'claims');
    assert.deepEqual([claims.running, claims.waiting], [0, 0]);
    // Each issue also queued the patient's e-mail (the patients have an address), in the mail lane of its own.
    const mail = metrics.lanes.find((lane: { lane: string }) => lane.lane === 'mail');
    assert.deepEqual([mail.running, mail.waiting], [0, 3]);
    assert.deepEqual(
      metrics.deepestBacklogs.find((b: { lane: string }) => b.lane === 'webhooks'),
      { practiceId: busy.practiceId, lane: 'webhooks', waiting: 1 },
    );
    assert.deepEqual(metrics.deliveriesInFlight, [
      { practiceId: busy.practiceId, endpointId: endpoint.id, running: 2, waiting: 1 },
    ]);
    assert.equal(metrics.endpointConcurrency, 2);
    assert.deepEqual(metrics.requestsShed, {
      connectionWait: 0,
      eventLoopLag: 0,
      inFlightLimit: 0,
      claimBacklog: 0,
    });
    assert.deepEqual(metrics.requestsInFlight, {
      running: 0,
      peak: 1,
      limit: 50,
      ceiling: 50,
      latencyTargetMs: 60000,
    });

    const refused = await call(svc.baseUrl, 'GET', '/metrics', {});
    assert.equal(refused.status, 401);
    const wrongToken = await call(svc.baseUrl, 'GET', '/metrics', { token: `${svc.adminToken}x` });
    assert.equal(wrongToken.status, 401, 'a wrong admin token is refused');
    assert.doesNotMatch(wrongToken.text, /practice_billing_/);
    const text = await call(svc.baseUrl, 'GET', '/metrics', { token: svc.adminToken });
    assert.equal(text.status, 200);
    assert.match(text.headers.get('content-type') ?? '', /^text\/plain/);
    assert.match(text.text, /^practice_billing_jobs_running\{lane="webhooks"\} 2$/m);
    assert.match(text.text, /^practice_billing_jobs_waiting\{lane="webhooks"\} 1$/m);
    assert.match(
      text.text,
      new RegExp(
        `^practice_billing_webhook_deliveries_in_flight\\{practice="${busy.practiceId}",endpoint="${endpoint.id}"\\} 2$`,
        'm',
      ),
    );
    assert.match(text.text, /^practice_billing_requests_shed_total\{reason="connection_wait"\} 0$/m);
    assert.match(text.text, /^practice_billing_requests_shed_total\{reason="in_flight_limit"\} 0$/m);
    // No reason that nothing counts any more (webhook_backlog, docs/decisions/0245-no-always-zero-shed-reason.md).
    assert.deepEqual(
      [...text.text.matchAll(/^practice_billing_requests_shed_total\{reason="(\w+)"\}/gm)].map((m) => m[1]),
      ['connection_wait', 'event_loop_lag', 'in_flight_limit', 'claim_backlog'],
    );
    assert.match(text.text, /^practice_billing_api_requests_in_flight_limit 50$/m);
    assert.match(text.text, /^practice_billing_api_requests_in_flight_ceiling 50$/m);
  });

  test('a shed request is counted, in the JSON and in the Prometheus text', async () => {
    const practice = await svc.newPractice();
    const shedder = svc.deps.loadShedder;
    const shedBefore = (await svc.admin('GET', '/metrics')).body.requestsShed.eventLoopLag as number;
    try {
      shedder.readLagWith(() => 60_000);
      const shed = await call(svc.baseUrl, 'GET', '/api/v1/patients', { token: practice.key });
      assert.equal(shed.status, 503, shed.text);
    } finally {
      shedder.readLagWith(null);
    }
    const shedAfter = (await svc.admin('GET', '/metrics')).body.requestsShed;
    assert.equal(shedAfter.eventLoopLag, shedBefore + 1);
    const text = await call(svc.baseUrl, 'GET', '/metrics', { token: svc.adminToken });
    assert.match(
      text.text,
      new RegExp(
        `^practice_billing_requests_shed_total\\{reason="event_loop_lag"\\} ${shedBefore + 1}$`,
        'm',
      ),
    );
  });

  test('the statements, round trips and transactions this process sent to the database, counted as they are sent', async () => {
    const practice = await svc.newPractice();
    const before = (await svc.admin('GET', '/metrics')).body.database;
    const created = await call(svc.baseUrl, 'POST', '/api/v1/patients', {
      token: practice.key,
      idempotencyKey: uniqueKey(),
      body: { givenNames: ['Ada'], lastName: 'Lovelace', birthDate: '1990-01-01' },
    });
    assert.equal(created.status, 201, created.text);
    const after = (await svc.admin('GET', '/metrics')).body.database;
    assert.ok(after.statements > before.statements, 'statements are counted');
    assert.ok(after.roundTrips > before.roundTrips, 'round trips are counted');
    assert.ok(after.transactions > before.transactions, 'transactions are counted');
    const text = await call(svc.baseUrl, 'GET', '/metrics', { token: svc.adminToken });
    for (const name of ['statements', 'round_trips', 'transactions']) {
      const counted = new RegExp(`^practice_billing_db_${name}_total (\\d+)$`, 'm').exec(text.text);
      assert.ok(counted, `practice_billing_db_${name}_total is served`);
    }
    const statements = Number(/^practice_billing_db_statements_total (\d+)$/m.exec(text.text)![1]);
    assert.ok(statements >= after.statements);
  });
});
