// The shared contract suites (authentication, permission, add-on, tenant isolation) for each claim
// operation. Sending, resubmitting and reversing change the claim, so a second success on the same
// invoice would be refused: `prepare` makes a pool of invoices in the right state and each request of
// the owning practice takes the next one from the pool (a refused request just uses one up).
import { after, before } from 'node:test';
import { addCoverage, billVisit, newPatient, type World } from './claims-fixtures.ts';
import { type Fixture, type RouteCase, runSharedSuites } from './contract-suites.ts';
import {
  apiClient,
  describeEachBackend,
  startService,
  type TestPractice,
  type TestService,
} from './harness.ts';

/** Requests a suite sends with one fixture: the authentication suite's ten is the most. */
const POOL_SIZE = 10;
const pools = new Map<string, { ids: string[]; next: number }>();

function worldOf(svc: TestService, practice: TestPractice): World {
  return {
    svc,
    api: apiClient(svc, practice.key),
    practiceId: practice.practiceId,
    practitionerId: practice.practitionerId,
  };
}

/** Issued invoices of one patient, each claimed (bill's submitClaim) unless `claim` is false, then drained. */
async function invoicePool(
  svc: TestService,
  practice: TestPractice,
  size: number,
  options: { memberNumber: string; claim: boolean },
): Promise<Fixture> {
  const w = worldOf(svc, practice);
  const { patientId } = await newPatient(w, null);
  await addCoverage(w, patientId, { memberNumber: options.memberNumber });
  const ids: string[] = [];
  for (let i = 0; i < size; i++) {
    const billed = await billVisit(w, patientId, [{ code: '0190', dx: ['J06.9'] }], {
      issue: true,
      submitClaim: options.claim,
    });
    ids.push(billed.body.invoice.id);
  }
  await svc.worker.drain();
  const pool = ids.join(',');
  pools.set(pool, { ids, next: 0 });
  return { invoiceId: ids[0]!, pool };
}

/** The next invoice of the fixture's pool, or the fixture's own invoiceId when a suite replaced it. */
function pooledInvoice(f: Fixture): string {
  const pool = f.pool ? pools.get(f.pool) : undefined;
  if (!pool || pool.ids[0] !== f.invoiceId) return f.invoiceId!;
  const id = pool.ids[pool.next % pool.ids.length]!;
  pool.next += 1;
  return id;
}

const routes: RouteCase[] = [
  {
    method: 'POST',
    path: (f) => `/invoices/${pooledInvoice(f)}/claim`,
    permission: 'CLAIMS:EXECUTE',
    status: 202,
    body: () => ({}),
    prepare: (svc, practice) => invoicePool(svc, practice, POOL_SIZE, { memberNumber: 'M-1', claim: false }),
    idParam: 'invoiceId',
  },
  {
    method: 'GET',
    path: (f) => `/invoices/${f.invoiceId}/claim`,
    permission: 'CLAIMS:READ',
    status: 200,
    prepare: (svc, practice) => invoicePool(svc, practice, 1, { memberNumber: 'M-2', claim: true }),
    idParam: 'invoiceId',
  },
  {
    method: 'POST',
    path: (f) => `/invoices/${pooledInvoice(f)}/claim/resubmit`,
    permission: 'CLAIMS:EXECUTE',
    status: 202,
    // Rejected claims (REJECT member) are resubmittable.
    prepare: (svc, practice) =>
      invoicePool(svc, practice, POOL_SIZE, { memberNumber: 'REJECT-CONTRACT', claim: true }),
    idParam: 'invoiceId',
  },
  {
    method: 'POST',
    path: (f) => `/invoices/${pooledInvoice(f)}/claim/reverse`,
    permission: 'CLAIMS:EXECUTE',
    status: 202,
    body: () => ({ reason: 'Contract suite' }),
    prepare: (svc, practice) => invoicePool(svc, practice, POOL_SIZE, { memberNumber: 'M-3', claim: true }),
    idParam: 'invoiceId',
  },
];

describeEachBackend('claim routes, shared contract', (backend) => {
  let svc: TestService;
  before(async () => {
    svc = await startService(backend);
  });
  after(async () => {
    await svc.close();
  });
  for (const route of routes) runSharedSuites(() => svc, route);
});
