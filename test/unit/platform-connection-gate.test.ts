// The queue for a database's connections (src/platform/db/connection-waits.ts) without a database, on
// a clock the test moves: places go in the order asked; a newcomer's wait is predicted from the queue
// ahead of it and the recent hold time; under a pending bound a wait predicted to last the bound is
// refused at once, one that reaches it is refused and leaves the queue, and every later wait of the
// unit is refused with the same error; the bound is one deadline (arrival plus the bound) for all the
// unit's waits; once a transaction of the unit had its connection, its waits are no longer bounded;
// once a wait of the unit was refused, no transaction of it begins, even one that had its connection;
// work run outside the bound is neither bounded nor refused.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { DatabaseConnection, Dialect, Driver, TransactionSettings } from 'kysely';
import {
  ConnectionGate,
  FirstConnectionBound,
  outsideConnectionBound,
  runWithConnectionBound,
} from '../../src/platform/db/connection-waits.ts';

function gateOf(size: number) {
  let at = 0;
  const gate = new ConnectionGate(size, () => at);
  return {
    gate,
    advance(ms: number) {
      at += ms;
    },
  };
}

/**
 * A bound that refuses with an error naming why, and notes each refusal and connection; its unit
 * arrived at arrivedAt on the test's clock.
 */
function boundOf(boundMs: number, arrivedAt = 0) {
  const refusals: { predictedMs: number | null; waitedMs: number }[] = [];
  const connected: number[] = [];
  const bound = new FirstConnectionBound(
    boundMs,
    (why) => {
      refusals.push(why);
      return new Error(`refused: ${JSON.stringify(why)}`);
    },
    (waitedMs) => connected.push(waitedMs),
    arrivedAt,
  );
  return { bound, refusals, connected };
}

/** The gate's driver in front of a driver that only notes what it was asked to do. */
function gatedDriverOf(gate: ConnectionGate) {
  const steps: string[] = [];
  const connection: DatabaseConnection = {
    executeQuery: () => Promise.reject(new Error('no statements here')),
    streamQuery: () => {
      throw new Error('no statements here');
    },
  };
  const inner: Driver = {
    init: async () => {},
    acquireConnection: async () => connection,
    beginTransaction: async (_connection: DatabaseConnection, _settings: TransactionSettings) => {
      steps.push('BEGIN');
    },
    commitTransaction: async () => {
      steps.push('COMMIT');
    },
    rollbackTransaction: async () => {
      steps.push('ROLLBACK');
    },
    releaseConnection: async () => {
      steps.push('release');
    },
    destroy: async () => {},
  };
  const dialect = { createDriver: () => inner } as unknown as Dialect;
  return { driver: gate.dialect(dialect).createDriver(), steps };
}

const settled = () => new Promise((resolve) => setImmediate(resolve));

describe('connection gate', () => {
  test('places are given in the order asked, and a wait lasts until a holder leaves', async () => {
    const { gate, advance } = gateOf(1);
    const first = await gate.enter();
    const order: string[] = [];
    const second = gate.enter().then((since) => {
      order.push('second');
      return since;
    });
    const third = gate.enter().then(() => order.push('third'));
    await settled();
    assert.equal(gate.waiters, 2);
    advance(40);
    assert.equal(gate.longestWaitMs(), 40);
    gate.leave(first);
    const since = await second;
    await settled();
    assert.deepEqual(order, ['second']);
    gate.leave(since);
    await third;
    assert.deepEqual(order, ['second', 'third']);
    assert.equal(gate.waiters, 0);
  });

  test("a newcomer's wait is predicted from the queue ahead and the recent hold time", async () => {
    const { gate, advance } = gateOf(2);
    assert.equal(gate.predictedWaitMs(), 0, 'a free connection: no wait');
    const a = await gate.enter();
    const b = await gate.enter();
    advance(100);
    gate.leave(a);
    gate.leave(b);
    assert.equal(gate.recentHoldMs, 100);
    assert.equal(gate.predictedWaitMs(), 0);
    await gate.enter();
    await gate.enter();
    // Both held: a newcomer waits for one hold to end, at two connections' pace.
    assert.equal(gate.predictedWaitMs(), 50);
    void gate.enter();
    void gate.enter();
    await settled();
    // Two ahead of it: three holds must end.
    assert.equal(gate.predictedWaitMs(), 150);
  });

  test('under a bound, a wait predicted to last it is refused at once, and so is every later wait of the unit', async () => {
    const { gate, advance } = gateOf(1);
    const held = await gate.enter();
    advance(300);
    gate.leave(held);
    await gate.enter();
    const { bound, refusals } = boundOf(250, gate.now());
    // One hold of 300 ms to wait for: predicted past the bound of 250.
    await assert.rejects(
      runWithConnectionBound(bound, () => gate.enter()),
      /refused/,
    );
    assert.deepEqual(refusals, [{ predictedMs: 300, waitedMs: 0 }]);
    assert.equal(gate.waiters, 0, 'it never queued');
    assert.equal(bound.pending, false);
    // Refused once, refused always, even with a connection free, and the refusal is made once.
    const free = gateOf(1).gate;
    await assert.rejects(
      runWithConnectionBound(bound, () => free.enter()),
      /refused/,
    );
    assert.equal(refusals.length, 1);
  });

  test('under a bound, a wait that reaches it is refused and leaves the queue; the holder is not disturbed', async () => {
    const { gate, advance } = gateOf(1);
    const held = await gate.enter();
    const { bound, refusals } = boundOf(30);
    const waiting = runWithConnectionBound(bound, () => gate.enter());
    await settled();
    assert.equal(gate.waiters, 1);
    advance(30);
    await assert.rejects(waiting, /refused/);
    assert.deepEqual(refusals, [{ predictedMs: null, waitedMs: 30 }]);
    assert.equal(gate.waiters, 0);
    // The place goes to the next one asking, not to the refused waiter.
    const next = gate.enter();
    gate.leave(held);
    await next;
    assert.equal(gate.waiters, 0);
  });

  test('once a transaction of the unit had its connection, its waits are no longer bounded', async () => {
    const { gate, advance } = gateOf(1);
    const { bound, refusals, connected } = boundOf(30);
    const held = await gate.enter();
    const waiting = runWithConnectionBound(bound, () => gate.enter());
    await settled();
    // Another transaction of the unit has its connection while this wait goes on past the bound.
    bound.connected(12);
    assert.deepEqual(connected, [12]);
    advance(500);
    await new Promise((resolve) => setTimeout(resolve, 60));
    assert.equal(gate.waiters, 1, 'still waiting past the bound');
    gate.leave(held);
    await waiting;
    assert.deepEqual(refusals, []);
    bound.connected(99);
    assert.deepEqual(connected, [12], 'the first connection is heard once');
  });

  test('the bound is one deadline for all the waits of its unit: each wait gets the time left', async () => {
    const { gate, advance } = gateOf(1);
    const warm = await gate.enter();
    advance(50);
    gate.leave(warm);
    assert.equal(gate.recentHoldMs, 50);
    const { bound, refusals } = boundOf(100, gate.now());
    const held = await gate.enter();
    // The unit's earlier waits and work took 60 of its 100 ms: a wait predicted at 50 is past the 40 left.
    advance(60);
    assert.equal(gate.predictedWaitMs(), 50);
    await assert.rejects(
      runWithConnectionBound(bound, () => gate.enter()),
      /refused/,
    );
    assert.deepEqual(refusals, [{ predictedMs: 50, waitedMs: 0 }]);
    gate.leave(held);
  });

  test('a connection had after the deadline is given back unused, though its own wait was shorter than the bound', async () => {
    const { gate, advance } = gateOf(1);
    const { driver, steps } = gatedDriverOf(gate);
    const { bound } = boundOf(1000, gate.now());
    const held = await gate.enter();
    advance(700);
    const acquiring = runWithConnectionBound(bound, () => driver.acquireConnection());
    await settled();
    assert.equal(gate.waiters, 1);
    // 400 ms of waiting: the deadline (arrival + 1000) has passed at 1100.
    advance(400);
    gate.leave(held);
    await assert.rejects(acquiring, /refused/);
    assert.deepEqual(steps, ['release'], 'the connection went back unused');
    assert.equal(gate.waiters, 0);
    await gate.enter();
  });

  test('once a wait of the unit was refused, no transaction of it begins, even one that had its connection', async () => {
    const { gate, advance } = gateOf(2);
    const { driver, steps } = gatedDriverOf(gate);
    const warm = await gate.enter();
    // A recent hold of 600 ms over two connections: a newcomer's wait is predicted at 300.
    advance(600);
    gate.leave(warm);
    const { bound, connected } = boundOf(250, gate.now());
    // The unit's first transaction has its connection (a place was free) ...
    const connection = await runWithConnectionBound(bound, () => driver.acquireConnection());
    // ... while another of its waits, with every place taken, is refused before BEGIN goes out.
    const other = await gate.enter();
    await assert.rejects(
      runWithConnectionBound(bound, () => gate.enter()),
      /refused/,
    );
    const settings: TransactionSettings = {};
    await assert.rejects(driver.beginTransaction(connection, settings), /refused/);
    await driver.releaseConnection(connection);
    assert.deepEqual(steps, ['release'], 'nothing of the unit ran');
    assert.deepEqual(connected, [], 'the refused unit never had its first connection');
    gate.leave(other);
    assert.equal(gate.waiters, 0);
  });

  test('once a transaction of the unit has begun, a later wait of it is never refused, however long predicted', async () => {
    const { gate, advance } = gateOf(1);
    const { driver, steps } = gatedDriverOf(gate);
    const warm = await gate.enter();
    advance(300);
    gate.leave(warm);
    const { bound, refusals, connected } = boundOf(250, gate.now());
    const connection = await runWithConnectionBound(bound, () => driver.acquireConnection());
    await driver.beginTransaction(connection, {});
    assert.deepEqual(connected, [0]);
    // Its next transaction waits for the first one's connection: predicted 300, past the bound.
    const next = runWithConnectionBound(bound, () => gate.enter());
    await settled();
    assert.equal(gate.waiters, 1);
    await driver.releaseConnection(connection);
    await next;
    assert.deepEqual(refusals, []);
    assert.deepEqual(steps, ['BEGIN', 'release']);
  });

  test('work run outside the bound is neither refused by it nor refuses its unit', async () => {
    const { gate, advance } = gateOf(1);
    const warm = await gate.enter();
    advance(300);
    gate.leave(warm);
    const { bound, refusals } = boundOf(250, gate.now());
    const held = await gate.enter();
    // Under the bound a wait predicted at 300 would be refused; outside it, it waits its turn.
    const background = runWithConnectionBound(bound, () => outsideConnectionBound(() => gate.enter()));
    await settled();
    assert.equal(gate.waiters, 1);
    assert.equal(bound.pending, true);
    gate.leave(held);
    await background;
    assert.deepEqual(refusals, []);
  });
});
