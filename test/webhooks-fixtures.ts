// Shared set-up for the webhook tests: a real HTTP receiver on 127.0.0.1 that verifies every delivery
// with the `standardwebhooks` library (against the service clock, so moving the clock does not make
// fresh timestamps look stale), and a practice whose visits produce invoice.issued,
// claim.status_changed and payment.created events.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { asOperator } from '../src/platform/db/transaction.ts';
import { type Answer, apiClient, patientBody, type TestPractice, type TestService } from './harness.ts';
import { bill, createCoverage, createEncounter, createPatient } from './support/factories.ts';

export interface Received {
  /** 1-based arrival order at this receiver. */
  n: number;
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** The service clock (ms) when the request arrived; the receiver's idea of "now". */
  at: number;
  webhookId: string;
  timestamp: number;
  signatures: string[];
  /** Whether the request verified with the receiver's secret, and why not. */
  verified: boolean;
  verifyError: string | undefined;
  // biome-ignore lint/suspicious/noExplicitAny: parsed webhook JSON
  payload: any;
}

export interface Reply {
  status: number;
  body?: string;
  headers?: Record<string, string>;
  /** Answer after this many real milliseconds. */
  delayMs?: number;
  /** Never answer (the connection stays open until the receiver closes). */
  hold?: boolean;
}

/**
 * Runs fn with Date.now answering nowMs: Standard Webhooks verification reads Date.now for its
 * tolerance window, and a test judges timestamps by the service's clock.
 */
export function asOf<T>(nowMs: number, fn: () => T): T {
  const realNow = Date.now;
  Date.now = () => nowMs;
  try {
    return fn();
  } finally {
    Date.now = realNow;
  }
}

/** Standard Webhooks verification as of `nowMs`. */
export function verifyAt(secret: string, body: string, headers: http.IncomingHttpHeaders, nowMs: number) {
  return asOf(nowMs, () => new Webhook(secret).verify(body, headers as Record<string, string>));
}

export class Receiver {
  readonly requests: Received[] = [];
  /** TCP connections accepted, requests or not. */
  connections = 0;
  /** The secret each delivery must verify with. */
  secret: string | undefined;
  reply: (request: Received) => Reply = () => ({ status: 200, body: 'ok' });
  readonly #server: http.Server;
  readonly #now: () => number;

  private constructor(server: http.Server, now: () => number) {
    this.#server = server;
    this.#now = now;
  }

  static async start(now: () => number = Date.now): Promise<Receiver> {
    const server = http.createServer();
    const receiver = new Receiver(server, now);
    server.on('request', (req, res) => receiver.#handle(req, res));
    server.on('connection', () => {
      receiver.connections += 1;
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  /** A receiver judging timestamps by the service's clock. */
  static forService(svc: TestService): Promise<Receiver> {
    return Receiver.start(() => svc.clock.now().getTime());
  }

  get port(): number {
    return (this.#server.address() as AddressInfo).port;
  }

  url(path = '/hook'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** Requests to `path` (default /hook). */
  hits(path = '/hook'): Received[] {
    return this.requests.filter((r) => r.path === path);
  }

  uniqueIds(): Set<string> {
    return new Set(this.requests.map((r) => r.webhookId));
  }

  #handle(req: http.IncomingMessage, res: http.ServerResponse) {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const at = this.#now();
      let verified = false;
      let verifyError: string | undefined = 'no secret set';
      if (this.secret) {
        try {
          verifyAt(this.secret, body, req.headers, at);
          verified = true;
          verifyError = undefined;
        } catch (error) {
          verifyError = error instanceof Error ? error.message : String(error);
        }
      }
      let payload: unknown;
      try {
        payload = JSON.parse(body);
      } catch {
        payload = undefined;
      }
      const received: Received = {
        n: this.requests.length + 1,
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body,
        at,
        webhookId: String(req.headers['webhook-id'] ?? ''),
        timestamp: Number(req.headers['webhook-timestamp']),
        signatures: String(req.headers['webhook-signature'] ?? '')
          .split(' ')
          .filter(Boolean),
        verified,
        verifyError,
        payload,
      };
      this.requests.push(received);
      const reply = this.reply(received);
      if (reply.hold) return;
      const send = () => {
        if (res.destroyed) return;
        res.writeHead(reply.status, reply.headers ?? {});
        res.end(reply.body ?? '');
      };
      if (reply.delayMs) setTimeout(send, reply.delayMs).unref();
      else send();
    });
  }

  /** Every delivery so far verified with the receiver's secret. */
  assertAllVerified(): void {
    for (const r of this.requests)
      assert.ok(r.verified, `delivery ${r.n} (${r.path}) did not verify: ${r.verifyError}`);
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

export interface Endpoint {
  id: string;
  secret: string;
  // biome-ignore lint/suspicious/noExplicitAny: the created endpoint as answered
  body: any;
}

/** Registers `receiver` (its /hook path) for a practice and makes it verify with the new secret. */
export async function addEndpoint(
  svc: TestService,
  practiceId: string,
  receiver: Receiver,
  extra: { eventTypes?: string[]; path?: string } = {},
): Promise<Endpoint> {
  const created = await svc.admin('POST', `/practices/${practiceId}/webhook-endpoints`, {
    url: receiver.url(extra.path),
    ...(extra.eventTypes ? { eventTypes: extra.eventTypes } : {}),
  });
  assert.equal(created.status, 201, created.text);
  receiver.secret = created.body.secret;
  return { id: created.body.id, secret: created.body.secret, body: created.body };
}

export function endpointPath(practiceId: string, endpointId: string, suffix = ''): string {
  return `/practices/${practiceId}/webhook-endpoints/${endpointId}${suffix}`;
}

export async function readEndpoint(svc: TestService, practiceId: string, endpointId: string) {
  const read = await svc.admin('GET', endpointPath(practiceId, endpointId));
  assert.equal(read.status, 200, read.text);
  return read.body;
}

/** The endpoint's attempt log, oldest first. */
// biome-ignore lint/suspicious/noExplicitAny: attempt log entries as answered
export async function attempts(svc: TestService, practiceId: string, endpointId: string): Promise<any[]> {
  const log = await svc.admin('GET', `${endpointPath(practiceId, endpointId, '/deliveries')}?limit=100`);
  assert.equal(log.status, 200, log.text);
  return [...log.body.data].reverse();
}

export interface Visit {
  invoiceId: string;
  patient: { id: string; givenNames: string[]; lastName: string; birthDate: string; externalIdValue: string };
  bill: Answer;
}

/**
 * Records a visit for a new patient with a coverage and bills it, issued (invoice.issued) and, with
 * `claim`, sent to the sandbox insurer (claim.status_changed events, then payment.created once the
 * worker has run). Encounter times follow the service clock.
 */
export async function billVisit(
  svc: TestService,
  practice: TestPractice,
  options: { claim?: boolean; email?: string } = {},
): Promise<Visit> {
  const api = apiClient(svc, practice.key);
  const person = patientBody(
    options.email ? { contactPoints: [{ system: 'email', value: options.email, rank: 1 }] } : {},
  );
  const patient = await createPatient(api, person);
  await createCoverage(api, patient.id, { planId: 'pln_ubuntu_essential', memberNumber: 'M1' });
  const when = new Date(svc.clock.now().getTime() - 3600_000).toISOString();
  const encounter = await createEncounter(api, {
    patientId: patient.id,
    practitionerId: practice.practitionerId,
    start: when,
    end: when,
    diagnoses: [{ code: 'J06.9' }],
    procedures: [{ code: '0190' }],
  });
  const billed = await bill(api, encounter.id, {
    issue: true,
    ...(options.claim ? { submitClaim: true } : {}),
  });
  assert.ok(billed.status === 200 || billed.status === 201, billed.text);
  return {
    invoiceId: billed.body.invoice.id,
    patient: {
      id: patient.id,
      givenNames: person.givenNames,
      lastName: person.lastName,
      birthDate: person.birthDate,
      externalIdValue: person.externalId.value,
    },
    bill: billed,
  };
}

/** Records a payment of `amount` minor units on an issued invoice: one payment.created event. */
export async function pay(svc: TestService, practiceId: string, invoiceId: string, amount = 1) {
  const paid = await svc.admin('POST', `/practices/${practiceId}/payments`, {
    invoiceId,
    amount,
    method: 'cash',
  });
  assert.equal(paid.status, 201, paid.text);
  return paid.body;
}

/** Moves the service clock to just past `at`. */
export function advanceTo(svc: TestService, at: Date | string): void {
  const target = new Date(at).getTime();
  const delta = target - svc.clock.now().getTime() + 1;
  if (delta > 0) svc.clock.advance(delta);
}

export async function notificationsOf(svc: TestService, practiceId: string) {
  return asOperator(svc.db, (trx) =>
    trx
      .selectFrom('notifications')
      .selectAll()
      .where('practice_id', '=', practiceId)
      .where('kind', '=', 'webhook_endpoint_disabled')
      .execute(),
  );
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
