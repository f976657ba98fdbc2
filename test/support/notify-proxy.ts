// A TCP proxy in front of the test PostgreSQL server that can swallow notifications: while `dropping`
// is set, every NotificationResponse message ('A') from the server is left out of what the client
// receives, and everything else goes through. A connection through it so behaves like a LISTEN behind
// a pooler in transaction mode: connected, answering queries, and never hearing a NOTIFY.
// blackhole() makes the connections open at that moment silent both ways, without closing them, as a
// peer that vanished behind a NAT or a network split: nothing arrives and no reset ever comes.
// Connections made afterwards go through.
import net from 'node:net';

export interface NotifyProxy {
  port: number;
  /** While true, notifications are dropped. */
  dropping: boolean;
  /** Stops forwarding anything, in either direction, on every connection open now; never closes them. */
  blackhole(): void;
  /** How many connections were accepted so far. */
  readonly accepted: number;
  /** The URL of `databaseUrl`'s database through this proxy. */
  urlOf(databaseUrl: string): string;
  close(): Promise<void>;
}

/** Where the server of a connection URL listens: host and port, or a Unix socket (`?host=/dir`). */
function targetOf(databaseUrl: string): net.NetConnectOpts {
  const url = new URL(databaseUrl);
  const port = Number(url.port || 5432);
  const socketDir = url.searchParams.get('host');
  if (socketDir?.startsWith('/')) return { path: `${socketDir}/.s.PGSQL.${port}` };
  return { host: url.hostname || '127.0.0.1', port };
}

export async function startNotifyProxy(serverUrl: string): Promise<NotifyProxy> {
  const target = targetOf(serverUrl);
  const sockets = new Set<net.Socket>();
  const silencers = new Set<() => void>();
  let accepted = 0;
  const proxy: NotifyProxy = {
    port: 0,
    dropping: false,
    blackhole() {
      for (const silence of silencers) silence();
      silencers.clear();
    },
    get accepted() {
      return accepted;
    },
    urlOf(databaseUrl) {
      const url = new URL(databaseUrl);
      url.hostname = '127.0.0.1';
      url.port = String(proxy.port);
      url.searchParams.delete('host');
      url.searchParams.set('sslmode', 'disable');
      return url.toString();
    },
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
  const server = net.createServer((client) => {
    accepted += 1;
    const upstream = net.connect(target);
    sockets.add(client).add(upstream);
    let silent = false;
    const silence = () => {
      silent = true;
      client.unpipe(upstream);
      // Whatever the client sends from now on is read and thrown away.
      client.on('data', () => {});
    };
    silencers.add(silence);
    const end = () => {
      silencers.delete(silence);
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.pipe(upstream);
    // Server to client: whole messages (a type byte, then a 4-byte length counting itself).
    let pending = Buffer.alloc(0);
    upstream.on('data', (chunk: Buffer) => {
      if (silent) return;
      pending = Buffer.concat([pending, chunk]);
      const out: Buffer[] = [];
      while (pending.length >= 5) {
        const size = 1 + pending.readUInt32BE(1);
        if (pending.length < size) break;
        const message = pending.subarray(0, size);
        pending = pending.subarray(size);
        if (!(proxy.dropping && message[0] === 0x41)) out.push(message);
      }
      if (out.length > 0) client.write(Buffer.concat(out));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  proxy.port = typeof address === 'object' && address ? address.port : 0;
  return proxy;
}
