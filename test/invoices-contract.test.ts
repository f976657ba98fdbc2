// The shared contract suites (authentication, permission, add-on, tenant isolation, Idempotency-Key)
// for every billing route, payments and refunds included. Routes that can succeed only once per record (bill a visit, issue, amend,
// delete a line) act on a pool: each request the suites send moves on to the next unused record,
// while a request the suite points at another practice's (or a made-up) id keeps that id.
import { randomBytes } from 'node:crypto';
import { after, before } from 'node:test';
import { billedInvoice, lineBody, newPatient, newVisit } from './billing-fixtures.ts';
import { type Fixture, type RouteCase, runSharedSuites } from './contract-suites.ts';
import {
  apiClient,
  describeEachBackend,
  startService,
  type TestPractice,
  type TestService,
  uniqueKey,
} from './harness.ts';

const POOL = 11; // the authentication suite sends ten requests

const used = new Map<string, number>();

/** The record of the pool `key` the next request acts on (or the id the suite put in its place). */
function pooled(f: Fixture, key: string): string {
  const pool = f[`${key}Pool`]!.split(',');
  if (f[key] !== pool[0]) return f[key]!;
  return pool[Math.min(used.get(f[`${key}Pool`]!) ?? 0, pool.length - 1)]!;
}

/** Called once per request, after its path is built: the next request takes the next record. */
function moveOn(f: Fixture, key: string): void {
  const pool = f[`${key}Pool`]!;
  used.set(pool, (used.get(pool) ?? 0) + 1);
}

function withApi(svc: TestService, practice: TestPractice) {
  return { ...practice, api: apiClient(svc, practice.key) };
}

async function oneInvoice(svc: TestService, practice: TestPractice): Promise<Fixture> {
  const invoice = await billedInvoice(svc, withApi(svc, practice));
  return {
    patientId: invoice.patientId,
    encounterId: invoice.encounterIds[0],
    invoiceId: invoice.id,
    lineItemId: invoice.lineItems[0].id,
  };
}

async function visitPool(svc: TestService, practice: TestPractice): Promise<Fixture> {
  const api = apiClient(svc, practice.key);
  const patientId = await newPatient(api);
  const ids = [];
  for (let i = 0; i < POOL; i++) ids.push((await newVisit(svc, api, practice.practitionerId, patientId)).id);
  return { patientId, encounterId: ids[0]!, encounterIdPool: ids.join(',') };
}

function invoicePool(issue: boolean) {
  return async (svc: TestService, practice: TestPractice): Promise<Fixture> => {
    const p = withApi(svc, practice);
    const patientId = await newPatient(p.api);
    const ids = [];
    for (let i = 0; i < POOL; i++) ids.push((await billedInvoice(svc, p, { patientId, issue })).id);
    return { patientId, invoiceId: ids[0]!, invoiceIdPool: ids.join(',') };
  };
}

async function linePool(svc: TestService, practice: TestPractice): Promise<Fixture> {
  const p = withApi(svc, practice);
  const invoice = await billedInvoice(svc, p);
  const ids = [];
  for (let i = 0; i < POOL; i++) {
    const added = await p.api('POST', `/invoices/${invoice.id}/line-items`, {
      body: lineBody(),
      idempotencyKey: uniqueKey(),
    });
    ids.push(added.body.lineItems.at(-1).id);
  }
  return { invoiceId: invoice.id, lineItemId: ids[0]!, lineItemIdPool: ids.join(',') };
}

/** An issued invoice with a payment of 5000 and a refund of 100 on it, so both can be read and more taken. */
async function paidInvoice(svc: TestService, practice: TestPractice): Promise<Fixture> {
  const p = withApi(svc, practice);
  const invoice = await billedInvoice(svc, p, { issue: true });
  const payment = await p.api('POST', `/invoices/${invoice.id}/payments`, {
    body: { amount: 5000, method: 'card' },
    idempotencyKey: uniqueKey(),
  });
  const refund = await p.api('POST', `/invoices/${invoice.id}/refunds`, {
    body: { amount: 100, method: 'card', reason: 'Contract' },
    idempotencyKey: uniqueKey(),
  });
  return { invoiceId: invoice.id, paymentId: payment.body.id, refundId: refund.body.id };
}

const nonce = () => randomBytes(3).toString('hex');

const routes: RouteCase[] = [
  {
    method: 'POST',
    path: (f) => `/encounters/${pooled(f, 'encounterId')}/bill`,
    permission: 'INVOICES:CREATE',
    status: 201,
    creates: true,
    body: (f) => {
      moveOn(f, 'encounterId');
      return { placeOfServiceCode: nonce() };
    },
    prepare: visitPool,
    idParam: 'encounterId',
  },
  {
    method: 'GET',
    path: (f) => `/invoices/${f.invoiceId}`,
    permission: 'INVOICES:READ',
    status: 200,
    prepare: oneInvoice,
    idParam: 'invoiceId',
  },
  {
    name: 'GET /invoices?patientId',
    method: 'GET',
    path: (f) => `/invoices?patientId=${f.patientId}&updatedSince=2000-01-01T00:00:00Z`,
    permission: 'INVOICES:READ',
    status: 200,
    prepare: oneInvoice,
    idParam: 'patientId',
  },
  {
    method: 'POST',
    path: (f) => `/invoices/${f.invoiceId}/line-items`,
    permission: 'INVOICES:UPDATE',
    status: 201,
    creates: true,
    body: () => lineBody({ description: `Line ${nonce()}` }),
    prepare: oneInvoice,
    idParam: 'invoiceId',
  },
  {
    method: 'PUT',
    path: (f) => `/invoices/${f.invoiceId}/line-items/${f.lineItemId}`,
    permission: 'INVOICES:UPDATE',
    status: 200,
    body: () => lineBody({ unitPrice: Math.floor(Math.random() * 100000) }),
    prepare: oneInvoice,
    idParam: 'lineItemId',
  },
  {
    method: 'DELETE',
    path: (f) => `/invoices/${f.invoiceId}/line-items/${pooled(f, 'lineItemId')}`,
    permission: 'INVOICES:UPDATE',
    status: 200,
    body: (f) => {
      moveOn(f, 'lineItemId');
      return undefined;
    },
    prepare: linePool,
    idParam: 'invoiceId',
  },
  {
    method: 'GET',
    path: (f) => `/invoices/${f.invoiceId}/line-items/${f.lineItemId}`,
    permission: 'INVOICES:READ',
    status: 200,
    prepare: oneInvoice,
    idParam: 'lineItemId',
  },
  {
    method: 'GET',
    path: (f) => `/invoices/${f.invoiceId}/line-items/${f.lineItemId}/rates`,
    permission: 'INVOICES:READ',
    status: 200,
    prepare: oneInvoice,
    idParam: 'lineItemId',
  },
  {
    method: 'POST',
    path: (f) => `/invoices/${pooled(f, 'invoiceId')}/issue`,
    permission: 'INVOICES:UPDATE',
    status: 200,
    body: (f) => {
      moveOn(f, 'invoiceId');
      return undefined;
    },
    prepare: invoicePool(false),
    idParam: 'invoiceId',
  },
  {
    method: 'POST',
    path: (f) => `/invoices/${pooled(f, 'invoiceId')}/amend`,
    permission: 'INVOICES:UPDATE',
    status: 200,
    body: (f) => {
      moveOn(f, 'invoiceId');
      return undefined;
    },
    prepare: invoicePool(true),
    idParam: 'invoiceId',
  },
  {
    method: 'GET',
    path: (f) => `/invoices/${f.invoiceId}/payments`,
    permission: 'INVOICES:READ',
    status: 200,
    prepare: oneInvoice,
    idParam: 'invoiceId',
  },
  {
    method: 'POST',
    path: (f) => `/invoices/${f.invoiceId}/payments`,
    permission: 'PAYMENTS:CREATE',
    status: 201,
    creates: true,
    body: () => ({ amount: 1, method: 'card', reference: nonce() }),
    prepare: paidInvoice,
    idParam: 'invoiceId',
  },
  {
    method: 'GET',
    path: (f) => `/invoices/${f.invoiceId}/payments/${f.paymentId}`,
    permission: 'INVOICES:READ',
    status: 200,
    prepare: paidInvoice,
    idParam: 'paymentId',
  },
  {
    method: 'POST',
    path: (f) => `/invoices/${f.invoiceId}/refunds`,
    permission: 'REFUNDS:CREATE',
    status: 201,
    creates: true,
    body: () => ({ amount: 1, method: 'card', reason: 'Contract', reference: nonce() }),
    prepare: paidInvoice,
    idParam: 'invoiceId',
  },
  {
    method: 'GET',
    path: (f) => `/invoices/${f.invoiceId}/refunds`,
    permission: 'INVOICES:READ',
    status: 200,
    prepare: paidInvoice,
    idParam: 'invoiceId',
  },
  {
    method: 'GET',
    path: (f) => `/invoices/${f.invoiceId}/refunds/${f.refundId}`,
    permission: 'INVOICES:READ',
    status: 200,
    prepare: paidInvoice,
    idParam: 'refundId',
  },
];

describeEachBackend('billing routes, shared contract', (backend) => {
  let svc: TestService;
  before(async () => {
    svc = await startService(backend);
  });
  after(async () => {
    await svc.close();
  });
  for (const route of routes) runSharedSuites(() => svc, route);
});
