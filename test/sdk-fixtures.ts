// Shared set-up for the client package's tests: a PracticeBilling client for a test practice, and a
// fault proxy that sits between the client and the real service, forwarding every request unless
// told to answer one itself (a 429, a 503, a 409) or to lose the service's answer after the service
// has acted, so that retries can be watched end to end.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { type ClientOptions, PracticeBilling } from '@practice-billing/client';
import type { TestService } from './harness.ts';

/** A client of the real service; retries wait 10 ms at first so that tests stay quick. */
export function sdkClient(
  baseUrl: string,
  apiKey: string,
  options: Partial<ClientOptions> = {},
): PracticeBilling {
  return new PracticeBilling({ apiKey, baseUrl, retryBaseDelayMs: 10, random: () => 0.5, ...options });
}

export interface Seen {
  n: number;
  method: string;
  path: string;
  idempotencyKey: string | undefined;
  /** What the proxy did: forwarded, answered itself, or forwarded and then cut the connection. */
  action: 'forward' | 'answer' | 'lose-answer' | 'reset';
  /** The status the client was given (the service's, or the proxy's own); undefined when cut. */
  status: number | undefined;
}

export type Fault =
  | 'forward'
  | 'lose-answer'
  | 'reset'
  | { status: number; headers?: Record<string, string>; body?: unknown };

export class FaultProxy {
  readonly seen: Seen[] = [];
  /** Decides what to do with each request (1-based count); forwards by default. */
  plan: (request: { n: number; method: string; path: string }) => Fault = () => 'forward';
  readonly #server: http.Server;
  readonly #target: string;

  private constructor(server: http.Server, target: string) {
    this.#server = server;
    this.#target = target;
  }

  static async start(target: string): Promise<FaultProxy> {
    const server = http.createServer();
    const proxy = new FaultProxy(server, target);
    server.on('request', (req, res) => {
      void proxy.#handle(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  async #handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const path = req.url ?? '/';
    const method = req.method ?? 'GET';
    const n = this.seen.length + 1;
    const key = req.headers['idempotency-key'];
    const seen: Seen = {
      n,
      method,
      path,
      idempotencyKey: typeof key === 'string' ? key : undefined,
      action: 'forward',
      status: undefined,
    };
    this.seen.push(seen);
    const fault = this.plan({ n, method, path });
    if (fault === 'reset') {
      seen.action = 'reset';
      req.socket.destroy();
      return;
    }
    if (typeof fault === 'object') {
      seen.action = 'answer';
      seen.status = fault.status;
      res.writeHead(fault.status, { 'content-type': 'application/json', ...fault.headers });
      res.end(fault.body === undefined ? '' : JSON.stringify(fault.body));
      return;
    }
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (typeof value === 'string' && !['host', 'connection', 'content-length'].includes(name))
        headers[name] = value;
    }
    const answer = await fetch(`${this.#target}${path}`, {
      method,
      headers,
      ...(chunks.length > 0 ? { body: Buffer.concat(chunks) } : {}),
    });
    const body = Buffer.from(await answer.arrayBuffer());
    if (fault === 'lose-answer') {
      // The service has acted and answered; the client never hears it.
      seen.action = 'lose-answer';
      req.socket.destroy();
      return;
    }
    seen.status = answer.status;
    const out: Record<string, string> = {};
    answer.headers.forEach((value, name) => {
      if (!['content-encoding', 'transfer-encoding', 'connection', 'content-length'].includes(name))
        out[name] = value;
    });
    res.writeHead(answer.status, out);
    res.end(body);
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

/** A problem body as the service writes it, for the proxy to answer with. */
export function problem(status: number, code: string): Record<string, unknown> {
  return {
    type: `about:blank#${code}`,
    title: code,
    status,
    detail: `${code} from the proxy`,
    code,
    requestId: 'req_proxy',
  };
}

export type { TestService };
