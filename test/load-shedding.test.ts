// Load shedding in front of the public API: while work has waited longer than the bound for a
// database connection, or the event loop lags past its bound, a request is answered 503
// service_unavailable with Retry-After at once, before authentication, idempotency or any database
// work, so nothing of it was done: the same request with the same Idempotency-Key afterwards is
// served as new, not replayed. Each refusal is counted. The client package waits out the Retry-After
// and its retry succeeds.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { longestConnectionWaitMs } from '../src/platform/db/connection-waits.ts';
import { asOperator } from '../src/platform/db/transaction.ts';
import {
  call,
  describeEachBackend,
  patientBody,
  startService,
  type TestService,
  uniqueKey,
} from './harness.ts';
import { sdkClient } from './sdk-fixtures.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until check answers true (a bound against hanging, never a judgement of speed). */
async function eventually(what: string, check: () => boolean): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`never happened: ${what}`);
    await sleep(5);
  }
}

const POOL_SIZE = 2;

describeEachBackend('load shedding', (backend) => {
  // One service sheds on connection waits only, the other on event-loop lag only, so that neither
  // reason turns up in the other's test.
  let svc: TestService;
  let lagging: TestService;
  before(async () => {
    svc = await startService(backend, {
      poolSize: POOL_SIZE,
      env: { LOAD_SHED_CONNECTION_WAIT_MS: '20', LOAD_SHED_EVENT_LOOP_LAG_MS: '0' },
    });
    lagging = await startService(backend, {
      env: { LOAD_SHED_CONNECTION_WAIT_MS: '0', LOAD_SHED_EVENT_LOOP_LAG_MS: '200' },
    });
  });
  after(async () => {
    await Promise.all([svc.close(), lagging.close()]);
  });

  /**
   * Holds every connection of the service's database in open transactions, and queues one more
   * transaction behind them until it has waited past the bound; answers how to let them all go.
   */
  async function saturate(): Promise<() => Promise<void>> {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let holding = 0;
    const holders = Array.from({ length: backend === 'postgres' ? POOL_SIZE : 1 }, () =>
      asOperator(svc.db, async (trx) => {
        await sql`SELECT 1`.execute(trx);
        holding += 1;
        await gate;
      }),
    );
    await eventually('every connection is held', () => holding === holders.length);
    const waiting = asOperator(svc.db, (trx) => sql`SELECT 1`.execute(trx));
    await eventually('a transaction has waited past the bound', () => longestConnectionWaitMs(svc.db) >= 25);
    return async () => {
      release();
      await Promise.all([...holders, waiting]);
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
});
