// The shared contract suites (authentication, permission, add-on, tenant isolation, Idempotency-Key)
// for each patient operation.
import { after, before } from 'node:test';
import { type RouteCase, runSharedSuites } from './contract-suites.ts';
import {
  apiClient,
  describeEachBackend,
  patientBody,
  startService,
  type TestPractice,
  type TestService,
  uniqueKey,
} from './harness.ts';

const SYSTEM = 'urn:test:mrn';

async function registeredPatient(svc: TestService, practice: TestPractice) {
  const body = patientBody({ externalId: { system: SYSTEM, value: `mrn-${uniqueKey()}` } });
  const created = await apiClient(svc, practice.key)('POST', '/patients', {
    body,
    idempotencyKey: uniqueKey(),
  });
  if (created.status !== 201) throw new Error(`could not register a patient: ${created.text}`);
  return { patientId: created.body.id as string, externalId: body.externalId.value };
}

const routes: RouteCase[] = [
  {
    method: 'POST',
    path: '/patients',
    permission: 'PATIENTS:CREATE',
    status: 201,
    creates: true,
    body: () => patientBody(),
  },
  {
    method: 'GET',
    path: (f) => `/patients/${f.patientId}`,
    permission: 'PATIENTS:READ',
    status: 200,
    prepare: registeredPatient,
    idParam: 'patientId',
  },
  {
    name: 'GET /patients?externalSystem&externalId',
    method: 'GET',
    path: (f) => `/patients?externalSystem=${encodeURIComponent(SYSTEM)}&externalId=${f.externalId}`,
    permission: 'PATIENTS:READ',
    status: 200,
    prepare: registeredPatient,
    idParam: 'externalId',
  },
  {
    method: 'PATCH',
    path: (f) => `/patients/${f.patientId}`,
    permission: 'PATIENTS:UPDATE',
    status: 200,
    body: () => ({ lastName: 'Nkosi' }),
    prepare: registeredPatient,
    idParam: 'patientId',
  },
];

describeEachBackend('patient routes, shared contract', (backend) => {
  let svc: TestService;
  before(async () => {
    svc = await startService(backend);
  });
  after(async () => {
    await svc.close();
  });
  for (const route of routes) runSharedSuites(() => svc, route);
});
