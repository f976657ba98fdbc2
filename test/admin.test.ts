// The operator (admin) API, route by route, on each backend: practices, the Integrations add-on,
// practitioners, clients, keys and the audit log, with the refusals an operator can run into.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { apiClient, call, describeEachBackend, startService, type TestService } from './harness.ts';

const ICD10 = 'http://hl7.org/fhir/sid/icd-10';
const TARIFF = 'urn:service:codesystem:tariff';
const FIND_PATIENTS = '/patients?externalSystem=a&externalId=b';

describeEachBackend('admin API', (backend) => {
  let svc: TestService;
  before(async () => {
    svc = await startService(backend);
  });
  after(async () => {
    await svc.close();
  });

  async function newPractice(body: Record<string, unknown> = {}) {
    const created = await svc.admin('POST', '/practices', { name: 'Admin Test Practice', ...body });
    assert.equal(created.status, 201, created.text);
    return created.body.id as string;
  }

  async function newClient(practiceId: string, body: Record<string, unknown> = {}) {
    const created = await svc.admin('POST', `/practices/${practiceId}/clients`, {
      name: 'Client',
      permissions: ['PATIENTS:READ'],
      ...body,
    });
    assert.equal(created.status, 201, created.text);
    return created.body;
  }

  async function newKey(clientId: string, body?: unknown) {
    const issued = await svc.admin('POST', `/clients/${clientId}/keys`, body);
    assert.equal(issued.status, 201, issued.text);
    return issued.body as { id: string; key: string; expiresAt: string | null };
  }

  test('a practice is created with the defaults, read back and listed', async () => {
    const created = await svc.admin('POST', '/practices', { name: 'Sunnyside Clinic' });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.object, 'practice');
    assert.match(created.body.id, /^org_/);
    assert.equal(created.body.name, 'Sunnyside Clinic');
    assert.equal(created.body.currency, 'ZAR');
    assert.equal(created.body.timezone, 'Africa/Johannesburg');
    assert.equal(created.body.integrationsEnabled, true);

    const read = await svc.admin('GET', `/practices/${created.body.id}`);
    assert.equal(read.status, 200);
    assert.deepEqual(read.body, created.body);

    const listed = await svc.admin('GET', '/practices');
    assert.equal(listed.status, 200);
    assert.equal(listed.body.object, 'list');
    assert.ok(listed.body.data.some((p: { id: string }) => p.id === created.body.id));
  });

  test('a practice keeps a currency and time zone it is given', async () => {
    const created = await svc.admin('POST', '/practices', {
      name: 'Windhoek Rooms',
      currency: 'NAD',
      timezone: 'Africa/Windhoek',
    });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.currency, 'NAD');
    assert.equal(created.body.timezone, 'Africa/Windhoek');
  });

  test('a currency that is not an ISO 4217 currency with a minor unit is refused, naming currency', async () => {
    for (const currency of ['ABC', 'XXX', 'XAU', 'JPY', 'zar']) {
      const refused = await svc.admin('POST', '/practices', { name: 'Rooms', currency });
      assert.equal(refused.status, 422, `${currency}: ${refused.text}`);
      assert.equal(refused.body.code, 'validation_failed');
      assert.deepEqual(
        refused.body.errors.map((e: { field: string }) => e.field),
        ['currency'],
        currency,
      );
    }
    for (const currency of ['USD', 'BWP', 'KWD']) {
      const created = await svc.admin('POST', '/practices', { name: 'Rooms', currency });
      assert.equal(created.status, 201, `${currency}: ${created.text}`);
    }
  });

  test('an unknown time zone is refused with 422 naming timezone', async () => {
    const refused = await svc.admin('POST', '/practices', { name: 'X', timezone: 'Mars/Olympus_Mons' });
    assert.equal(refused.status, 422);
    assert.equal(refused.body.code, 'validation_failed');
    assert.deepEqual(
      refused.body.errors.map((e: { field: string }) => e.field),
      ['timezone'],
    );
  });

  test('the Integrations add-on can be turned off and on again', async () => {
    const practice = await svc.newPractice();
    const api = apiClient(svc, practice.key);
    assert.equal((await api('GET', FIND_PATIENTS)).status, 200);

    const off = await svc.admin('PUT', `/practices/${practice.practiceId}/integrations`, {
      enabled: false,
    });
    assert.equal(off.status, 200, off.text);
    assert.equal(off.body.integrationsEnabled, false);
    const refused = await api('GET', FIND_PATIENTS);
    assert.equal(refused.status, 403);
    assert.equal(refused.body.code, 'addon_inactive');

    const on = await svc.admin('PUT', `/practices/${practice.practiceId}/integrations`, { enabled: true });
    assert.equal(on.status, 200);
    assert.equal(on.body.integrationsEnabled, true);
    assert.equal((await api('GET', FIND_PATIENTS)).status, 200);

    const malformed = await svc.admin('PUT', `/practices/${practice.practiceId}/integrations`, {
      enabled: 'yes',
    });
    assert.equal(malformed.status, 422);
    assert.equal(malformed.body.errors[0].field, 'enabled');
  });

  test('practitioners fall back to ICD-10 and the tariff, or keep the systems given', async () => {
    const practiceId = await newPractice();
    const plain = await svc.admin('POST', `/practices/${practiceId}/practitioners`, { name: 'Dr Plain' });
    assert.equal(plain.status, 201, plain.text);
    assert.match(plain.body.id, /^prt_/);
    assert.equal(plain.body.practiceId, practiceId);
    assert.equal(plain.body.registrationNumber, null);
    assert.deepEqual(plain.body.defaultSystems, { condition: ICD10, procedure: TARIFF });
    assert.equal(plain.body.active, true);

    const custom = await svc.admin('POST', `/practices/${practiceId}/practitioners`, {
      name: 'Dr Custom',
      registrationNumber: 'MP0999999',
      defaultSystems: { condition: 'urn:example:conditions' },
    });
    assert.equal(custom.status, 201, custom.text);
    assert.equal(custom.body.registrationNumber, 'MP0999999');
    assert.deepEqual(custom.body.defaultSystems, {
      condition: 'urn:example:conditions',
      procedure: TARIFF,
    });

    const listed = await svc.admin('GET', `/practices/${practiceId}/practitioners`);
    assert.equal(listed.status, 200);
    assert.deepEqual(
      listed.body.data.map((p: { id: string }) => p.id),
      [plain.body.id, custom.body.id],
    );
  });

  test('a client is created, read, listed and fully replaced', async () => {
    const practiceId = await newPractice();
    const created = await newClient(practiceId, {
      name: 'Front desk',
      permissions: ['PATIENTS:READ', 'PATIENTS:CREATE'],
      allowedIps: ['10.0.0.0/8', '2001:db8::/32', '192.168.1.10'],
      rateLimitPerMinute: 120,
    });
    assert.match(created.id, /^cli_/);
    assert.equal(created.practiceId, practiceId);
    assert.deepEqual(created.permissions, ['PATIENTS:READ', 'PATIENTS:CREATE']);
    assert.deepEqual(created.allowedIps, ['10.0.0.0/8', '2001:db8::/32', '192.168.1.10']);
    assert.equal(created.rateLimitPerMinute, 120);
    assert.equal(created.status, 'active');

    const read = await svc.admin('GET', `/clients/${created.id}`);
    assert.equal(read.status, 200);
    assert.deepEqual(read.body, created);
    const listed = await svc.admin('GET', `/practices/${practiceId}/clients`);
    assert.deepEqual(
      listed.body.data.map((c: { id: string }) => c.id),
      [created.id],
    );

    // Full replacement: what is left out is cleared.
    const replaced = await svc.admin('PUT', `/clients/${created.id}`, {
      name: 'Back office',
      permissions: ['INVOICES:READ'],
    });
    assert.equal(replaced.status, 200, replaced.text);
    assert.equal(replaced.body.name, 'Back office');
    assert.deepEqual(replaced.body.permissions, ['INVOICES:READ']);
    assert.deepEqual(replaced.body.allowedIps, []);
    assert.equal(replaced.body.rateLimitPerMinute, null);
    assert.equal(replaced.body.createdAt, created.createdAt);
    assert.deepEqual((await svc.admin('GET', `/clients/${created.id}`)).body, replaced.body);
  });

  test('a replaced permission set takes effect on the next call', async () => {
    const practice = await svc.newPractice({ permissions: ['PATIENTS:READ'] });
    const api = apiClient(svc, practice.key);
    assert.equal((await api('GET', FIND_PATIENTS)).status, 200);
    const replaced = await svc.admin('PUT', `/clients/${practice.clientId}`, {
      name: 'Test client',
      permissions: ['INVOICES:READ'],
    });
    assert.equal(replaced.status, 200);
    const refused = await api('GET', FIND_PATIENTS);
    assert.equal(refused.status, 403);
    assert.equal(refused.body.code, 'forbidden');
  });

  test('a suspended client is refused with 401 until it is resumed', async () => {
    const practice = await svc.newPractice();
    const api = apiClient(svc, practice.key);
    const suspended = await svc.admin('POST', `/clients/${practice.clientId}/suspend`);
    assert.equal(suspended.status, 200, suspended.text);
    assert.equal(suspended.body.status, 'suspended');
    const refused = await api('GET', FIND_PATIENTS);
    assert.equal(refused.status, 401);
    assert.equal(refused.body.code, 'unauthenticated');

    const resumed = await svc.admin('POST', `/clients/${practice.clientId}/resume`);
    assert.equal(resumed.status, 200);
    assert.equal(resumed.body.status, 'active');
    assert.equal((await api('GET', FIND_PATIENTS)).status, 200);
  });

  test('an address that is not an IP or CIDR range is refused naming allowedIps.N', async () => {
    const practiceId = await newPractice();
    const refused = await svc.admin('POST', `/practices/${practiceId}/clients`, {
      name: 'Bad ranges',
      permissions: ['PATIENTS:READ'],
      allowedIps: ['10.0.0.0/8', 'not-an-address', '10.0.0.0/33'],
    });
    assert.equal(refused.status, 422);
    assert.equal(refused.body.code, 'validation_failed');
    assert.deepEqual(
      refused.body.errors.map((e: { field: string }) => e.field),
      ['allowedIps.1', 'allowedIps.2'],
    );

    const client = await newClient(practiceId);
    const replaced = await svc.admin('PUT', `/clients/${client.id}`, {
      name: 'Client',
      permissions: [],
      allowedIps: ['300.1.1.1'],
    });
    assert.equal(replaced.status, 422);
    assert.equal(replaced.body.errors[0].field, 'allowedIps.0');
  });

  test('an unknown permission is refused with 422 naming it', async () => {
    const practiceId = await newPractice();
    const refused = await svc.admin('POST', `/practices/${practiceId}/clients`, {
      name: 'Greedy',
      permissions: ['PATIENTS:READ', 'PATIENTS:DELETE'],
    });
    assert.equal(refused.status, 422);
    assert.equal(refused.body.code, 'validation_failed');
    assert.deepEqual(
      refused.body.errors.map((e: { field: string }) => e.field),
      ['permissions.1'],
    );
    const listed = await svc.admin('GET', `/practices/${practiceId}/clients`);
    assert.deepEqual(listed.body.data, []);
  });

  test('a key is shown once, works, is listed without the key and answers 401 once revoked', async () => {
    const practiceId = await newPractice();
    const client = await newClient(practiceId);
    const issued = await newKey(client.id, {});
    assert.match(issued.id, /^key_/);
    assert.match(issued.key, /^pbk_/);
    assert.equal(issued.expiresAt, null);

    const api = apiClient(svc, issued.key);
    const found = await api('GET', FIND_PATIENTS);
    assert.equal(found.status, 200, found.text);
    assert.deepEqual(found.body.data, []);

    const listed = await svc.admin('GET', `/clients/${client.id}/keys`);
    assert.equal(listed.status, 200);
    assert.equal(listed.body.data.length, 1);
    assert.equal(listed.body.data[0].id, issued.id);
    assert.equal('key' in listed.body.data[0], false);
    assert.equal(listed.text.includes(issued.key), false);
    assert.equal(listed.text.includes(issued.key.split('_')[2]!), false);

    const revoked = await svc.admin('POST', `/keys/${issued.id}/revoke`);
    assert.equal(revoked.status, 200, revoked.text);
    assert.equal(typeof revoked.body.revokedAt, 'string');
    assert.equal('key' in revoked.body, false);
    const refused = await api('GET', FIND_PATIENTS);
    assert.equal(refused.status, 401);
    assert.equal(refused.body.code, 'unauthenticated');

    const again = await svc.admin('POST', `/keys/${issued.id}/revoke`);
    assert.equal(again.status, 200);
    assert.equal(again.body.revokedAt, revoked.body.revokedAt);
  });

  test('a key can be issued without a body, or with an expiry in the future', async () => {
    const practiceId = await newPractice();
    const client = await newClient(practiceId);
    const bare = await newKey(client.id);
    assert.equal(bare.expiresAt, null);

    const expiresAt = new Date(svc.clock.now().getTime() + 86_400_000).toISOString();
    const expiring = await newKey(client.id, { expiresAt });
    assert.equal(expiring.expiresAt, expiresAt);
    assert.equal((await apiClient(svc, expiring.key)('GET', FIND_PATIENTS)).status, 200);
  });

  test('a key past its expiry answers 401', async () => {
    const practice = await svc.newPractice();
    const expiresAt = new Date(svc.clock.now().getTime() + 60_000).toISOString();
    const issued = await newKey(practice.clientId, { expiresAt });
    const api = apiClient(svc, issued.key);
    assert.equal((await api('GET', FIND_PATIENTS)).status, 200);
    svc.clock.advance(120_000);
    try {
      assert.equal((await api('GET', FIND_PATIENTS)).status, 401);
    } finally {
      svc.clock.advance(-120_000);
    }
  });

  test('a key shows who issued it, and when it was last used to within a minute', async () => {
    const practice = await svc.newPractice();
    const issued = await svc.admin('POST', `/clients/${practice.clientId}/keys`, {});
    assert.equal(issued.status, 201, issued.text);
    assert.match(issued.body.createdBy, /^operator:[0-9a-f]{12}$/);
    assert.equal(issued.body.createdBy.includes(svc.adminToken), false);
    assert.equal(issued.body.lastUsedAt, null);
    const lastUsed = async () =>
      (await svc.admin('GET', `/clients/${practice.clientId}/keys`)).body.data.find(
        (k: { id: string }) => k.id === issued.body.id,
      ).lastUsedAt as string | null;
    const api = apiClient(svc, issued.body.key);
    /** Calls with the key and answers the lastUsedAt recorded, checking it is the call's time. */
    const use = async () => {
      const before = svc.clock.now().getTime();
      assert.equal((await api('GET', FIND_PATIENTS)).status, 200);
      const after = svc.clock.now().getTime();
      const at = await lastUsed();
      assert.ok(at, 'recorded');
      return { at, during: Date.parse(at) >= before && Date.parse(at) <= after };
    };
    try {
      const first = await use();
      assert.ok(first.during, 'the time of the first use');
      svc.clock.advance(30_000);
      assert.equal((await use()).at, first.at, 'not written again within the minute');
      svc.clock.advance(31_000);
      assert.ok((await use()).during, 'written again once a minute has passed');
      const listed = (await svc.admin('GET', `/clients/${practice.clientId}/keys`)).body.data[0];
      assert.equal(listed.createdBy, issued.body.createdBy);
    } finally {
      svc.clock.reset();
    }
  });

  test('an expiry in the past is refused with 422 naming expiresAt', async () => {
    const practiceId = await newPractice();
    const client = await newClient(practiceId);
    const refused = await svc.admin('POST', `/clients/${client.id}/keys`, {
      expiresAt: new Date(svc.clock.now().getTime() - 1000).toISOString(),
    });
    assert.equal(refused.status, 422);
    assert.equal(refused.body.code, 'validation_failed');
    assert.equal(refused.body.errors[0].field, 'expiresAt');
    const listed = await svc.admin('GET', `/clients/${client.id}/keys`);
    assert.deepEqual(listed.body.data, []);
  });

  test('a missing or wrong admin token is refused with 401', async () => {
    for (const token of [undefined, 'adm_wrong', svc.adminToken.slice(0, -1)]) {
      const refused = await call(svc.baseUrl, 'GET', '/admin/v1/practices', token ? { token } : {});
      assert.equal(refused.status, 401, `token ${token}`);
      assert.equal(refused.body.code, 'unauthenticated');
      assert.equal(refused.headers.get('www-authenticate'), 'Bearer');
    }
    const practice = await svc.newPractice();
    // An API key is not an admin token.
    const withApiKey = await call(svc.baseUrl, 'POST', '/admin/v1/practices', {
      token: practice.key,
      body: { name: 'Sneaky' },
    });
    assert.equal(withApiKey.status, 401);
  });

  test('unknown ids answer 404', async () => {
    const cases: Array<[string, string, unknown?]> = [
      ['GET', '/practices/org_unknown'],
      ['PUT', '/practices/org_unknown/integrations', { enabled: false }],
      ['POST', '/practices/org_unknown/practitioners', { name: 'Dr Nobody' }],
      ['GET', '/practices/org_unknown/practitioners'],
      ['POST', '/practices/org_unknown/clients', { name: 'X', permissions: [] }],
      ['GET', '/practices/org_unknown/clients'],
      ['GET', '/clients/cli_unknown'],
      ['PUT', '/clients/cli_unknown', { name: 'X', permissions: [] }],
      ['POST', '/clients/cli_unknown/suspend'],
      ['POST', '/clients/cli_unknown/resume'],
      ['POST', '/clients/cli_unknown/keys', {}],
      ['GET', '/clients/cli_unknown/keys'],
      ['POST', '/keys/key_unknown/revoke'],
      ['GET', '/practices/org_unknown/audit-events'],
    ];
    for (const [method, path, body] of cases) {
      const answer = await svc.admin(method, path, body);
      assert.equal(answer.status, 404, `${method} ${path}: ${answer.text}`);
      assert.equal(answer.body.code, 'not_found');
    }
  });

  test('the audit log pages newest first with limit, nextCursor and hasMore', async () => {
    const practiceId = await newPractice();
    const client = await newClient(practiceId);
    await svc.admin('POST', `/clients/${client.id}/suspend`);
    await svc.admin('POST', `/clients/${client.id}/resume`);
    await newKey(client.id, {});
    // practice, client, suspend, resume, key: five operator events.
    const seen: Array<{ id: string; route: string; actor: string }> = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const query = `limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const page = await svc.admin('GET', `/practices/${practiceId}/audit-events?${query}`);
      assert.equal(page.status, 200, page.text);
      assert.equal(page.body.object, 'list');
      assert.ok(page.body.data.length <= 2);
      assert.equal(page.body.hasMore, page.body.nextCursor !== null);
      seen.push(...page.body.data);
      cursor = page.body.nextCursor ?? undefined;
      pages++;
    } while (cursor && pages < 10);
    assert.equal(pages, 3);
    assert.deepEqual(
      seen.map((e) => e.route),
      [
        '/admin/v1/clients/:clientId/keys',
        '/admin/v1/clients/:clientId/resume',
        '/admin/v1/clients/:clientId/suspend',
        '/admin/v1/practices/:practiceId/clients',
        '/admin/v1/practices',
      ],
    );
    assert.ok(seen.every((e) => e.actor === 'operator'));
    assert.equal(new Set(seen.map((e) => e.id)).size, seen.length);

    const whole = await svc.admin('GET', `/practices/${practiceId}/audit-events`);
    assert.equal(whole.body.hasMore, false);
    assert.equal(whole.body.nextCursor, null);
    assert.deepEqual(
      whole.body.data.map((e: { id: string }) => e.id),
      seen.map((e) => e.id),
    );
  });

  test('the audit log filters by client, method, path, status and time', async () => {
    const practice = await svc.newPractice();
    const other = await newClient(practice.practiceId, { permissions: ['PATIENTS:READ'] });
    const otherKey = await newKey(other.id, {});
    const mine = apiClient(svc, practice.key);
    const theirs = apiClient(svc, otherKey.key);
    assert.equal((await theirs('GET', FIND_PATIENTS)).status, 200);
    assert.equal((await mine('GET', '/patients/pat_doesnotexist')).status, 404);
    await svc.admin('POST', `/clients/${other.id}/suspend`);
    const refused = await theirs('GET', FIND_PATIENTS);
    assert.equal(refused.status, 401);
    const list = async (query: string) => {
      const page = await svc.admin('GET', `/practices/${practice.practiceId}/audit-events?${query}`);
      assert.equal(page.status, 200, page.text);
      return page.body.data as Array<{
        clientId: string | null;
        method: string;
        route: string;
        status: number;
        requestId: string;
      }>;
    };
    // A refused known key's row is written just after its 401 was sent.
    const refusedId = refused.headers.get('x-request-id');
    for (let i = 0; i < 60 && !(await list('status=401')).some((e) => e.requestId === refusedId); i++)
      await new Promise((resolve) => setTimeout(resolve, 50));
    const byClient = await list(`clientId=${other.id}`);
    assert.ok(byClient.length >= 2);
    assert.ok(byClient.every((e) => e.clientId === other.id));
    const posts = await list('method=post');
    assert.ok(posts.length > 0 && posts.every((e) => e.method === 'POST'));
    const suspends = await list(`path=${encodeURIComponent('/suspend')}`);
    assert.deepEqual(
      suspends.map((e) => e.route),
      ['/admin/v1/clients/:clientId/suspend'],
    );
    const refusals = await list('status=401');
    assert.ok(refusals.length >= 1 && refusals.every((e) => e.status === 401 && e.clientId === other.id));
    const notFound = await list(`status=404&clientId=${practice.clientId}`);
    assert.equal(notFound.length, 1);
    // The audit log records the database's time: the suspension's own time splits the log.
    const all = (await svc.admin('GET', `/practices/${practice.practiceId}/audit-events`)).body
      .data as Array<{
      route: string;
      occurredAt: string;
    }>;
    const at = encodeURIComponent(all.find((e) => e.route.endsWith('/suspend'))!.occurredAt);
    const before = await list(`until=${at}`);
    assert.ok(before.length >= 2);
    assert.ok(
      before.every((e) => !e.route.endsWith('/suspend')),
      'until is exclusive',
    );
    const after = await list(`since=${at}`);
    assert.ok(
      after.some((e) => e.route.endsWith('/suspend')),
      'since is inclusive',
    );
    assert.equal(before.length + after.length, all.length);
    // A cursor keeps its filters: another filter with it is refused.
    const first = await svc.admin(
      'GET',
      `/practices/${practice.practiceId}/audit-events?limit=1&clientId=${other.id}`,
    );
    assert.ok(first.body.nextCursor);
    const mixed = await svc.admin(
      'GET',
      `/practices/${practice.practiceId}/audit-events?limit=1&method=GET&cursor=${encodeURIComponent(first.body.nextCursor)}`,
    );
    assert.equal(mixed.status, 400, mixed.text);
    const bad = await svc.admin('GET', `/practices/${practice.practiceId}/audit-events?status=abc`);
    assert.equal(bad.status, 400, bad.text);
  });

  test("an audit cursor is refused for another practice's log", async () => {
    const first = await newPractice();
    await newClient(first);
    const page = await svc.admin('GET', `/practices/${first}/audit-events?limit=1`);
    assert.equal(page.body.hasMore, true);
    const other = await newPractice();
    const refused = await svc.admin(
      'GET',
      `/practices/${other}/audit-events?cursor=${encodeURIComponent(page.body.nextCursor)}`,
    );
    assert.equal(refused.status, 400);
    assert.equal(refused.body.code, 'invalid_cursor');
    const badLimit = await svc.admin('GET', `/practices/${first}/audit-events?limit=0`);
    assert.equal(badLimit.status, 400);
    assert.equal(badLimit.body.code, 'invalid_request');
  });
});
