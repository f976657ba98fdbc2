// The shared contract suites (authentication, permission, add-on, tenant isolation, Idempotency-Key)
// for the insurance plan look-up and the coverage operations.
import { randomBytes } from 'node:crypto';
import { after, before } from 'node:test';
import { type Fixture, type RouteCase, runSharedSuites } from './contract-suites.ts';
import {
  apiClient,
  describeEachBackend,
  patientBody,
  startService,
  type TestPractice,
  type TestService,
  uniqueKey,
} from './harness.ts';

async function patientWithCoverage(svc: TestService, practice: TestPractice): Promise<Fixture> {
  const api = apiClient(svc, practice.key);
  const patient = await api('POST', '/patients', { body: patientBody(), idempotencyKey: uniqueKey() });
  if (patient.status !== 201) throw new Error(`could not register a patient: ${patient.text}`);
  const coverage = await api('POST', `/patients/${patient.body.id}/coverages`, {
    body: { planId: 'pln_ubuntu_essential', memberNumber: 'M100' },
    idempotencyKey: uniqueKey(),
  });
  if (coverage.status !== 201) throw new Error(`could not add a coverage: ${coverage.text}`);
  return { patientId: patient.body.id, coverageId: coverage.body.id };
}

const routes: RouteCase[] = [
  {
    method: 'GET',
    path: '/insurance-plans?name=ubuntu',
    permission: 'PATIENT_COVERAGE:READ',
    status: 200,
  },
  {
    method: 'POST',
    path: (f) => `/patients/${f.patientId}/coverages`,
    permission: 'PATIENT_COVERAGE:CREATE',
    status: 201,
    creates: true,
    body: () => ({
      planId: 'pln_ubuntu_classic',
      memberNumber: `M${randomBytes(4).toString('hex')}`,
      dependentCode: '00',
    }),
    prepare: patientWithCoverage,
    idParam: 'patientId',
  },
  {
    method: 'GET',
    path: (f) => `/patients/${f.patientId}/coverages`,
    permission: 'PATIENT_COVERAGE:READ',
    status: 200,
    prepare: patientWithCoverage,
    idParam: 'patientId',
  },
  {
    name: 'GET /patients/{patientId}/coverages/{coverageId}',
    method: 'GET',
    path: (f) => `/patients/${f.patientId}/coverages/${f.coverageId}`,
    permission: 'PATIENT_COVERAGE:READ',
    status: 200,
    prepare: patientWithCoverage,
    idParam: 'coverageId',
  },
];

describeEachBackend('insurance routes, shared contract', (backend) => {
  let svc: TestService;
  before(async () => {
    svc = await startService(backend);
  });
  after(async () => {
    await svc.close();
  });
  for (const route of routes) runSharedSuites(() => svc, route);
});
