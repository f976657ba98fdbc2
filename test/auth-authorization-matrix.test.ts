// The authorisation matrix of the public API, read from the route declarations (src/app.ts
// apiRoutes) rather than restated: for every operation and every permission of
// src/auth/permissions.ts, a key holding only that permission gets past the gate exactly where the
// route declares it and is 403 forbidden everywhere else; body-dependent extra permissions (bill
// with issue / submitClaim) are needed in full. And for every id an operation takes, in its path,
// query or body, another practice's real id answers byte for byte as a made-up one does.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { AnyApiRoute } from '../src/api/api-route.ts';
import { apiRoutes } from '../src/app.ts';
import { PERMISSIONS, type Permission } from '../src/auth/permissions.ts';
import { randomToken } from '../src/platform/ids.ts';
import { billedInvoice, lineBody, newPatient, newVisit } from './billing-fixtures.ts';
import { addClient, type Fixture, type RouteCase, sendRoute } from './contract-suites.ts';
import {
  type Answer,
  apiClient,
  describeEachBackend,
  patientBody,
  startService,
  type TestPractice,
  type TestService,
  uniqueKey,
} from './harness.ts';

type Json = Record<string, unknown>;

/** A body each operation can be called with; the ids in it come from the fixture. */
const BODIES: Record<string, (f: Fixture) => unknown> = {
  createPatient: () => patientBody(),
  updatePatient: () => ({ lastName: `Matrix${randomBytes(2).toString('hex')}` }),
  // Refused (422: the patient is inside retention) where the permission lets it through.
  erasePatient: () => ({ reason: 'Matrix' }),
  setPatientRetention: () => ({ lifelong: false }),
  addCoverage: (f) => ({ planId: f.planId, memberNumber: `M${randomBytes(4).toString('hex')}` }),
  createEncounter: (f) => ({
    patientId: f.patientId,
    practitionerId: f.practitionerId,
    start: f.start,
    end: f.end,
    diagnoses: [{ code: 'J06.9' }],
    procedures: [{ code: '0190', diagnosisCodes: ['J06.9'] }],
  }),
  billEncounter: (f) => ({ coverageId: f.coverageId }),
  addLineItem: () => lineBody(),
  replaceLineItem: () => lineBody({ unitPrice: 12_000 }),
  sendClaim: (f) => ({ coverageId: f.coverageId }),
  resubmitClaim: (f) => ({ coverageId: f.coverageId }),
  reverseClaim: () => ({}),
  cancelInvoice: () => ({ reason: 'Matrix' }),
  recordInvoicePayment: () => ({ amount: 100, method: 'card' }),
  recordInvoiceRefund: () => ({ amount: 100, method: 'card', reason: 'Matrix' }),
  createCodeSystem: () => ({ name: `Matrix ${randomBytes(3).toString('hex')}`, usage: ['procedure'] }),
  replaceCodeSystem: () => ({ name: `Matrix ${randomBytes(3).toString('hex')}`, usage: ['procedure'] }),
  addCodeConcept: () => ({ code: `M${randomBytes(3).toString('hex')}`, display: 'Matrix concept' }),
};

/** Query parameters an operation cannot be called without. */
const REQUIRED_QUERY: Record<string, (f: Fixture) => Record<string, string>> = {
  findPatients: (f) => ({ externalSystem: f.externalSystem!, externalId: f.externalId! }),
};

/** Ids of data the service publishes for every practice: no practice owns them, so none is foreign. */
const SHARED_IDS = new Set(['planId']);

function propertiesOf(schema: unknown): string[] {
  const properties = (schema as { properties?: Json } | undefined)?.properties;
  return properties ? Object.keys(properties) : [];
}

function pathOf(route: AnyApiRoute, fixture: Fixture, query: Record<string, string> = {}): string {
  const path = route.url.replace(/:([A-Za-z]+)/g, (_m, name: string) =>
    encodeURIComponent(fixture[name] ?? ''),
  );
  const search = new URLSearchParams({
    ...REQUIRED_QUERY[route.operationId]?.(fixture),
    ...query,
  }).toString();
  return search ? `${path}?${search}` : path;
}

/** The route as a RouteCase of the shared suites, called with `fixture` and an optional body and query. */
function caseOf(
  route: AnyApiRoute,
  options: { body?: (f: Fixture) => unknown; query?: (f: Fixture) => Record<string, string> } = {},
): RouteCase {
  const body = options.body ?? BODIES[route.operationId];
  return {
    name: route.operationId,
    method: route.method,
    path: (f) => pathOf(route, f, options.query?.(f)),
    permission: route.permission,
    status: route.successStatus,
    ...(route.creates ? { creates: true } : {}),
    ...(body ? { body } : {}),
  };
}

/** A practice's records: a patient with coverage, an unbilled visit, a draft invoice with a line, an issued one (and so an event), a code system and a concept. */
async function recordsOf(svc: TestService, practice: TestPractice): Promise<Fixture> {
  const api = apiClient(svc, practice.key);
  const patientId = await newPatient(api);
  const plans = await api('GET', '/insurance-plans?limit=1');
  assert.equal(plans.status, 200, plans.text);
  const planId = plans.body.data[0].id as string;
  const coverage = await api('POST', `/patients/${patientId}/coverages`, {
    body: { planId, memberNumber: `M${randomBytes(4).toString('hex')}` },
    idempotencyKey: uniqueKey(),
  });
  assert.equal(coverage.status, 201, coverage.text);
  const visit = await newVisit(svc, api, practice.practitionerId, patientId);
  const invoice = await billedInvoice(svc, { ...practice, api }, { patientId });
  const system = await api('POST', '/code-systems', {
    body: { name: `Matrix ${randomBytes(3).toString('hex')}`, usage: ['procedure'] },
    idempotencyKey: uniqueKey(),
  });
  assert.equal(system.status, 201, system.text);
  const concept = await api('POST', `/code-systems/${system.body.id}/concepts`, {
    body: { code: 'MX1', display: 'Matrix concept' },
    idempotencyKey: uniqueKey(),
  });
  assert.equal(concept.status, 201, concept.text);
  const patient = await api('GET', `/patients/${patientId}`);
  // An issued invoice of its own, so that the practice has an event (invoice.issued), paid and part
  // refunded so that it has a payment and a refund.
  const issued = await billedInvoice(svc, { ...practice, api }, { patientId, issue: true });
  const payment = await api('POST', `/invoices/${issued.id}/payments`, {
    body: { amount: 1000, method: 'card' },
    idempotencyKey: uniqueKey(),
  });
  assert.equal(payment.status, 201, payment.text);
  const refund = await api('POST', `/invoices/${issued.id}/refunds`, {
    body: { amount: 100, method: 'card', reason: 'Matrix' },
    idempotencyKey: uniqueKey(),
  });
  assert.equal(refund.status, 201, refund.text);
  // Listed once the feed's safe high-water mark has passed it: a read or two later.
  let events = await api('GET', '/events?type=invoice.issued');
  for (let i = 0; i < 500 && events.status === 200 && events.body.data.length === 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    events = await api('GET', '/events?type=invoice.issued');
  }
  assert.equal(events.status, 200, events.text);
  assert.ok(events.body.data.length > 0, 'the issued invoice is listed');
  const end = new Date(svc.clock.now().getTime() - 3_600_000);
  return {
    patientId,
    practitionerId: practice.practitionerId,
    coverageId: coverage.body.id,
    planId,
    encounterId: visit.id,
    invoiceId: invoice.id,
    lineItemId: invoice.lineItems[0].id,
    codeSystemId: system.body.id,
    conceptId: concept.body.id,
    eventId: events.body.data[0].id,
    paymentId: payment.body.id,
    refundId: refund.body.id,
    externalSystem: patient.body.externalId.system,
    externalId: patient.body.externalId.value,
    start: new Date(end.getTime() - 1_200_000).toISOString(),
    end: end.toISOString(),
  };
}

function madeUpLike(real: string): string {
  const cut = real.indexOf('_');
  return `${cut > 0 ? real.slice(0, cut) : 'x'}_${randomToken(16)}`;
}

/** Everything a caller sees of an answer except the request's own id and the rate-limit counters. */
function visible(
  answer: Answer,
  id: string,
): { status: number; headers: string[]; contentType: string | null; text: string } {
  const requestId = answer.headers.get('x-request-id') ?? '<none>';
  return {
    status: answer.status,
    headers: [...answer.headers.keys()].filter((h) => !h.startsWith('x-ratelimit') && h !== 'date').sort(),
    contentType: answer.headers.get('content-type'),
    text: answer.text.replaceAll(requestId, '<request-id>').replaceAll(id, '<id>'),
  };
}

function permissionsOf(route: AnyApiRoute, body: unknown): Permission[] {
  return [route.permission, ...(route.extraPermissions?.(body as never) ?? [])];
}

describeEachBackend('authorisation matrix', (backend) => {
  let svc: TestService;
  let practice: TestPractice;
  let fixture: Fixture;
  let theirs: Fixture;
  const only = new Map<Permission, string>();
  before(async () => {
    svc = await startService(backend);
    practice = await svc.newPractice();
    fixture = await recordsOf(svc, practice);
    theirs = await recordsOf(svc, await svc.newPractice());
    for (const permission of PERMISSIONS) {
      only.set(permission, (await addClient(svc, practice.practiceId, { permissions: [permission] })).key);
    }
  });
  after(async () => {
    await svc.close();
  });

  test('the route declarations and the OpenAPI document name the same operations and permissions', async () => {
    const document = (await (await fetch(`${svc.baseUrl}/api/v1/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { operationId?: string; 'x-permission'?: string }>>;
    };
    const documented = new Map<string, string | undefined>();
    for (const [p, methods] of Object.entries(document.paths)) {
      if (!p.startsWith('/api/v1/')) continue;
      for (const op of Object.values(methods)) documented.set(String(op.operationId), op['x-permission']);
    }
    assert.deepEqual([...documented.keys()].sort(), apiRoutes.map((r) => r.operationId).sort());
    for (const route of apiRoutes) {
      assert.equal(documented.get(route.operationId), route.permission, route.operationId);
      assert.ok((PERMISSIONS as readonly string[]).includes(route.permission), route.operationId);
      if (route.body && !route.bodyOptional)
        assert.ok(BODIES[route.operationId], `a body for ${route.operationId}`);
    }
  });

  test('a key with one permission passes the gate exactly where the route declares that permission', async () => {
    let checked = 0;
    for (const route of apiRoutes) {
      const rc = caseOf(route);
      for (const permission of PERMISSIONS) {
        const answer = await sendRoute(svc, only.get(permission), rc, fixture);
        const body = rc.body?.(fixture);
        const needed = permissionsOf(route, body);
        const where = `${route.operationId} with only ${permission}: ${answer.status} ${answer.text.slice(0, 300)}`;
        assert.ok(answer.status < 500 && answer.status !== 401, where);
        if (needed.length === 1 && needed[0] === permission) {
          assert.notEqual(answer.status, 403, where);
        } else {
          assert.equal(answer.status, 403, where);
          assert.equal(answer.body.code, 'forbidden', where);
        }
        checked++;
      }
    }
    assert.equal(checked, apiRoutes.length * PERMISSIONS.length);
  });

  test('a body that needs further permissions (bill with issue or submitClaim) needs every one of them', async () => {
    const dependent = apiRoutes.filter((r) => r.extraPermissions);
    assert.ok(dependent.length > 0, 'some route declares body-dependent permissions');
    let checked = 0;
    for (const route of dependent) {
      // Every combination of the body's boolean switches, each asking for what the route declares.
      const switches = propertiesOf(route.body).filter(
        (k) =>
          (route.body as { properties: Record<string, { type?: unknown }> }).properties[k]?.type ===
          'boolean',
      );
      assert.ok(switches.length > 0 && switches.length <= 4, route.operationId);
      for (let mask = 1; mask < 1 << switches.length; mask++) {
        const flags = Object.fromEntries(switches.map((k, i) => [k, (mask & (1 << i)) !== 0]));
        const needed = [...new Set(permissionsOf(route, flags))];
        if (needed.length === 1) continue;
        for (const missing of needed) {
          const without = await addClient(svc, practice.practiceId, {
            permissions: needed.filter((p) => p !== missing),
          });
          // A fresh unbilled visit each time, so the request would otherwise do its work.
          const visit = await newVisit(
            svc,
            apiClient(svc, practice.key),
            practice.practitionerId,
            fixture.patientId!,
          );
          const answer = await sendRoute(svc, without.key, caseOf(route, { body: () => flags }), {
            ...fixture,
            encounterId: visit.id,
          });
          assert.equal(
            answer.status,
            403,
            `${route.operationId} ${JSON.stringify(flags)} without ${missing}: ${answer.text}`,
          );
          assert.equal(answer.body.code, 'forbidden');
          assert.match(answer.body.detail, new RegExp(missing));
          checked++;
        }
        const holding = await addClient(svc, practice.practiceId, { permissions: needed });
        const visit = await newVisit(
          svc,
          apiClient(svc, practice.key),
          practice.practitionerId,
          fixture.patientId!,
        );
        const answer = await sendRoute(svc, holding.key, caseOf(route, { body: () => flags }), {
          ...fixture,
          encounterId: visit.id,
        });
        assert.ok(
          answer.status !== 403 && answer.status < 500,
          `${route.operationId} ${JSON.stringify(flags)} with ${needed.join(', ')}: ${answer.text}`,
        );
        checked++;
      }
    }
    assert.ok(checked >= 4, `checked ${checked} combinations`);
  });

  test("every id an operation takes: another practice's real one answers byte for byte as a made-up one", async () => {
    let compared = 0;
    for (const route of apiRoutes) {
      const slots: Array<{ where: 'path' | 'query' | 'body'; name: string }> = [
        ...propertiesOf(route.params).map((name) => ({ where: 'path' as const, name })),
        ...propertiesOf(route.querystring)
          .filter((n) => n.endsWith('Id') && !REQUIRED_QUERY[route.operationId]?.(fixture)?.[n])
          .map((name) => ({ where: 'query' as const, name })),
        ...propertiesOf(route.body)
          .filter((n) => n.endsWith('Id'))
          .map((name) => ({ where: 'body' as const, name })),
      ].filter((s) => !SHARED_IDS.has(s.name));
      for (const slot of slots) {
        const theirId = theirs[slot.name];
        assert.ok(theirId, `the other practice has a ${slot.name} (${route.operationId})`);
        const madeUp = madeUpLike(theirId);
        const send = async (id: string) => {
          // A fresh unbilled visit, so that billing reaches the id it is given.
          const own =
            route.operationId === 'billEncounter'
              ? {
                  ...fixture,
                  encounterId: (
                    await newVisit(
                      svc,
                      apiClient(svc, practice.key),
                      practice.practitionerId,
                      fixture.patientId!,
                    )
                  ).id,
                }
              : fixture;
          const f = slot.where === 'path' ? { ...own, [slot.name]: id } : own;
          const rc = caseOf(route, {
            ...(slot.where === 'query' ? { query: () => ({ [slot.name]: id }) } : {}),
            ...(slot.where === 'body'
              ? { body: (g: Fixture) => ({ ...(BODIES[route.operationId]?.(g) as Json), [slot.name]: id }) }
              : {}),
          });
          return visible(await sendRoute(svc, practice.key, rc, f), id);
        };
        const foreign = await send(theirId);
        const random = await send(madeUp);
        const label = `${route.operationId} ${slot.where} ${slot.name}`;
        assert.ok(foreign.status < 500, `${label}: ${foreign.text}`);
        assert.deepEqual(foreign, random, label);
        compared++;
      }
    }
    assert.ok(
      compared >= apiRoutes.filter((r) => propertiesOf(r.params).length > 0).length,
      `compared ${compared}`,
    );
  });
});
