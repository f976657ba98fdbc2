// Load shedding in front of the public API. A request is answered 503 service_unavailable with
// Retry-After, having done nothing, while the event loop lags past its bound, while as many requests
// as the in-flight limit are being served, or when its first connection would wait the bound or more:
// predicted on arrival, or reached while it waits. The same request with the same Idempotency-Key
// afterwards is served as new, not replayed, and creates one record. Each refusal is counted, and how
// long served requests waited for their first connection is read from the service's own metrics,
// never from the test's clock. Connections are held by open transactions of the test's own, and the
// lag is set through readLagWith, so nothing depends on how busy the machine is. The client package
// waits out the Retry-After and its retry succeeds. A refusal decided before the request's work (a
// 403) keeps its answer and its audit row however long the row waits for a connection. Under a
// latency target, answers made slow by held connections lower the in-flight limit, and quick ones
// raise it back to its ceiling. A claim sent is refused while the claims backlog is further behind
// than its bound, and a bill then creates its invoice and skips the claim saying why; a practice's
// webhook deliveries being far behind refuses nothing of it.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { asOperator } from '../src/platform/db/transaction.ts';
import { issuedInvoice, newPatient, newWorld, recordVisit, sendClaim } from './claims-fixtures.ts';
import {
  call,
  describeEachBackend,
  patientBody,
  startService,
  type TestService,
  uniqueKey,
} from './harness.ts';
import { sdkClient } from './sdk-fixtures.ts';
import { bill, createEncounter } from './support/factories.ts';
import { addEndpoint, Receiver } from './webhooks-fixtures.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until check answers true (a bound against hanging, never a judgement of speed). */
async function eventually(what: string, check: () => boolean): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`never happened: ${what}`);
    await sleep(5);
  }
}

/** As eventually, for a check that asks the service, a little apart. */
async function eventuallyAsync(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`never happened: ${what}`);
    await sleep(50);
  }
}

const POOL_SIZE = 2;
const IN_FLIGHT_LIMIT = 4;
/** The capped service's bound: long, so that only a stalled machine makes its admitted requests 503. */
const CAPPED_BOUND_MS = 5000;

/** The steered service's in-flight ceiling and latency target. */
const STEERED_CEILING = 12;
const STEERED_TARGET_MS = 200;
/** How long the steered service's connections are held: every request waiting behind them answers slowly. */
const STEERED_HOLD_MS = 3 * STEERED_TARGET_MS;

/** A bound no request reaches while the test holds nothing: only held connections make waits. */
const BOUND_MS = 1000;

/** The claims backlog's bound, and the webhook deliveries' one; the tests make their jobs due well before it. */
const BACKLOG_BOUND_MS = 2000;

describeEachBackend('load shedding', (backend) => {
  // One service sheds on connection waits only, the other on event-loop lag only, so that neither
  // reason turns up in the other's test.
  let svc: TestService;
  let lagging: TestService;
  let capped: TestService;
  let backlogged: TestService;
  let steered: TestService;
  before(async () => {
    svc = await startService(backend, {
      poolSize: POOL_SIZE,
      env: { LOAD_SHED_CONNECTION_WAIT_MS: String(BOUND_MS), LOAD_SHED_EVENT_LOOP_LAG_MS: '0' },
    });
    lagging = await startService(backend, {
      env: { LOAD_SHED_CONNECTION_WAIT_MS: '0', LOAD_SHED_EVENT_LOOP_LAG_MS: '200' },
    });
    capped = await startService(backend, {
      poolSize: POOL_SIZE,
      env: {
        LOAD_SHED_CONNECTION_WAIT_MS: String(CAPPED_BOUND_MS),
        LOAD_SHED_EVENT_LOOP_LAG_MS: '0',
        LOAD_SHED_MAX_IN_FLIGHT: String(IN_FLIGHT_LIMIT),
        LOAD_SHED_LATENCY_TARGET_MS: '0',
      },
    });
    steered = await startService(backend, {
      poolSize: POOL_SIZE,
      env: {
        LOAD_SHED_CONNECTION_WAIT_MS: '0',
        LOAD_SHED_EVENT_LOOP_LAG_MS: '0',
        LOAD_SHED_MAX_IN_FLIGHT: String(STEERED_CEILING),
        LOAD_SHED_LATENCY_TARGET_MS: String(STEERED_TARGET_MS),
      },
    });
    // No worker polls here: claim jobs wait until the test drains the queue.
    backlogged = await startService(backend, {
      env: {
        LOAD_SHED_CLAIM_BACKLOG_MS: String(BACKLOG_BOUND_MS),
      },
    });
  });
  after(async () => {
    await Promise.all([svc.close(), lagging.close(), capped.close(), backlogged.close(), steered.close()]);
  });

  /** Holds every connection of service's database in open transactions until the answer is called. */
  async function holdConnections(service: TestService): Promise<() => Promise<void>> {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let holding = 0;
    const holders = Array.from({ length: service.db.connections.size }, () =>
      asOperator(service.db, async (trx) => {
        await sql`SELECT 1`.execute(trx);
        holding += 1;
        await gate;
      }),
    );
    await eventually('every connection is held', () => holding === holders.length);
    return async () => {
      release();
      await Promise.all(holders);
    };
  }

  /**
   * Holds every connection of the service's database in open transactions, and queues one more
   * transaction behind them until it has waited past the bound; answers how to let them all go.
   */
  async function saturate(): Promise<() => Promise<void>> {
    const letGo = await holdConnections(svc);
    const waiting = asOperator(svc.db, (trx) => sql`SELECT 1`.execute(trx));
    await eventually(
      'a transaction has waited past the bound',
      () => svc.db.connections.longestWaitMs() > BOUND_MS,
    );
    return async () => {
      await letGo();
      await waiting;
    };
  }

  /** The practice's patients with the externalId of body, once the service sheds no more. */
  const patients = async (
    key: string,
    body: { externalId: { system: string; value: string } },
    service = svc,
  ) => {
    await eventually('the overload has passed', () => service.deps.loadShedder.reasonToShed() === null);
    const query = new URLSearchParams({
      externalSystem: body.externalId.system,
      externalId: body.externalId.value,
    });
    const list = await call(service.baseUrl, 'GET', `/api/v1/patients?${query}`, { token: key });
    assert.equal(list.status, 200, list.text);
    return list.body.data as unknown[];
  };

  test('a request that would wait past the bound for a connection is answered 503 at once, and nothing of it is done', async () => {
    const practice = await svc.newPractice();
    const key = uniqueKey();
    const body = patientBody();
    const shedBefore = svc.deps.loadShedder.shed.connection_wait;
    const letGo = await saturate();
    let answer: Awaited<ReturnType<typeof call>>;
    try {
      // Answered while every connection is still held: it did no database work.
      answer = await call(svc.baseUrl, 'POST', '/api/v1/patients', {
        token: practice.key,
        idempotencyKey: key,
        body,
      });
    } finally {
      await letGo();
    }
    assert.equal(answer.status, 503, answer.text);
    assert.equal(answer.headers.get('retry-after'), '1');
    assert.equal(answer.body.code, 'service_unavailable');
    assert.match(answer.body.detail, /overloaded/);
    assert.equal(svc.deps.loadShedder.shed.connection_wait, shedBefore + 1, 'the refusal is counted');

    assert.deepEqual(await patients(practice.key, body), [], 'no patient was created');
    await eventually('the overload has passed', () => svc.deps.loadShedder.reasonToShed() === null);
    const again = await call(svc.baseUrl, 'POST', '/api/v1/patients', {
      token: practice.key,
      idempotencyKey: key,
      body,
    });
    assert.equal(again.status, 201, `${again.text} ${JSON.stringify(svc.deps.loadShedder.shed)}`);
    assert.equal(again.headers.get('idempotent-replayed'), null, 'served as new: the key was never used');
    assert.equal((await patients(practice.key, body)).length, 1);
  });

  test('a request while the event loop lags past the bound is answered 503 with Retry-After', async () => {
    const practice = await lagging.newPractice();
    const shedder = lagging.deps.loadShedder;
    const shedBefore = shedder.shed.event_loop_lag;
    const body = patientBody();
    const idempotencyKey = uniqueKey();
    try {
      // The lag is read as 400 ms, past the bound of 200, whatever the machine's own load.
      shedder.readLagWith(() => 400);
      const answer = await call(lagging.baseUrl, 'POST', '/api/v1/patients', {
        token: practice.key,
        idempotencyKey,
        body,
      });
      assert.equal(answer.status, 503, answer.text);
      assert.equal(answer.headers.get('retry-after'), '1');
      assert.equal(answer.body.code, 'service_unavailable');
      assert.equal(shedder.shed.event_loop_lag, shedBefore + 1, 'the refusal is counted');
      // Then the lag is read as none: the list is served, and shows nothing was created.
      shedder.readLagWith(() => 0);
      assert.deepEqual(await patients(practice.key, body, lagging), [], 'no patient was created');
      const again = await call(lagging.baseUrl, 'POST', '/api/v1/patients', {
        token: practice.key,
        idempotencyKey,
        body,
      });
      assert.equal(again.status, 201, again.text);
      assert.equal(again.headers.get('idempotent-replayed'), null, 'served as new: the key was never used');
    } finally {
      shedder.readLagWith(null);
    }
  });

  test('the client package waits out the Retry-After of a shed request, and its retry is served', async () => {
    const practice = await svc.newPractice();
    const client = sdkClient(svc.baseUrl, practice.key);
    const body = patientBody();
    const shedBefore = svc.deps.loadShedder.shed.connection_wait;
    const letGo = await saturate();
    const created = client.patients.create(body);
    try {
      await eventually(
        'the first attempt is shed',
        () => svc.deps.loadShedder.shed.connection_wait > shedBefore,
      );
    } finally {
      await letGo();
    }
    const patient = await created;
    assert.equal(patient.lastName, body.lastName);
    assert.equal(svc.deps.loadShedder.shed.connection_wait, shedBefore + 1);
    assert.equal((await patients(practice.key, body)).length, 1);
  });
  test('an admitted request whose first connection would wait past the bound is refused, having done nothing, and its retry with the key creates one record', async () => {
    const practice = await svc.newPractice();
    const key = uniqueKey();
    const body = patientBody();
    const shedBefore = svc.deps.loadShedder.shed.connection_wait;
    const letGo = await holdConnections(svc);
    let answer: Awaited<ReturnType<typeof call>>;
    try {
      // Nobody waits yet and a wait is not predicted to reach the bound: the request is admitted, and
      // refused only by its own wait for a connection (predicted, or reaching the bound).
      const connections = svc.db.connections;
      assert.ok(connections.longestWaitMs() < BOUND_MS && connections.predictedWaitMs() < BOUND_MS);
      // Answered while every connection is still held: it never had one.
      answer = await call(svc.baseUrl, 'POST', '/api/v1/patients', {
        token: practice.key,
        idempotencyKey: key,
        body,
      });
    } finally {
      await letGo();
    }
    assert.equal(answer.status, 503, answer.text);
    assert.equal(answer.headers.get('retry-after'), '1');
    assert.equal(answer.body.code, 'service_unavailable');
    assert.equal(svc.deps.loadShedder.shed.connection_wait, shedBefore + 1, 'the refusal is counted');

    assert.deepEqual(await patients(practice.key, body), [], 'no patient was created');
    const again = await call(svc.baseUrl, 'POST', '/api/v1/patients', {
      token: practice.key,
      idempotencyKey: key,
      body,
    });
    assert.equal(again.status, 201, again.text);
    assert.equal(again.headers.get('idempotent-replayed'), null, 'served as new: the key was never used');
    assert.equal((await patients(practice.key, body)).length, 1);
  });

  test("a refusal's audit row waits for a connection past the bound and is written: the 403 stands, never a 503", async () => {
    const practice = await svc.newPractice({ permissions: ['PATIENTS:READ'] });
    // The key is then remembered, its use stamped and its count reserved: the refused request needs
    // no connection before its audit row.
    assert.equal((await patients(practice.key, patientBody())).length, 0);
    const shedBefore = svc.deps.loadShedder.shed.connection_wait;
    const letGo = await holdConnections(svc);
    let answering: Promise<Awaited<ReturnType<typeof call>>>;
    try {
      answering = call(svc.baseUrl, 'POST', '/api/v1/patients', {
        token: practice.key,
        idempotencyKey: uniqueKey(),
        body: patientBody(),
      });
      await eventually(
        'the audit row has waited past the bound',
        () => svc.db.connections.longestWaitMs() > BOUND_MS,
      );
    } finally {
      await letGo();
    }
    const answer = await answering;
    assert.equal(answer.status, 403, answer.text);
    assert.equal(answer.body.code, 'forbidden');
    assert.equal(svc.deps.loadShedder.shed.connection_wait, shedBefore, 'nothing was shed');
    const requestId = answer.headers.get('x-request-id');
    assert.ok(requestId);
    const rows = await asOperator(svc.db, (trx) =>
      trx
        .selectFrom('audit_events')
        .select(['status', 'reason'])
        .where('request_id', '=', requestId)
        .execute(),
    );
    assert.deepEqual(rows, [{ status: 403, reason: 'forbidden' }]);
  });

  test('under a burst past the in-flight limit, each answer was served having waited less than the bound for its first connection, or is a 503 that changed nothing; retried with their keys the refused ones create one record each', async () => {
    const practice = await capped.newPractice();
    const metrics = async () => (await capped.admin('GET', '/metrics')).body;
    const before = await metrics();
    const requests = Array.from({ length: 3 * IN_FLIGHT_LIMIT }, () => ({
      key: uniqueKey(),
      body: patientBody(),
    }));
    const post = ({ key, body }: (typeof requests)[number]) =>
      call(capped.baseUrl, 'POST', '/api/v1/patients', { token: practice.key, idempotencyKey: key, body });

    const letGo = await holdConnections(capped);
    let answered = 0;
    const pending = requests.map((request) =>
      post(request).finally(() => {
        answered += 1;
      }),
    );
    try {
      // The admitted requests wait for a connection, which the test holds: only refusals come back.
      await eventually(
        'every request past the limit is answered',
        () => answered >= requests.length - IN_FLIGHT_LIMIT,
      );
    } finally {
      await letGo();
    }
    const answers = await Promise.all(pending);
    const after = await metrics();

    const served = answers.filter((answer) => answer.status === 201);
    const refused = answers.filter((answer) => answer.status !== 201);
    for (const answer of refused) {
      assert.equal(answer.status, 503, answer.text);
      assert.equal(answer.headers.get('retry-after'), '1');
      assert.equal(answer.body.code, 'service_unavailable');
    }
    const shedSince = (reason: 'connectionWait' | 'eventLoopLag' | 'inFlightLimit' | 'claimBacklog') =>
      after.requestsShed[reason] - before.requestsShed[reason];
    assert.equal(
      shedSince('inFlightLimit') +
        shedSince('connectionWait') +
        shedSince('eventLoopLag') +
        shedSince('claimBacklog'),
      refused.length,
      'every refusal is counted by its reason',
    );
    assert.ok(shedSince('inFlightLimit') >= 1, 'requests past the limit were refused');
    assert.equal(after.requestsInFlight.limit, IN_FLIGHT_LIMIT);
    assert.ok(after.requestsInFlight.peak <= IN_FLIGHT_LIMIT, 'never more in flight than the limit');
    assert.equal(after.requestsInFlight.running, 0);
    assert.ok(served.length >= 1 && served.length <= IN_FLIGHT_LIMIT, `served ${served.length}`);
    // From the service's own figures: each served request had its first connection, no refused one did,
    // and none waited the bound for it.
    assert.equal(after.firstConnectionWait.requests - before.firstConnectionWait.requests, served.length);
    assert.ok(
      after.firstConnectionWait.longestMs < CAPPED_BOUND_MS,
      `${after.firstConnectionWait.longestMs}`,
    );

    // Nothing of a refused request was done; each served one created its patient once.
    for (const [i, request] of requests.entries()) {
      const expected = answers[i]!.status === 201 ? 1 : 0;
      assert.equal((await patients(practice.key, request.body, capped)).length, expected);
    }
    for (const [i, request] of requests.entries()) {
      if (answers[i]!.status === 201) continue;
      const again = await post(request);
      assert.equal(again.status, 201, again.text);
      assert.equal(again.headers.get('idempotent-replayed'), null, 'served as new: the key was never used');
      assert.equal((await patients(practice.key, request.body, capped)).length, 1);
    }
  });

  test('under a latency target, answers slower than it lower the in-flight limit, past which requests are refused; quick answers raise it back to its ceiling', async () => {
    const practice = await steered.newPractice();
    const shedder = steered.deps.loadShedder;
    const get = () =>
      call(steered.baseUrl, 'GET', '/api/v1/patients?externalSystem=urn%3Atest&externalId=none', {
        token: practice.key,
      });
    assert.equal(shedder.maxInFlight, STEERED_CEILING);

    /** Sends n requests while the connections are held for STEERED_HOLD_MS; answers them all. */
    const slowly = async (n: number) => {
      const letGo = await holdConnections(steered);
      let answered = 0;
      const pending = Array.from({ length: n }, () =>
        get().finally(() => {
          answered += 1;
        }),
      );
      try {
        await eventually('every request is admitted or refused', () => shedder.inFlight + answered === n);
        await sleep(STEERED_HOLD_MS);
      } finally {
        await letGo();
      }
      return Promise.all(pending);
    };

    // Three requests wait behind the held connections and answer after the target: the limit comes down.
    const first = await slowly(3);
    assert.deepEqual(
      first.map((answer) => answer.status),
      [200, 200, 200],
    );
    const lowered = shedder.maxInFlight;
    assert.ok(lowered < STEERED_CEILING, `lowered to ${lowered}`);

    // A burst as large as the ceiling: only the lowered limit's worth is admitted, the rest refused.
    const shedBefore = shedder.shed.in_flight_limit;
    const burst = await slowly(STEERED_CEILING);
    const served = burst.filter((answer) => answer.status === 200).length;
    assert.equal(served, lowered, 'as many served as the lowered limit');
    for (const answer of burst.filter((each) => each.status !== 200)) {
      assert.equal(answer.status, 503, answer.text);
      assert.equal(answer.headers.get('retry-after'), '1');
    }
    assert.equal(shedder.shed.in_flight_limit - shedBefore, STEERED_CEILING - lowered);
    const metrics = (await steered.admin('GET', '/metrics')).body;
    assert.equal(metrics.requestsInFlight.limit, shedder.maxInFlight);
    assert.equal(metrics.requestsInFlight.ceiling, STEERED_CEILING);
    assert.equal(metrics.requestsInFlight.latencyTargetMs, STEERED_TARGET_MS);

    // Quick answers, one after another, raise it back to the ceiling.
    const deadline = Date.now() + 60_000;
    while (shedder.maxInFlight < STEERED_CEILING) {
      if (Date.now() > deadline) assert.fail(`the limit stayed at ${shedder.maxInFlight}`);
      assert.equal((await get()).status, 200);
    }
    assert.equal(shedder.maxInFlight, STEERED_CEILING);
  });

  test('while the claims backlog is older than its bound, a claim sent is answered 503 and changes nothing, and a bill with submitClaim creates its invoice and skips the claim saying why; others are served; once the backlog clears, claims are served again', async () => {
    const w = await newWorld(backlogged);
    const metrics = async () => (await backlogged.admin('GET', '/metrics')).body;
    const before = await metrics();
    // A claim queued, which no worker takes here, made due well past the bound.
    const waiting = await issuedInvoice(w);
    await sendClaim(w, waiting.invoiceId);
    await asOperator(backlogged.db, (trx) =>
      sql`UPDATE jobs SET run_at = now() - make_interval(secs => ${(3 * BACKLOG_BOUND_MS) / 1000})
           WHERE practice_id = ${w.practiceId} AND lane = 'claims' AND state = 'queued'`.execute(trx),
    );
    const { invoiceId } = await issuedInvoice(w);
    const key = uniqueKey();
    const claim = () => w.api('POST', `/invoices/${invoiceId}/claim`, { body: {}, idempotencyKey: key });
    // The backlog is read when such a request arrives, in the background: the answers turn to 503 once
    // the reading is in (a request for an invoice that does not exist wakes it, changing nothing).
    await eventuallyAsync('the claims backlog is read and judged', async () => {
      const probe = await w.api('POST', '/invoices/inv_00000000000000000000000/claim', { body: {} });
      return probe.status === 503;
    });
    const refused = await claim();
    assert.equal(refused.status, 503, refused.text);
    assert.equal(refused.headers.get('retry-after'), '1');
    assert.equal(refused.body.code, 'service_unavailable');
    assert.equal((await w.api('GET', `/invoices/${invoiceId}/claim`)).status, 404, 'no claim was sent');
    // A bill that would send its claim is refused once its body is read, having created nothing; one
    // that sends none, and other work that queues no claim, are served meanwhile.
    const { patientId } = await newPatient(w);
    const visit = () => {
      const end = backlogged.clock.now().getTime() - 60 * 60 * 1000;
      return createEncounter(w.api, {
        patientId,
        practitionerId: w.practitionerId,
        start: new Date(end - 30 * 60 * 1000).toISOString(),
        end: new Date(end).toISOString(),
        diagnoses: [{ code: 'J06.9' }],
        procedures: [{ code: '0190', diagnosisCodes: ['J06.9'] }],
      });
    };
    // A bill that asks for its claim creates and issues its invoice all the same, and says why the
    // claim was not sent (the contract: a bill creates the invoice whether or not claiming succeeds).
    const claimedVisit = await visit();
    const heldBackBill = await bill(w.api, claimedVisit.id, { issue: true, submitClaim: true });
    assert.equal(heldBackBill.status, 201, heldBackBill.text);
    assert.equal(heldBackBill.body.issued, true);
    assert.equal(heldBackBill.body.invoice.status, 'issued');
    assert.equal(heldBackBill.body.invoice.claimStatus, null);
    assert.equal(heldBackBill.body.claimQueued, false);
    assert.match(heldBackBill.body.claimSkippedReason, /claims queue is behind/);
    const plainBill = await bill(w.api, (await visit()).id, { issue: true });
    assert.equal(plainBill.status, 201, plainBill.text);
    const patient = await w.api('POST', '/patients', { body: patientBody(), idempotencyKey: uniqueKey() });
    assert.equal(patient.status, 201, patient.text);
    const shed = (await metrics()).requestsShed;
    assert.ok(shed.claimBacklog - before.requestsShed.claimBacklog >= 3, 'each refusal is counted');

    // The worker catches up: claims are taken again, the refused one with its key served as new.
    await backlogged.worker.drain();
    let sent!: Awaited<ReturnType<typeof claim>>;
    await eventuallyAsync('a claim is served once the backlog has cleared', async () => {
      sent = await claim();
      return sent.status !== 503;
    });
    assert.equal(sent.status, 202, sent.text);
    assert.equal(sent.headers.get('idempotent-replayed'), null, 'served as new: the key was never used');
    // The bill's invoice is claimed now, as its claimSkippedReason says.
    const claimedLater = await w.api('POST', `/invoices/${heldBackBill.body.invoice.id}/claim`, { body: {} });
    assert.equal(claimedLater.status, 202, claimedLater.text);
    await backlogged.worker.drain();
    assert.equal((await w.api('GET', `/invoices/${invoiceId}/claim`)).body.status, 'accepted');
  });

  test("a practice whose webhook deliveries are far behind still has its claims sent (202) and its bill's claim queued; its deliveries queue behind its own cap", async () => {
    const behind = await newWorld(backlogged);
    const receiver = await Receiver.forService(backlogged);
    try {
      await addEndpoint(backlogged, behind.practiceId, receiver);
      // An issued invoice queues its webhook delivery, which no worker takes here; made due long ago.
      const { invoiceId } = await issuedInvoice(behind);
      const delivered = await asOperator(backlogged.db, (trx) =>
        sql`UPDATE jobs SET run_at = now() - make_interval(secs => ${(30 * BACKLOG_BOUND_MS) / 1000})
             WHERE practice_id = ${behind.practiceId} AND lane = 'webhooks' AND state = 'queued'`.execute(
          trx,
        ),
      );
      assert.ok(Number(delivered.numAffectedRows) >= 1, 'a delivery is queued');
      const shedBefore = { ...backlogged.deps.loadShedder.shed };
      for (let i = 0; i < 3; i += 1) {
        const probe = await behind.api('POST', '/invoices/inv_00000000000000000000000/claim', { body: {} });
        assert.equal(probe.status, 404, probe.text);
      }
      const sent = await behind.api('POST', `/invoices/${invoiceId}/claim`, {
        body: {},
        idempotencyKey: uniqueKey(),
      });
      assert.equal(sent.status, 202, sent.text);
      const { patientId } = await newPatient(behind);
      const encounter = await recordVisit(behind, patientId);
      const billed = await bill(behind.api, encounter.id, { issue: true, submitClaim: true });
      assert.equal(billed.status, 201, billed.text);
      assert.equal(billed.body.claimQueued, true, billed.text);
      assert.deepEqual(backlogged.deps.loadShedder.shed, shedBefore, 'nothing was refused');
      await backlogged.worker.drain();
      assert.ok(receiver.requests.length >= 1, 'the delivery reached the receiver');
    } finally {
      await receiver.close();
    }
  });
});
