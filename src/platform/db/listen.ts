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

/**
 * Calls onSignal with each payload of a NOTIFY on channel; with undefined when listening is proven to
 * work (its first heartbeat heard after LISTEN), again after each break; onLost when it stops working
 * (the connection broke, or heartbeats go unheard), until the next onSignal(undefined). Returns how
 * to stop.
 */
function listenTo(client: pg.Client, channel: string): Promise<unknown> {
  countRoundTrip(1);
  return client.query(`LISTEN ${quoted(channel)}`);
}

export function listenOn(
  options: ListenOptions,
  channel: string,
  onSignal: (payload: string | undefined) => void,
  onLost: (() => void) | undefined,
): () => Promise<void> {
  // Lowercase letters and digits: the channel is an identifier, quoted or not, and stays well below
  // PostgreSQL's 63 bytes.
  const heartbeatChannel = `${HEARTBEAT_CHANNEL_PREFIX}${randomToken(12).toLowerCase()}`;
  let stopped = false;
  let client: pg.Client | undefined;
  /** Closes the current connection (client) and opens another after relistenMs. */
  let reopen: (() => void) | undefined;
  let relisten: NodeJS.Timeout | undefined;
  let relistenMs = RELISTEN_AFTER_MS;
  /** True while notifications are known to arrive: onSignal(undefined) was said, onLost not since. */
  let working = false;
  let sent = 0;
  let heard = 0;
  /** The value of sent when the current connection came up: beats before it do not count against it. */
  let sentBeforeClient = 0;
  /** Set once the connection is up but heartbeats go unheard; said in the log once. */
  let deaf = false;
  /** Set from a lost connection until another is listening; said in the log once each way. */
  let disconnected = false;

  const lose = () => {
    if (!working) return;
    working = false;
    onLost?.();
  };

  const beat = () => {
    if (!client || stopped) return;
    sent += 1;
    options.notify(heartbeatChannel, String(sent)).catch(() => {});
  };

  const hear = (payload: string) => {
    const seq = Number(payload);
    if (!(seq > heard)) return;
    heard = seq;
    // Only a recent beat proves anything: one of the last MISSED_BEATS sent.
    if (!working && client && !stopped && heard > sent - MISSED_BEATS) {
      working = true;
      relistenMs = RELISTEN_AFTER_MS;
      if (deaf) options.log?.info({ channel }, 'LISTEN hears its heartbeat again');
      deaf = false;
      onSignal(undefined);
    }
  };

  const timer = setInterval(() => {
    if (client && heard <= sent - MISSED_BEATS) {
      lose();
      if (!deaf) {
        deaf = true;
        options.log?.warn(
          { channel, heartbeatMs: options.heartbeatMs },
          'LISTEN hears no heartbeat: notifications do not arrive (a pooler in transaction mode? DATABASE_LISTEN_URL must be a direct connection); not trusting them until they do',
        );
      }
      if (sent - Math.max(heard, sentBeforeClient) >= RECONNECT_AFTER_MISSED_BEATS) {
        // Deaf for long enough that the connection itself is suspect: open another.
        reopen?.();
        return;
      }
    }
    beat();
  }, options.heartbeatMs);
  timer.unref();

  const connect = () => {
    if (stopped) return;
    const c = new pg.Client({
      connectionString: options.url,
      connectionTimeoutMillis: 5000,
      application_name: `${options.applicationName}-listen`,
      // TCP keepalive probes, so that the operating system notices a vanished peer by itself too,
      // and a NAT entry in between stays alive.
      keepAlive: true,
      keepAliveInitialDelayMillis: 30_000,
    });
    let broken = false;
    const reconnect = (err?: unknown) => {
      if (broken) return;
      broken = true;
      if (client === c) {
        client = undefined;
        reopen = undefined;
        lose();
      }
      if (!stopped && !disconnected) {
        disconnected = true;
        options.log?.warn(
          { channel, err: err instanceof Error ? { message: err.message } : undefined, retryMs: relistenMs },
          'LISTEN connection lost: reconnecting with backoff; meanwhile the process polls for what notifications would have said',
        );
      }
      void close(c);
      if (!stopped) {
        relisten = setTimeout(connect, relistenMs);
        relistenMs = Math.min(relistenMs * 2, RELISTEN_MAX_MS);
      }
    };
    c.on('error', reconnect);
    c.on('end', reconnect);
    c.on('notification', (message) => {
      if (message.channel === heartbeatChannel) hear(message.payload ?? '');
      else onSignal(message.payload ?? '');
    });
    c.connect()
      // The channel's LISTEN last, so that pg_stat_activity shows which channel the connection serves.
      .then(() => listenTo(c, heartbeatChannel))
      .then(() => listenTo(c, channel))
      .then(() => {
        if (broken || stopped) return;
        client = c;
        reopen = reconnect;
        sentBeforeClient = sent;
        if (disconnected) options.log?.warn({ channel }, 'LISTEN connection re-established');
        disconnected = false;
        // The first beat at once: listening counts from when it is heard, not a period later.
        beat();
      })
      .catch(reconnect);
  };
  connect();
  return async () => {
    stopped = true;
    clearInterval(timer);
    clearTimeout(relisten);
    if (client) await close(client);
  };
}
