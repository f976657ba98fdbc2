// Contract fuzzing: a seeded fast-check generator builds requests for every operation of the
// service's own OpenAPI document (public /api/v1 and operator /admin/v1), valid ones and mutated
// ones (missing required fields, wrong types, oversize strings and arrays, unknown fields, hostile
// strings, numbers beyond 2^53, ids that are real, another practice's, made up or of the wrong
// kind), sends them over real HTTP and checks every answer against the document: never a 5xx,
// only a documented status, a body valid for that status, and every error a Problem with a known
// code.
//
// The seed is fixed (DEFAULT_SEED), so every run sends the same requests, and printed at the start.
// FUZZ_SEED=<seed> runs another seed; a failure prints its seed and fast-check's path, and
// FUZZ_SEED=<seed> FUZZ_PATH=<path> replays just the failing batch against fresh data (the records it
// acts on are made afresh, so their ids differ, but the requests built for them are the same). The
// batches before it are not replayed, so a failure that depends on what earlier batches changed (a
// record they updated, deleted or used up) may not recur that way: run the whole seed again with
// FUZZ_SEED=<seed> alone. FUZZ_RUNS sets the
// number of requests, FUZZ_VERBOSE=1 prints the count of each operation's answers by status.
//
// Each database gets the full count (10,000 by default): PGlite is fast enough for that in CI.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { billedInvoice, newPatient, newVisit } from './billing-fixtures.ts';
import { addClient } from './contract-suites.ts';
import { check, type Violation } from './fuzz/check.ts';
import { type OpenApiDocument, operationsOf } from './fuzz/operations.ts';
import { type FuzzRequest, type IdPools, requestArb } from './fuzz/requests.ts';
import { type Hints, isoDate } from './fuzz/values.ts';
import {
  apiClient,
  describeEachBackend,
  startService,
  type TestPractice,
  type TestService,
  uniqueKey,
} from './harness.ts';
import { dereference } from './openapi-refs.ts';

/** The seed of every run unless FUZZ_SEED names another. */
const DEFAULT_SEED = 20_261_126;
const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : DEFAULT_SEED;
if (!Number.isInteger(SEED)) throw new Error(`FUZZ_SEED must be an integer, not ${process.env.FUZZ_SEED}`);
/** The path fast-check printed with a failure: replays only that batch (with its seed). */
const PATH = process.env.FUZZ_PATH || undefined;
const REQUESTS = process.env.FUZZ_RUNS ? Number(process.env.FUZZ_RUNS) : 10_000;
/** Requests of one fast-check run, sent concurrently. */
const BATCH = 8;
const RUNS = Math.ceil(REQUESTS / BATCH);

// ---------------------------------------------------------------------------------------------
// The records requests act on.

interface World {
  pools: IdPools;
  hints: Hints;
  allOwn: string[];
  key: string;
}

async function practiceRecords(svc: TestService, practice: TestPractice) {
  const api = apiClient(svc, practice.key);
  const p = { ...practice, api };
  const patients = [await newPatient(api), await newPatient(api)];
  const plans = await api('GET', '/insurance-plans?limit=5');
  assert.equal(plans.status, 200, plans.text);
  const planIds = (plans.body.data as { id: string }[]).map((plan) => plan.id);
  const coverage = await api('POST', `/patients/${patients[0]}/coverages`, {
    body: { planId: planIds[0], memberNumber: `M${randomBytes(4).toString('hex')}` },
    idempotencyKey: uniqueKey(),
  });
  assert.equal(coverage.status, 201, coverage.text);
  const visits = [
    (await newVisit(svc, api, practice.practitionerId, patients[0]!)).id as string,
    (await newVisit(svc, api, practice.practitionerId, patients[1]!)).id as string,
  ];
  const draft = await billedInvoice(svc, p, { patientId: patients[1]! });
  const issued = await billedInvoice(svc, p, { patientId: patients[0]!, issue: true });
  const claimed = await billedInvoice(svc, p, { patientId: patients[0]!, issue: true });
  const claim = await api('POST', `/invoices/${claimed.id}/claim`, { body: {} });
  assert.equal(claim.status, 202, claim.text);
  const system = await api('POST', '/code-systems', {
    body: { name: `Fuzz ${randomBytes(3).toString('hex')}`, usage: ['procedure'] },
    idempotencyKey: uniqueKey(),
  });
  assert.equal(system.status, 201, system.text);
  const concepts: string[] = [];
  for (const code of ['F1', 'F2', 'F3']) {
    const concept = await api('POST', `/code-systems/${system.body.id}/concepts`, {
      body: { code, display: `Fuzz concept ${code}`, defaultPrice: 1000 },
      idempotencyKey: uniqueKey(),
    });
    assert.equal(concept.status, 201, concept.text);
    concepts.push(concept.body.id);
  }
  const published = await api('GET', '/code-systems?limit=5');
  assert.equal(published.status, 200, published.text);
  const patient = await api('GET', `/patients/${patients[0]}`);
  const invoices = [draft, issued, claimed] as { id: string; lineItems: { id: string }[] }[];
  return {
    ids: {
      patientId: patients,
      practitionerId: [practice.practitionerId],
      encounterId: [...visits, ...draft.encounterIds, ...issued.encounterIds],
      invoiceId: invoices.map((i) => i.id),
      lineItemId: invoices.flatMap((i) => i.lineItems.map((l) => l.id)),
      codeSystemId: [system.body.id as string, ...(published.body.data as { id: string }[]).map((c) => c.id)],
      conceptId: concepts,
      coverageId: [coverage.body.id as string],
      planId: planIds,
    } as Record<string, string[]>,
    together: {
      'invoiceId,lineItemId': invoices.flatMap((i) => i.lineItems.map((l) => [i.id, l.id])),
      'codeSystemId,conceptId': concepts.map((c) => [system.body.id as string, c]),
    } as Record<string, string[][]>,
    externalId: patient.body.externalId as { system: string; value: string },
  };
}

/** The operator API's records, in a sandbox practice of their own. */
async function sandboxRecords(svc: TestService) {
  const sandbox = await svc.newPractice();
  const spare = await addClient(svc, sandbox.practiceId);
  const endpoints: string[] = [];
  for (let i = 0; i < 3; i++) {
    const endpoint = await svc.admin('POST', `/practices/${sandbox.practiceId}/webhook-endpoints`, {
      url: `http://127.0.0.1:9/hook${i}`,
    });
    assert.equal(endpoint.status, 201, endpoint.text);
    endpoints.push(endpoint.body.id);
  }
  const price = await svc.admin('POST', `/practices/${sandbox.practiceId}/prices`, {
    system: 'urn:service:codesystem:tariff',
    code: '0190',
    amount: 12_345,
  });
  assert.equal(price.status, 201, price.text);
  // An issued invoice makes an event (and a delivery to the endpoint) for the event operations.
  const records = await practiceRecords(svc, sandbox);
  const deliveries = await svc.admin(
    'GET',
    `/practices/${sandbox.practiceId}/webhook-endpoints/${endpoints[0]}/deliveries`,
  );
  assert.equal(deliveries.status, 200, deliveries.text);
  const eventIds = [
    ...new Set(
      (deliveries.body.data as Record<string, unknown>[])
        .map((d) => d.eventId)
        .filter((id): id is string => typeof id === 'string'),
    ),
  ];
  return {
    practiceId: sandbox.practiceId,
    invoiceIds: records.ids.invoiceId!,
    ids: {
      practiceId: [sandbox.practiceId],
      clientId: [sandbox.clientId, spare.clientId],
      keyId: [spare.keyId],
      endpointId: endpoints,
      priceId: [price.body.id as string],
      eventId: eventIds,
    } as Record<string, string[]>,
    practitionerId: sandbox.practitionerId,
  };
}

async function buildWorld(svc: TestService): Promise<World> {
  const practice = await svc.newPractice({ rateLimitPerMinute: 10_000_000 });
  const other = await svc.newPractice();
  const mine = await practiceRecords(svc, practice);
  const theirs = await practiceRecords(svc, other);
  // The operator API acts on a sandbox practice, so that suspending, revoking or switching off the
  // add-on never touches the client the fuzzer calls the public API with.
  const sandbox = await sandboxRecords(svc);
  const own: Record<string, string[]> = { ...mine.ids, ...sandbox.ids };
  const foreign: Record<string, string[]> = {
    ...theirs.ids,
    // published code systems are everyone's: only the practice's own is foreign
    codeSystemId: theirs.ids.codeSystemId!.slice(0, 1),
  };
  const allOwn = Object.values(own).flat();
  const end = new Date(svc.clock.now().getTime() - 3_600_000);
  const hints: Hints = {
    patientId: [...own.patientId!, ...foreign.patientId!],
    practitionerId: [...own.practitionerId!, ...foreign.practitionerId!, sandbox.practitionerId],
    coverageId: [...own.coverageId!, ...foreign.coverageId!],
    planId: own.planId!,
    encounterId: own.encounterId!,
    invoiceId: [...own.invoiceId!, ...foreign.invoiceId!, ...sandbox.invoiceIds],
    code: ['0190', '0191', 'J06.9', '0145', 'F1'],
    diagnosisCodes: [['J06.9']],
    diagnoses: [[{ code: 'J06.9' }], [{ code: 'J06.9', primary: true }]],
    procedures: [[{ code: '0190', diagnosisCodes: ['J06.9'] }]],
    system: ['urn:service:codesystem:tariff', 'http://hl7.org/fhir/sid/icd-10'],
    start: [new Date(end.getTime() - 1_200_000).toISOString()],
    end: [end.toISOString()],
    birthDate: ['1990-02-28', '2001-12-31'],
    externalSystem: [mine.externalId.system],
    externalId: [mine.externalId.value],
    usage: [['procedure'], ['condition']],
    timezone: ['Africa/Johannesburg', 'UTC', 'Europe/Berlin'],
    url: ['http://127.0.0.1:9/hook', 'https://hooks.example.test/x'],
    allowedIps: [['10.0.0.0/8'], ['127.0.0.1', '::1']],
    expiresAt: ['2099-01-01T00:00:00Z'],
    serviceDate: [isoDate(end)],
    currency: ['ZAR'],
  };
  return {
    pools: {
      own,
      foreign,
      together: Object.fromEntries(
        Object.entries(mine.together).map(([k, pairs]) => [
          k,
          [...pairs, ...(theirs.together[k] ?? []).slice(0, 1)],
        ]),
      ),
    },
    hints,
    allOwn,
    key: practice.key,
  };
}

async function send(svc: TestService, world: World, request: FuzzRequest) {
  const token = request.operation.admin ? svc.adminToken : world.key;
  const response = await fetch(`${svc.baseUrl}${request.url}`, {
    method: request.operation.method,
    headers: { authorization: `Bearer ${token}`, ...request.headers },
    ...(request.body !== undefined ? { body: request.body } : {}),
  });
  return {
    status: response.status,
    contentType: response.headers.get('content-type'),
    text: await response.text(),
  };
}

describeEachBackend('contract fuzzing', (backend) => {
  let svc: TestService;
  before(async () => {
    svc = await startService(backend);
  });
  after(async () => {
    await svc.close();
  });

  test(`${REQUESTS} generated requests over every documented operation answer as documented`, {
    timeout: 600_000,
  }, async () => {
    const document = dereference(
      (await (await fetch(`${svc.baseUrl}/api/v1/openapi.json`)).json()) as OpenApiDocument,
    );
    const operations = operationsOf(document);
    assert.ok(operations.filter((o) => !o.admin).length >= 30, 'the document lists the public operations');
    assert.ok(
      operations.some((o) => o.admin),
      'and the operator ones',
    );
    const world = await buildWorld(svc);
    const request = fc.oneof(...operations.map((o) => requestArb(o, world.pools, world.hints, world.allOwn)));

    const started = performance.now();
    let sent = 0;
    const statuses = new Map<string, number>();
    const perOperation = new Map<string, number>();
    console.log(
      `contract fuzzing (${backend}): seed ${SEED} (replay with FUZZ_SEED=${SEED}${PATH ? ` FUZZ_PATH=${PATH}` : ''}), ${PATH ? 'the batch of that path' : `${REQUESTS} requests`}`,
    );
    await fc
      .assert(
        fc.asyncProperty(fc.array(request, { minLength: BATCH, maxLength: BATCH }), async (batch) => {
          const answers = await Promise.all(batch.map((r) => send(svc, world, r)));
          const violations: Violation[] = [];
          answers.forEach((answer, i) => {
            const r = batch[i]!;
            sent++;
            const key = `${r.operation.operationId} ${answer.status}`;
            statuses.set(key, (statuses.get(key) ?? 0) + 1);
            perOperation.set(r.operation.operationId, (perOperation.get(r.operation.operationId) ?? 0) + 1);
            const problem = check(r, answer.status, answer.contentType, answer.text);
            if (problem) {
              violations.push({
                request: `${r.operation.method} ${r.url.slice(0, 300)} [${r.label}] body ${(r.body ?? '').slice(0, 300)}`,
                status: answer.status,
                problem,
                body: answer.text.slice(0, 500),
              });
            }
          });
          assert.deepEqual(violations, []);
        }),
        { seed: SEED, endOnFailure: true, ...(PATH ? { path: PATH, numRuns: 1 } : { numRuns: RUNS }) },
      )
      .catch((error: unknown) => {
        console.log(
          `contract fuzzing (${backend}): failed; replay with FUZZ_SEED=${SEED} and the path in the report (FUZZ_PATH=...)`,
        );
        throw error;
      });
    const seconds = (performance.now() - started) / 1000;
    console.log(
      `contract fuzzing (${backend}): ${sent} requests in ${seconds.toFixed(1)} s over ${perOperation.size} operations`,
    );
    if (process.env.FUZZ_VERBOSE)
      console.log(
        [...statuses.entries()]
          .sort()
          .map(([k, n]) => `${k}: ${n}`)
          .join('\n'),
      );
    if (PATH) return; // a replay sends one batch
    assert.ok(sent >= REQUESTS, `sent ${sent} requests, expected at least ${REQUESTS}`);
    assert.equal(perOperation.size, operations.length, 'every operation was called');
    // Not only refusals: valid requests reach the records and succeed on every public operation.
    const succeeded = new Set(
      [...statuses.keys()].filter((k) => /\s2\d\d$/.test(k)).map((k) => k.split(' ')[0]),
    );
    const neverSucceeded = operations.filter((o) => !succeeded.has(o.operationId)).map((o) => o.operationId);
    console.log(
      `contract fuzzing (${backend}): operations never answered 2xx: ${neverSucceeded.join(', ') || 'none'}`,
    );
  });
});
