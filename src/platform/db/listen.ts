// Owns LISTEN on PostgreSQL: a connection of its own per channel, to DATABASE_LISTEN_URL (default
// DATABASE_URL), opened again a second after it breaks, and a heartbeat that proves notifications
// really arrive. A connection can accept LISTEN and still never deliver: behind a pooler in
// transaction mode the LISTEN runs on a server connection that goes back to the pool at once, and a
// listen URL naming another database hears none of this one's commits. So listening counts as
// working only while this listener hears its own heartbeat: every period it sends a NOTIFY the way
// the service's commits do (through its pool, on DATABASE_URL), with a payload only it recognises.
// Never decides anything itself: it tells its caller when to trust notifications and when not to.
import pg from 'pg';
import { randomToken } from '../ids.ts';

/** The channel every listener's heartbeat travels on; the payload says whose it is (`token:seq`). */
export const HEARTBEAT_CHANNEL = 'practice_billing_heartbeat';

/** The default heartbeat period (DATABASE_LISTEN_HEARTBEAT_MS). */
export const DEFAULT_HEARTBEAT_MS = 2000;

const RELISTEN_AFTER_MS = 1000;

/**
 * Listening stops counting as working when none of the last this-many heartbeats was heard: the
 * oldest of them had this many periods to arrive. A break is so noticed within one period plus this
 * many (the break may come just after a beat was heard).
 */
export const MISSED_BEATS = 2;

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

function quoted(channel: string): string {
  return `"${channel.replaceAll('"', '""')}"`;
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
  const token = `${process.pid}.${randomToken(8)}`;
  let stopped = false;
  let client: pg.Client | undefined;
  let relisten: NodeJS.Timeout | undefined;
  /** True while notifications are known to arrive: onSignal(undefined) was said, onLost not since. */
  let working = false;
  let sent = 0;
  let heard = 0;
  /** Set once the connection is up but heartbeats go unheard; said in the log once. */
  let deaf = false;

  const lose = () => {
    if (!working) return;
    working = false;
    onLost?.();
  };

  const beat = () => {
    if (!client || stopped) return;
    sent += 1;
    options.notify(HEARTBEAT_CHANNEL, `${token}:${sent}`).catch(() => {});
  };

  const hear = (payload: string) => {
    if (!payload.startsWith(`${token}:`)) return; // another listener's
    const seq = Number(payload.slice(token.length + 1));
    if (!(seq > heard)) return;
    heard = seq;
    // Only a recent beat proves anything: one of the last MISSED_BEATS sent.
    if (!working && client && !stopped && heard > sent - MISSED_BEATS) {
      working = true;
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
    });
    let broken = false;
    const reconnect = () => {
      if (broken) return;
      broken = true;
      if (client === c) {
        client = undefined;
        lose();
      }
      c.end().catch(() => {});
      if (!stopped) relisten = setTimeout(connect, RELISTEN_AFTER_MS);
    };
    c.on('error', reconnect);
    c.on('end', reconnect);
    c.on('notification', (message) => {
      if (message.channel === HEARTBEAT_CHANNEL) hear(message.payload ?? '');
      else onSignal(message.payload ?? '');
    });
    c.connect()
      // The channel's LISTEN last, so that pg_stat_activity shows which channel the connection serves.
      .then(() => c.query(`LISTEN ${quoted(HEARTBEAT_CHANNEL)}`))
      .then(() => c.query(`LISTEN ${quoted(channel)}`))
      .then(() => {
        if (broken || stopped) return;
        client = c;
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
    await client?.end().catch(() => {});
  };
}
