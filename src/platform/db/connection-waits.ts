// Owns waiting for a database connection: each Database has a ConnectionGate with as many places as
// it has connections (a PostgreSQL pool's size, the embedded database's one session), and every use
// of a connection (a transaction, a bare statement, a statement on the pool) takes a place first, in
// the order asked, so the queue for connections is this process's own: it knows who waits and for how
// long, can predict a newcomer's wait from the queue ahead and the recent hold time, and can take a
// waiter out of the queue. Read by load shedding (src/platform/http/load-shedding.ts) and the
// operator's metrics.
//
// A unit of work (an API request) can run under a FirstConnectionBound: one deadline, its arrival
// plus the bound, shared by all its waits until one of its transactions has a connection. Each such
// wait is refused when it is predicted to last past the time left, and in any case when the deadline
// comes, with the error the bound makes; nothing of it has run then, and no transaction of it begins
// afterwards. From its first transaction on, its waits are never cut: a later transaction may follow
// work already done. Bookkeeping before the work (asBookkeeping: the API key's look-up and last-use
// stamp) is bounded too, but does not count as the first transaction. Work the unit starts without
// waiting for it (outsideConnectionBound) is not bounded at all, and cannot refuse the unit.
import { AsyncLocalStorage } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';
import type {
  AbortableOperationOptions,
  DatabaseConnection,
  Dialect,
  Driver,
  QueryCompiler,
  TransactionSettings,
} from 'kysely';

/** Why a wait was refused: predicted to last predictedMs, or it had waited waitedMs. */
export interface RefusedWait {
  predictedMs: number | null;
  waitedMs: number;
}

/** The bound on a unit of work's waits for a connection, until its first transaction has one. */
export class FirstConnectionBound {
  readonly boundMs: number;
  /** Its arrival plus boundMs, on the gates' clock: no wait before its first transaction lasts past it. */
  readonly deadline: number;
  #state: 'waiting' | 'connected' | 'refused' = 'waiting';
  #refusal: Error | undefined;
  readonly #refuse: (why: RefusedWait) => Error;
  readonly #onConnected: (waitedMs: number) => void;

  /**
   * refuse makes the error a refused wait throws (called once: every later wait throws the same);
   * onConnected hears how long the first transaction waited for its connection; arrivedAt is when
   * the unit arrived, on the clock of the gates it will wait at (ConnectionGate.now).
   */
  constructor(
    boundMs: number,
    refuse: (why: RefusedWait) => Error,
    onConnected: (waitedMs: number) => void = () => {},
    arrivedAt: number = performance.now(),
  ) {
    this.boundMs = boundMs;
    this.deadline = arrivedAt + boundMs;
    this.#refuse = refuse;
    this.#onConnected = onConnected;
  }

  /** No transaction of the unit has had a connection yet, and none of its waits was refused. */
  get pending(): boolean {
    return this.#state === 'waiting';
  }

  /** The refusal, once a wait was refused: every later wait of the unit is refused with it. */
  get refusal(): Error | undefined {
    return this.#refusal;
  }

  /** How long a wait starting at `now` may last before the deadline. */
  leftMs(now: number): number {
    return this.deadline - now;
  }

  /** Asked only while pending (the gate checks): a unit whose transaction has begun is never refused. */
  refuse(why: RefusedWait): Error {
    if (!this.#refusal) {
      this.#state = 'refused';
      this.#refusal = this.#refuse(why);
    }
    return this.#refusal;
  }

  connected(waitedMs: number): void {
    if (this.#state !== 'waiting') return;
    this.#state = 'connected';
    this.#onConnected(waitedMs);
  }
}

const bounds = new AsyncLocalStorage<FirstConnectionBound>();

/** Runs fn, and everything it starts, under bound. */
export function runWithConnectionBound<T>(bound: FirstConnectionBound, fn: () => T): T {
  return bounds.run(bound, fn);
}

const bookkeeping = new AsyncLocalStorage<true>();

/**
 * Runs fn, and everything it starts, outside the bound of the unit of work calling it: for work the
 * unit does not wait for (a background refresh) or whose outcome is decided already (the audit row of
 * a refusal), whose waits must neither be cut nor refuse the unit.
 */
export function outsideConnectionBound<T>(fn: () => T): T {
  return bounds.exit(fn);
}

/**
 * Runs fn as bookkeeping before its unit's own work (looking up or stamping the API key it came
 * with): its waits are bounded as the unit's, but a transaction of it does not end the bound.
 */
export function asBookkeeping<T>(fn: () => T): T {
  return bookkeeping.run(true, fn);
}

/** How strongly the latest hold counts in the recent hold time (an exponentially weighted mean). */
const HOLD_WEIGHT = 0.1;

interface Waiter {
  since: number;
  grant: () => void;
}

export class ConnectionGate {
  /** How many connections there are: places held at once. */
  readonly size: number;
  #held = 0;
  /** Insertion-ordered: the first is the one waiting longest, and the next to be let in. */
  readonly #waiting = new Set<Waiter>();
  #recentHoldMs = 0;
  /** Milliseconds on a monotonic clock. */
  readonly now: () => number;
  /** Hears how long each entry waited for its place, in milliseconds (the operator's metrics). */
  onWaited: ((waitedMs: number) => void) | undefined;

  /** now: milliseconds on a monotonic clock (a test may drive its own). */
  constructor(size: number, now: () => number = () => performance.now()) {
    this.size = size;
    this.now = now;
  }

  /** How many places are held now: connections in use. */
  get inUse(): number {
    return this.#held;
  }

  /** How many wait for a connection now. */
  get waiters(): number {
    return this.#waiting.size;
  }

  /** How long a connection was held lately, in milliseconds (a weighted mean of the latest holds). */
  get recentHoldMs(): number {
    return this.#recentHoldMs;
  }

  /** How long the longest current wait has lasted, in milliseconds (0: none). */
  longestWaitMs(): number {
    for (const waiter of this.#waiting) return this.now() - waiter.since;
    return 0;
  }

  /**
   * How long a newcomer would wait: none while a connection is free; else until as many holds end as
   * there are waiters ahead of it, plus one, at the pace of the recent hold time over the connections.
   */
  predictedWaitMs(): number {
    if (this.#held < this.size && this.#waiting.size === 0) return 0;
    return ((this.#waiting.size + 1) * this.#recentHoldMs) / this.size;
  }

  /**
   * Takes a place, waiting in turn; answers when it was asked for, for leave(). Under a pending
   * bound (the one the caller runs under, unless given), throws the bound's refusal instead when the
   * wait is predicted to last the time left before its deadline or more, or once the deadline comes.
   * A refused bound refuses every later wait (no transaction of its unit has begun: see GatedDriver).
   */
  async enter(bound: FirstConnectionBound | undefined = bounds.getStore()): Promise<number> {
    const asked = this.now();
    if (bound?.refusal) throw bound.refusal;
    if (this.#held < this.size && this.#waiting.size === 0) {
      this.#held += 1;
      this.onWaited?.(0);
      return asked;
    }
    if (bound?.pending) {
      const predictedMs = this.predictedWaitMs();
      if (predictedMs >= bound.leftMs(asked)) throw bound.refuse({ predictedMs, waitedMs: 0 });
    }
    await new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { since: asked, grant: resolve };
      this.#waiting.add(waiter);
      if (!bound?.pending) return;
      const expire = () => {
        // Another wait of the unit had its connection meanwhile: this one is no longer bounded.
        if (!bound.pending && !bound.refusal) return;
        this.#waiting.delete(waiter);
        reject(bound.refuse({ predictedMs: null, waitedMs: this.now() - asked }));
      };
      const timer = setTimeout(expire, Math.max(0, bound.leftMs(asked)));
      waiter.grant = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.onWaited?.(this.now() - asked);
    return asked;
  }

  /** Gives the place taken by enter() (at `since`) to the next waiter, and notes how long it was held. */
  leave(heldSince: number): void {
    const heldMs = this.now() - heldSince;
    this.#recentHoldMs =
      this.#recentHoldMs === 0 ? heldMs : this.#recentHoldMs + HOLD_WEIGHT * (heldMs - this.#recentHoldMs);
    const next = this.#waiting.values().next();
    if (next.done) {
      this.#held -= 1;
      return;
    }
    this.#waiting.delete(next.value);
    next.value.grant();
  }

  /** Runs use holding a place (a statement outside Kysely, such as one on the pool). */
  async using<T>(use: () => Promise<T>): Promise<T> {
    await this.enter();
    const since = this.now();
    try {
      return await use();
    } finally {
      this.leave(since);
    }
  }

  /** A Kysely dialect like dialect whose connections are taken through this gate. */
  dialect(dialect: Dialect): Dialect {
    return {
      // A single connection's users are put in order by this gate (of one place), not by Kysely's
      // own lock, which would make them wait where the gate cannot see them.
      createAdapter: () =>
        new Proxy(dialect.createAdapter(), {
          get: (adapter, name) => {
            if (name === 'supportsMultipleConnections') return true;
            const value: unknown = Reflect.get(adapter, name, adapter);
            return typeof value === 'function' ? value.bind(adapter) : value;
          },
        }),
      createDriver: () => new GatedDriver(dialect.createDriver(), this),
      createIntrospector: (db) => dialect.createIntrospector(db),
      createQueryCompiler: () => dialect.createQueryCompiler(),
    };
  }
}

type CompileQuery = QueryCompiler['compileQuery'];

/**
 * A connection handed out: since when it is held, how long it was waited for, the bound it ran under,
 * and whether its transaction would end that bound (bookkeeping does not).
 */
interface Lease {
  heldSince: number;
  waitedMs: number;
  bound: FirstConnectionBound | undefined;
  endsBound: boolean;
}

/**
 * Kysely's driver behind a gate: a connection is asked of the inner driver only once a place is had,
 * and the place is given back when the connection is. A transaction that begins ends the bound it ran
 * under (its unit has its first connection); a bare statement does not. A transaction whose unit was
 * refused meanwhile (another of its waits, while this one had its place) does not begin: Kysely gives
 * the connection back, and nothing of the unit has run.
 */
class GatedDriver implements Driver {
  readonly #inner: Driver;
  readonly #gate: ConnectionGate;
  readonly #leases = new WeakMap<DatabaseConnection, Lease>();

  constructor(inner: Driver, gate: ConnectionGate) {
    this.#inner = inner;
    this.#gate = gate;
  }

  init(options?: AbortableOperationOptions): Promise<void> {
    return this.#inner.init(options);
  }

  async acquireConnection(options?: AbortableOperationOptions): Promise<DatabaseConnection> {
    const bound = bounds.getStore();
    const asked = await this.#gate.enter(bound);
    let connection: DatabaseConnection;
    try {
      connection = await this.#inner.acquireConnection(options);
    } catch (error) {
      this.#gate.leave(this.#gate.now());
      throw error;
    }
    const heldSince = this.#gate.now();
    const waitedMs = heldSince - asked;
    if (bound?.pending && heldSince >= bound.deadline) {
      // Had only once the deadline had passed (the place came just in time, the connection late):
      // given back unused.
      await this.#inner.releaseConnection(connection).finally(() => this.#gate.leave(heldSince));
      throw bound.refuse({ predictedMs: null, waitedMs });
    }
    this.#leases.set(connection, { heldSince, waitedMs, bound, endsBound: !bookkeeping.getStore() });
    return connection;
  }

  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const lease = this.#leases.get(connection);
    const refusal = lease?.bound?.refusal;
    if (refusal) return Promise.reject(refusal);
    if (lease?.endsBound) lease.bound?.connected(lease.waitedMs);
    return this.#inner.beginTransaction(connection, settings);
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return this.#inner.commitTransaction(connection);
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    return this.#inner.rollbackTransaction(connection);
  }

  savepoint(connection: DatabaseConnection, name: string, compile: CompileQuery): Promise<void> {
    return this.#savepointStep('savepoint', connection, name, compile);
  }

  rollbackToSavepoint(connection: DatabaseConnection, name: string, compile: CompileQuery): Promise<void> {
    return this.#savepointStep('rollbackToSavepoint', connection, name, compile);
  }

  releaseSavepoint(connection: DatabaseConnection, name: string, compile: CompileQuery): Promise<void> {
    return this.#savepointStep('releaseSavepoint', connection, name, compile);
  }

  async #savepointStep(
    step: 'savepoint' | 'rollbackToSavepoint' | 'releaseSavepoint',
    connection: DatabaseConnection,
    name: string,
    compile: CompileQuery,
  ): Promise<void> {
    const run = this.#inner[step];
    if (!run) throw new Error('this driver has no savepoints');
    return run.call(this.#inner, connection, name, compile);
  }

  async releaseConnection(
    connection: DatabaseConnection,
    options?: AbortableOperationOptions,
  ): Promise<void> {
    const lease = this.#leases.get(connection);
    this.#leases.delete(connection);
    try {
      await this.#inner.releaseConnection(connection, options);
    } finally {
      if (lease) this.#gate.leave(lease.heldSince);
    }
  }

  destroy(options?: AbortableOperationOptions): Promise<void> {
    return this.#inner.destroy(options);
  }
}
