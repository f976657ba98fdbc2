// Owns the local webhook receiver (node:http on 127.0.0.1) that the service's endpoint points at: it
// answers every delivery 204 at once and keeps, per invoice, each delivery's event id, type, the
// event's occurredAt and the moment it arrived (performance.now(), the clock the claim driver uses).
import http from 'node:http';
import { onCleanup } from './cleanup.ts';

export interface Delivery {
  eventId: string;
  type: string;
  occurredAtMs: number;
  receivedAt: number;
}

export interface Receiver {
  url: string;
  byInvoice: Map<string, Delivery[]>;
  total(): number;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const byInvoice = new Map<string, Delivery[]>();
  let total = 0;
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const receivedAt = performance.now();
      response.writeHead(204).end();
      try {
        const event = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          id: string;
          type: string;
          occurredAt: string;
          data: { id: string };
        };
        total += 1;
        const list = byInvoice.get(event.data.id) ?? [];
        list.push({
          eventId: event.id,
          type: event.type,
          occurredAtMs: Date.parse(event.occurredAt),
          receivedAt,
        });
        byInvoice.set(event.data.id, list);
      } catch {
        // not a delivery: ignore
      }
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  const forget = onCleanup('close webhook receiver', close);
  return {
    url: `http://127.0.0.1:${port}/hooks/practice-billing`,
    byInvoice,
    total: () => total,
    close: async () => {
      await close();
      forget();
    },
  };
}
