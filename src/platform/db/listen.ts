// Owns LISTEN on PostgreSQL: a connection of its own per channel, to DATABASE_LISTEN_URL (default
// DATABASE_URL), opened again after it breaks or goes deaf, and a heartbeat that proves notifications
// really arrive. A connection can accept LISTEN and still never deliver: behind a pooler in
// transaction mode the LISTEN runs on a server connection that goes back to the pool at once, a
// listen URL naming another database hears none of this one's commits, and a connection whose peer
// vanished without a reset (a NAT entry dropped, a network split, a failover) stays open and hears
// nothing. So listening counts as working only while this listener hears its own heartbeat: every
// period it sends a NOTIFY the way the service's commits do (through its pool, on DATABASE_URL), on a
// channel of its own. A connection deaf for RECONNECT_AFTER_MISSED_BEATS periods is closed and opened
// again, waiting longer each time it stays deaf (up to RELISTEN_MAX_MS), so that a pooler in
// transaction mode costs a reconnection every half minute, not every few seconds.
// Never decides anything itself: it tells its caller when to trust notifications and when not to.
import pg from 'pg';
import { randomToken } from '../ids.ts';
import { countRoundTrip } from './statement-counts.ts';

/**
 * Each listener's heartbeat travels on a channel of its own, this prefix then a random token, so that
 * a listener receives its own heartbeats only (not every process's); the payload is its sequence number.
 */
export const HEARTBEAT_CHANNEL_PREFIX = 'practice_billing_heartbeat_';

/** The default heartbeat period (DATABASE_LISTEN_HEARTBEAT_MS). */
export const DEFAULT_HEARTBEAT_MS = 2000;

/** The wait before opening a listening connection again: doubled after each one that stays deaf. */
const RELISTEN_AFTER_MS = 1000;
const RELISTEN_MAX_MS = 30_000;
const CLOSE_WAIT_MS = 1000;

/**
 * Listening stops counting as working when none of the last this-many heartbeats was heard: the
 * oldest of them had this many periods to arrive. A break is so noticed within one period plus this
 * many (the break may come just after a beat was heard).
 */
export const MISSED_BEATS = 2;

/**
 * A connection on which none of the last this-many heartbeats was heard is closed and opened again:
 * its peer may be gone without a word (no reset ever arrives), which would otherwise keep it deaf
 * until the process restarts. One period after listening stopped counting as working.
 */
export const RECONNECT_AFTER_MISSED_BEATS = MISSED_BEATS + 1;

export interface ListenOptions {
  /** The connection to LISTEN on: a direct one, never through a pooler in transaction mode. */
  url: string;
  applicationName: string;
  heartbeatMs: number;
  /** Sends a NOTIFY as the service's commits do (its pool on DATABASE_URL); may fail. */
  notify(channel: string, payload: string): Promise<unknown>;
  /** Told once when heartbeats go unheard on a connection that is up, and when they are heard again. */
  log?: ListenLog | undefined;
}

export interface ListenLog {
  warn(details: object, message: string): void;
  info(details: object, message: string): void;
}

/**
 * Ends a connection, and drops its socket if the peer has not closed it within CLOSE_WAIT_MS: end()
 * waits for the peer, which a vanished one never answers.
 */
async function close(client: pg.Client): Promise<void> {
  const socket = (client as unknown as { connection?: { stream?: { destroy?(): void } } }).connection?.stream;
  const timer = setTimeout(() => socket?.destroy?.(), CLOSE_WAIT_MS);
  await client.end().catch(() => {});
  clearTimeout(timer);
}

/** A channel name as a quoted identifier, for LISTEN and UNLISTEN. */
export function quoted(channel: string): string {
  return `"${channel.replaceAll('"', '""')}"`;
}

function listenTo(client: pg.Client, channel: string): Promise<unknown> {
  countRoundTrip(1);
  return client.query(`LISTEN ${quoted(channel)}`);
}

/**
 * Calls onSignal with each payload of a NOTIFY on channel; with undefined when listening is proven to
 * work (its first heartbeat heard after LISTEN), again after each break; onLost when it stops working
 * (the connection broke, or heartbeats go unheard), until the next onSignal(undefined). Returns how
 * to stop.
 */
export function listenOn(
  options: ListenOptions,
  channel: string,
  onSignal: (payload: string | undefined) => void,
  onLost: (() => void) | undefined,
): () => Promise<void> {
  const listener = new Listener(options, channel, onSignal, onLost);
  listener.connect();
  return () => listener.stop();
}

/** One channel's listening: its connection, its heartbeat and what it has told its caller. */
class Listener {
  private readonly options: ListenOptions;
  private readonly channel: string;
  private readonly onSignal: (payload: string | undefined) => void;
  private readonly onLost: (() => void) | undefined;
  // Lowercase letters and digits: the channel is an identifier, quoted or not, and stays well below
  // PostgreSQL's 63 bytes.
  private readonly heartbeatChannel = `${HEARTBEAT_CHANNEL_PREFIX}${randomToken(12).toLowerCase()}`;
  private readonly timer: NodeJS.Timeout;
  private stopped = false;
  private client: pg.Client | undefined;
  /** Closes the current connection (client) and opens another after relistenMs. */
  private reopen: (() => void) | undefined;
  private relisten: NodeJS.Timeout | undefined;
  private relistenMs = RELISTEN_AFTER_MS;
  /** True while notifications are known to arrive: onSignal(undefined) was said, onLost not since. */
  private working = false;
  private sent = 0;
  private heard = 0;
  /** The value of sent when the current connection came up: beats before it do not count against it. */
  private sentBeforeClient = 0;
  /** Set once the connection is up but heartbeats go unheard; said in the log once. */
  private deaf = false;
  /** Set from a lost connection until another is listening; said in the log once each way. */
  private disconnected = false;

  constructor(
    options: ListenOptions,
    channel: string,
    onSignal: (payload: string | undefined) => void,
    onLost: (() => void) | undefined,
  ) {
    this.options = options;
    this.channel = channel;
    this.onSignal = onSignal;
    this.onLost = onLost;
    this.timer = setInterval(() => this.tick(), options.heartbeatMs);
    this.timer.unref();
  }

  private lose(): void {
    if (!this.working) return;
    this.working = false;
    this.onLost?.();
  }

  private beat(): void {
    if (!this.client || this.stopped) return;
    this.sent += 1;
    this.options.notify(this.heartbeatChannel, String(this.sent)).catch(() => {});
  }

  private hear(payload: string): void {
    const seq = Number(payload);
    if (!(seq > this.heard)) return;
    this.heard = seq;
    // Only a recent beat proves anything: one of the last MISSED_BEATS sent.
    if (!this.working && this.client && !this.stopped && this.heard > this.sent - MISSED_BEATS) {
      this.working = true;
      this.relistenMs = RELISTEN_AFTER_MS;
      if (this.deaf) this.options.log?.info({ channel: this.channel }, 'LISTEN hears its heartbeat again');
      this.deaf = false;
      this.onSignal(undefined);
    }
  }

  /** Each heartbeat period: judge the beats heard so far, then send the next. */
  private tick(): void {
    if (this.client && this.heard <= this.sent - MISSED_BEATS) {
      this.lose();
      if (!this.deaf) {
        this.deaf = true;
        this.options.log?.warn(
          { channel: this.channel, heartbeatMs: this.options.heartbeatMs },
          'LISTEN hears no heartbeat: notifications do not arrive (a pooler in transaction mode? DATABASE_LISTEN_URL must be a direct connection); not trusting them until they do',
        );
      }
      if (this.sent - Math.max(this.heard, this.sentBeforeClient) >= RECONNECT_AFTER_MISSED_BEATS) {
        // Deaf for long enough that the connection itself is suspect: open another.
        this.reopen?.();
        return;
      }
    }
    this.beat();
  }

  connect(): void {
    if (this.stopped) return;
    const c = new pg.Client({
      connectionString: this.options.url,
      connectionTimeoutMillis: 5000,
      application_name: `${this.options.applicationName}-listen`,
      // TCP keepalive probes, so that the operating system notices a vanished peer by itself too,
      // and a NAT entry in between stays alive.
      keepAlive: true,
      keepAliveInitialDelayMillis: 30_000,
    });
    let broken = false;
    const reconnect = (err?: unknown) => {
      if (broken) return;
      broken = true;
      this.dropped(c, err);
    };
    c.on('error', reconnect);
    c.on('end', reconnect);
    c.on('notification', (message) => {
      if (message.channel === this.heartbeatChannel) this.hear(message.payload ?? '');
      else this.onSignal(message.payload ?? '');
    });
    c.connect()
      // The channel's LISTEN last, so that pg_stat_activity shows which channel the connection serves.
      .then(() => listenTo(c, this.heartbeatChannel))
      .then(() => listenTo(c, this.channel))
      .then(() => {
        if (broken || this.stopped) return;
        this.client = c;
        this.reopen = reconnect;
        this.sentBeforeClient = this.sent;
        if (this.disconnected)
          this.options.log?.warn({ channel: this.channel }, 'LISTEN connection re-established');
        this.disconnected = false;
        // The first beat at once: listening counts from when it is heard, not a period later.
        this.beat();
      })
      .catch(reconnect);
  }

  /** A connection broke (or was found deaf): close it and open another after a backoff. */
  private dropped(c: pg.Client, err: unknown): void {
    if (this.client === c) {
      this.client = undefined;
      this.reopen = undefined;
      this.lose();
    }
    if (!this.stopped && !this.disconnected) {
      this.disconnected = true;
      this.options.log?.warn(
        {
          channel: this.channel,
          err: err instanceof Error ? { message: err.message } : undefined,
          retryMs: this.relistenMs,
        },
        'LISTEN connection lost: reconnecting with backoff; meanwhile the process polls for what notifications would have said',
      );
    }
    void close(c);
    if (!this.stopped) {
      this.relisten = setTimeout(() => this.connect(), this.relistenMs);
      this.relistenMs = Math.min(this.relistenMs * 2, RELISTEN_MAX_MS);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    clearTimeout(this.relisten);
    if (this.client) await close(this.client);
  }
}
