// The queue for a database's connections (src/platform/db/connection-waits.ts) without a database, on
// a clock the test moves: places go in the order asked; a newcomer's wait is predicted from the queue
// ahead of it and the recent hold time; under a pending bound a wait predicted to last the bound is
// refused at once, one that reaches it is refused and leaves the queue, and every later wait of the
// unit is refused with the same error; once a transaction of the unit had its connection, its waits
// are no longer bounded.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  ConnectionGate,
  FirstConnectionBound,
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

/** A bound that refuses with an error naming why, and notes each refusal and connection. */
function boundOf(boundMs: number) {
  const refusals: { predictedMs: number | null; waitedMs: number }[] = [];
  const connected: number[] = [];
  const bound = new FirstConnectionBound(
    boundMs,
    (why) => {
      refusals.push(why);
      return new Error(`refused: ${JSON.stringify(why)}`);
    },
    (waitedMs) => connected.push(waitedMs),
  );
  return { bound, refusals, connected };
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
    const { bound, refusals } = boundOf(250);
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
});
