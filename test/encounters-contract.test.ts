// The shared contract suites (authentication, permission, add-on, tenant isolation, Idempotency-Key)
// for each encounter operation.
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

const HOUR = 60 * 60 * 1000;

/** A visit that ended an hour before the service's now, as the fixture recorded it. */
function visit(f: Fixture) {
  const end = Date.parse(f.serviceNow!) - HOUR;
  return {
    patientId: f.patientId,
    practitionerId: f.practitionerId,
    start: new Date(end - HOUR).toISOString(),
    end: new Date(end).toISOString(),
    diagnoses: [{ code: 'J06.9' }],
    procedures: [{ code: '0190', diagnosisCodes: ['J06.9'], note: `note ${randomBytes(4).toString('hex')}` }],
  };
}

async function patientWithVisit(svc: TestService, practice: TestPractice): Promise<Fixture> {
  const api = apiClient(svc, practice.key);
  const patient = await api('POST', '/patients', { body: patientBody(), idempotencyKey: uniqueKey() });
  if (patient.status !== 201) throw new Error(`could not register a patient: ${patient.text}`);
  const fixture: Fixture = {
    patientId: patient.body.id,
    practitionerId: practice.practitionerId,
    serviceNow: svc.clock.now().toISOString(),
  };
  const encounter = await api('POST', '/encounters', { body: visit(fixture), idempotencyKey: uniqueKey() });
  if (encounter.status !== 201) throw new Error(`could not record a visit: ${encounter.text}`);
  return { ...fixture, encounterId: encounter.body.id };
}

const routes: RouteCase[] = [
  {
    method: 'POST',
    path: '/encounters',
    permission: 'ENCOUNTERS:CREATE',
    status: 201,
    creates: true,
    body: visit,
    prepare: patientWithVisit,
    idParam: 'patientId',
  },
  {
    method: 'GET',
    path: (f) => `/encounters/${f.encounterId}`,
    permission: 'ENCOUNTERS:READ',
    status: 200,
    prepare: patientWithVisit,
    idParam: 'encounterId',
  },
  {
    name: 'GET /encounters?patientId',
    method: 'GET',
    path: (f) => `/encounters?patientId=${f.patientId}`,
    permission: 'ENCOUNTERS:READ',
    status: 200,
    prepare: patientWithVisit,
    idParam: 'patientId',
  },
];

describeEachBackend('encounter routes, shared contract', (backend) => {
  let svc: TestService;
  before(async () => {
    svc = await startService(backend);
  });
  after(async () => {
    await svc.close();
  });
  for (const route of routes) runSharedSuites(() => svc, route);
});
