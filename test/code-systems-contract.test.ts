// The shared contract suites (authentication, permission, add-on, tenant isolation, Idempotency-Key)
// for each code system operation.
import { randomBytes } from 'node:crypto';
import { after, before } from 'node:test';
import { type Fixture, type RouteCase, runSharedSuites } from './contract-suites.ts';
import {
  apiClient,
  describeEachBackend,
  startService,
  type TestPractice,
  type TestService,
  uniqueKey,
} from './harness.ts';

const hex = () => randomBytes(4).toString('hex');

async function ownSystem(svc: TestService, practice: TestPractice, concepts = 0): Promise<Fixture> {
  const api = apiClient(svc, practice.key);
  const name = `Contract ${hex()}`;
  const system = await api('POST', '/code-systems', {
    body: { name, usage: ['procedure'] },
    idempotencyKey: uniqueKey(),
  });
  if (system.status !== 201) throw new Error(`could not create a code system: ${system.text}`);
  const conceptIds: string[] = [];
  for (let i = 0; i < concepts; i++) {
    const concept = await api('POST', `/code-systems/${system.body.id}/concepts`, {
      body: { code: `C${i}-${hex()}`, display: `Code ${i}` },
      idempotencyKey: uniqueKey(),
    });
    if (concept.status !== 201) throw new Error(`could not add a code: ${concept.text}`);
    conceptIds.push(concept.body.id);
  }
  return { codeSystemId: system.body.id, name, conceptIds: conceptIds.join(',') };
}

// A deletion succeeds once per code, and a suite may expect success twice on one fixture: each call
// takes the next of the fixture's codes.
const taken = new Map<string, number>();
function nextConcept(fixture: Fixture): string {
  const ids = (fixture.conceptIds ?? '').split(',');
  const n = taken.get(fixture.conceptIds ?? '') ?? 0;
  taken.set(fixture.conceptIds ?? '', n + 1);
  return ids[Math.min(n, ids.length - 1)]!;
}

const routes: RouteCase[] = [
  {
    method: 'GET',
    path: '/code-systems?usage=procedure',
    permission: 'CODE_SYSTEMS:READ',
    status: 200,
  },
  {
    method: 'POST',
    path: '/code-systems',
    permission: 'CODE_SYSTEMS:CREATE',
    status: 201,
    creates: true,
    body: () => ({ name: `System ${hex()}`, usage: ['procedure'] }),
  },
  {
    method: 'GET',
    path: (f) => `/code-systems/${f.codeSystemId}`,
    permission: 'CODE_SYSTEMS:READ',
    status: 200,
    prepare: (svc, practice) => ownSystem(svc, practice),
    idParam: 'codeSystemId',
  },
  {
    method: 'PUT',
    path: (f) => `/code-systems/${f.codeSystemId}`,
    permission: 'CODE_SYSTEMS:UPDATE',
    status: 200,
    body: (f) => ({ name: f.name, title: `Title ${hex()}`, usage: ['procedure', 'condition'] }),
    prepare: (svc, practice) => ownSystem(svc, practice),
    idParam: 'codeSystemId',
  },
  {
    method: 'GET',
    path: (f) => `/code-systems/${f.codeSystemId}/concepts?search=code`,
    permission: 'CODE_SYSTEMS:READ',
    status: 200,
    prepare: (svc, practice) => ownSystem(svc, practice, 1),
    idParam: 'codeSystemId',
  },
  {
    method: 'POST',
    path: (f) => `/code-systems/${f.codeSystemId}/concepts`,
    permission: 'CODE_SYSTEMS:UPDATE',
    status: 201,
    creates: true,
    body: () => ({ code: `N-${hex()}`, display: 'A new code', defaultPrice: 1500 }),
    prepare: (svc, practice) => ownSystem(svc, practice),
    idParam: 'codeSystemId',
  },
  {
    name: 'GET /code-systems/{codeSystemId}/concepts/{conceptId}',
    method: 'GET',
    path: (f) => `/code-systems/${f.codeSystemId}/concepts/${(f.conceptIds ?? '').split(',')[0]}`,
    permission: 'CODE_SYSTEMS:READ',
    status: 200,
    prepare: (svc, practice) => ownSystem(svc, practice, 1),
    idParam: 'codeSystemId',
  },
  {
    name: 'DELETE /code-systems/{codeSystemId}/concepts/{conceptId}',
    method: 'DELETE',
    path: (f) => `/code-systems/${f.codeSystemId}/concepts/${nextConcept(f)}`,
    permission: 'CODE_SYSTEMS:UPDATE',
    status: 200,
    prepare: (svc, practice) => ownSystem(svc, practice, 4),
    idParam: 'codeSystemId',
  },
];

describeEachBackend('code system routes, shared contract', (backend) => {
  let svc: TestService;
  before(async () => {
    svc = await startService(backend);
  });
  after(async () => {
    await svc.close();
  });
  for (const route of routes) runSharedSuites(() => svc, route);
});
