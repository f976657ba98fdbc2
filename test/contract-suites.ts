// Suites every public API route runs: authentication (every 401 alike, the real reason audited),
// permission and add-on (403), tenant isolation (another practice's id answers as a random one does)
// and, for creating routes, the Idempotency-Key contract. A route describes itself with a RouteCase;
// call runSharedSuites inside a `describe` whose `before` starts the service.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { PERMISSIONS, type Permission } from '../src/auth/permissions.ts';
import { randomToken } from '../src/platform/ids.ts';
import { type Answer, call, type TestPractice, type TestService, uniqueKey } from './harness.ts';

/** Ids a route needs (for its path or body), made by `prepare` in the calling practice. */
export type Fixture = Record<string, string>;

export interface RouteCase {
  /** Shown in test names; defaults to `METHOD path`. */
  name?: string;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Path below /api/v1, possibly built from the fixture. */
  path: string | ((fixture: Fixture) => string);
  /** The permission the route needs; a client lacking exactly this one is refused. */
  permission: Permission;
  /** Further permissions this RouteCase's body needs on top of `permission`. */
  extraPermissions?: Permission[];
  /** Status of a successful call with a full key. */
  status: number;
  /** A creating operation: Idempotency-Key required, answers replayed. */
  creates?: boolean;
  /** The body to send; called once per request, so it may make fresh unique values. */
  body?: (fixture: Fixture) => unknown;
  /** A different valid body for the same key (default: `body` called again, which must differ). */
  otherBody?: (fixture: Fixture) => unknown;
  /** Makes the records the route acts on, in `practice`, and returns their ids. */
  prepare?: (svc: TestService, practice: TestPractice) => Promise<Fixture>;
  /** Fixture entry naming the record the route reads or changes (runs the tenant isolation suite). */
  idParam?: string;
  /** A made-up id of the same kind as `real` (default: same prefix, random rest). */
  randomId?: (real: string) => string;
}

const UNAUTHENTICATED_KEYS = ['type', 'title', 'status', 'detail', 'code', 'requestId'];

export function routeName(route: RouteCase): string {
  const placeholders = new Proxy({} as Fixture, { get: (_t, k) => `{${String(k)}}` });
  const p = typeof route.path === 'string' ? route.path : route.path(placeholders);
  return route.name ?? `${route.method} ${p.split('?')[0]}`;
}

function defaultRandomId(real: string): string {
  const cut = real.indexOf('_');
  return cut > 0 ? `${real.slice(0, cut)}_${randomToken(16)}` : randomToken(8);
}

export interface SendOptions {
  idempotencyKey?: string | null;
  body?: unknown;
  headers?: Record<string, string>;
}

/** Calls the route as `key` for `fixture`: its body, and a fresh Idempotency-Key when it creates. */
export function sendRoute(
  svc: TestService,
  key: string | undefined,
  route: RouteCase,
  fixture: Fixture,
  options: SendOptions = {},
): Promise<Answer> {
  const path = typeof route.path === 'string' ? route.path : route.path(fixture);
  const body = 'body' in options ? options.body : route.body?.(fixture);
  const idempotencyKey = options.idempotencyKey === undefined ? uniqueKey() : options.idempotencyKey;
  return call(svc.baseUrl, route.method, `/api/v1${path}`, {
    ...(key ? { token: key } : {}),
    ...(body !== undefined ? { body } : {}),
    ...(route.creates && idempotencyKey !== null ? { idempotencyKey } : {}),
    ...(options.headers ? { headers: options.headers } : {}),
  });
}

/** A further integration client of the practice, with one key. */
export async function addClient(
  svc: TestService,
  practiceId: string,
  options: { permissions?: readonly Permission[]; allowedIps?: string[]; rateLimitPerMinute?: number } = {},
): Promise<{ clientId: string; keyId: string; key: string }> {
  const client = await svc.admin('POST', `/practices/${practiceId}/clients`, {
    name: `Client ${randomBytes(3).toString('hex')}`,
    permissions: [...(options.permissions ?? PERMISSIONS)],
    ...(options.allowedIps ? { allowedIps: options.allowedIps } : {}),
    ...(options.rateLimitPerMinute ? { rateLimitPerMinute: options.rateLimitPerMinute } : {}),
  });
  assert.equal(client.status, 201, client.text);
  const key = await svc.admin('POST', `/clients/${client.body.id}/keys`, {});
  assert.equal(key.status, 201, key.text);
  return { clientId: client.body.id, keyId: key.body.id, key: key.body.key };
}

/** The practice audit row written for the request that got `answer` (found by its X-Request-Id). */
// biome-ignore lint/suspicious/noExplicitAny: audit rows are read as plain JSON
export async function auditRowFor(svc: TestService, practiceId: string, answer: Answer): Promise<any> {
  const requestId = answer.headers.get('x-request-id');
  assert.ok(requestId, 'the answer carries X-Request-Id');
  // A refused known key is recorded just after its answer: give that write a moment.
  const deadline = Date.now() + 3_000;
  for (;;) {
    const events = await svc.admin('GET', `/practices/${practiceId}/audit-events?limit=100`);
    assert.equal(events.status, 200, events.text);
    // biome-ignore lint/suspicious/noExplicitAny: audit rows are read as plain JSON
    const rows = (events.body.data as any[]).filter((e) => e.requestId === requestId);
    if (rows.length === 0 && answer.status === 401 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      continue;
    }
    assert.equal(rows.length, 1, `exactly one audit row for ${requestId}`);
    return rows[0];
  }
}

function withoutRequestId(answer: Answer): unknown {
  const { requestId: _ignored, ...rest } = (answer.body ?? {}) as Record<string, unknown>;
  return rest;
}

function base62(length: number): string {
  return randomToken(48).slice(0, length);
}

export function runSharedSuites(getSvc: () => TestService, route: RouteCase): void {
  const name = routeName(route);
  const prepared = async (svc: TestService, practice: TestPractice) =>
    route.prepare ? await route.prepare(svc, practice) : {};

  describe(`${name}: baseline`, () => {
    test(`answers ${route.status} with a key holding every permission`, async () => {
      const svc = getSvc();
      const practice = await svc.newPractice();
      const fixture = await prepared(svc, practice);
      const answer = await sendRoute(svc, practice.key, route, fixture);
      assert.equal(answer.status, route.status, answer.text);
    });
  });

  describe(`${name}: authentication`, () => {
    test('every refused key answers the same 401, and a known key is audited with the real reason', async () => {
      const svc = getSvc();
      const practice = await svc.newPractice();
      const fixture = await prepared(svc, practice);
      const realKey = practice.key;
      const realSecretless = realKey.slice(0, realKey.lastIndexOf('_') + 1);

      const revoked = await addClient(svc, practice.practiceId);
      assert.equal((await svc.admin('POST', `/keys/${revoked.keyId}/revoke`)).status, 200);

      const expiring = await svc.admin('POST', `/clients/${practice.clientId}/keys`, {
        expiresAt: new Date(svc.clock.now().getTime() + 3_000).toISOString(),
      });
      assert.equal(expiring.status, 201, expiring.text);
      // still good until the clock passes expiresAt
      assert.equal((await sendRoute(svc, expiring.body.key, route, fixture)).status, route.status);
      svc.clock.advance(10_000);

      const suspended = await addClient(svc, practice.practiceId);
      assert.equal((await svc.admin('POST', `/clients/${suspended.clientId}/suspend`)).status, 200);

      const elsewhere = await addClient(svc, practice.practiceId, { allowedIps: ['10.1.2.0/24'] });

      const cases: Array<{ label: string; key: string | undefined; reason?: string; keyId?: string }> = [
        { label: 'no Authorization header', key: undefined },
        { label: 'malformed key', key: 'not-a-key' },
        { label: 'unknown key', key: `pbk_${base62(22)}_${base62(43)}` },
        {
          label: 'wrong secret',
          key: `${realSecretless}${base62(43)}`,
          reason: 'wrong_secret',
          keyId: practice.keyId,
        },
        { label: 'revoked key', key: revoked.key, reason: 'revoked_key', keyId: revoked.keyId },
        { label: 'expired key', key: expiring.body.key, reason: 'expired_key', keyId: expiring.body.id },
        { label: 'suspended client', key: suspended.key, reason: 'suspended_client', keyId: suspended.keyId },
        {
          label: 'address not allowed',
          key: elsewhere.key,
          reason: 'address_not_allowed',
          keyId: elsewhere.keyId,
        },
      ];
      const answers: Answer[] = [];
      for (const c of cases) {
        const answer = await sendRoute(svc, c.key, route, fixture);
        assert.equal(answer.status, 401, `${c.label}: ${answer.text}`);
        assert.equal(answer.headers.get('www-authenticate'), 'Bearer', c.label);
        assert.equal(answer.body.code, 'unauthenticated', c.label);
        assert.deepEqual(Object.keys(answer.body).sort(), [...UNAUTHENTICATED_KEYS].sort(), c.label);
        assert.equal(answer.body.requestId, answer.headers.get('x-request-id'), c.label);
        assert.equal(answer.headers.get('idempotent-replayed'), null, c.label);
        answers.push(answer);
        if (c.reason) {
          const row = await auditRowFor(svc, practice.practiceId, answer);
          assert.equal(row.status, 401, c.label);
          assert.equal(row.reason, c.reason, c.label);
          assert.equal(row.keyId, c.keyId, c.label);
          assert.equal(row.outcome, 'refused', c.label);
        }
      }
      const first = withoutRequestId(answers[0]!);
      answers.forEach((a, i) => {
        assert.deepEqual(withoutRequestId(a), first, `${cases[i]!.label} answers like no key at all`);
      });
      // the refusals were not some other failure: the real key still works
      assert.equal((await sendRoute(svc, realKey, route, fixture)).status, route.status);
    });
  });

  describe(`${name}: permission and add-on`, () => {
    test(`a client without ${route.permission} gets 403 forbidden; one with it is let in`, async () => {
      const svc = getSvc();
      const practice = await svc.newPractice();
      const fixture = await prepared(svc, practice);
      const lacking = await addClient(svc, practice.practiceId, {
        permissions: PERMISSIONS.filter((p) => p !== route.permission),
      });
      const refused = await sendRoute(svc, lacking.key, route, fixture);
      assert.equal(refused.status, 403, refused.text);
      assert.equal(refused.body.code, 'forbidden');
      assert.match(refused.body.detail, new RegExp(route.permission));

      const holding = await addClient(svc, practice.practiceId, {
        permissions: [route.permission, ...(route.extraPermissions ?? [])],
      });
      const allowed = await sendRoute(svc, holding.key, route, fixture);
      assert.equal(allowed.status, route.status, allowed.text);
    });

    test('with the Integrations add-on off the answer is 403 addon_inactive, and on again it works', async () => {
      const svc = getSvc();
      const practice = await svc.newPractice();
      const fixture = await prepared(svc, practice);
      const off = await svc.admin('PUT', `/practices/${practice.practiceId}/integrations`, {
        enabled: false,
      });
      assert.equal(off.status, 200, off.text);
      const refused = await sendRoute(svc, practice.key, route, fixture);
      assert.equal(refused.status, 403, refused.text);
      assert.equal(refused.body.code, 'addon_inactive');
      const on = await svc.admin('PUT', `/practices/${practice.practiceId}/integrations`, { enabled: true });
      assert.equal(on.status, 200, on.text);
      assert.equal((await sendRoute(svc, practice.key, route, fixture)).status, route.status);
    });
  });

  if (route.idParam) {
    const idParam = route.idParam;
    describe(`${name}: tenant isolation`, () => {
      test(`another practice's ${idParam} answers exactly as a made-up one`, async () => {
        const svc = getSvc();
        const mine = await svc.newPractice();
        const theirs = await svc.newPractice();
        const myFixture = await prepared(svc, mine);
        const theirFixture = await prepared(svc, theirs);
        const theirId = theirFixture[idParam];
        assert.ok(theirId, `prepare returns ${idParam}`);
        const madeUp = (route.randomId ?? defaultRandomId)(theirId);

        const foreign = await sendRoute(svc, mine.key, route, { ...myFixture, [idParam]: theirId });
        const random = await sendRoute(svc, mine.key, route, { ...myFixture, [idParam]: madeUp });
        assert.equal(foreign.status, random.status, foreign.text);
        const normalise = (a: Answer, id: string) =>
          JSON.parse(JSON.stringify(withoutRequestId(a)).replaceAll(id, '<id>'));
        assert.deepEqual(normalise(foreign, theirId), normalise(random, madeUp));
        // the owner reaches the record; the other practice learns nothing of it
        const owner = await sendRoute(svc, theirs.key, route, theirFixture);
        assert.equal(owner.status, route.status, owner.text);
        if (owner.text.includes(theirId)) assert.ok(!foreign.text.includes(theirId), foreign.text);
      });
    });
  }

  if (route.creates) {
    describe(`${name}: Idempotency-Key`, () => {
      test('without Idempotency-Key the answer is 400 invalid_request naming the header', async () => {
        const svc = getSvc();
        const practice = await svc.newPractice();
        const fixture = await prepared(svc, practice);
        const answer = await sendRoute(svc, practice.key, route, fixture, { idempotencyKey: null });
        assert.equal(answer.status, 400, answer.text);
        assert.equal(answer.body.code, 'invalid_request');
        assert.ok(
          answer.body.errors?.some((e: { field: string }) => e.field === 'Idempotency-Key'),
          answer.text,
        );
      });

      test('a replay with the same key and body returns the first answer, marked Idempotent-Replayed', async () => {
        const svc = getSvc();
        const practice = await svc.newPractice();
        const fixture = await prepared(svc, practice);
        const body = route.body?.(fixture);
        const key = uniqueKey();
        const first = await sendRoute(svc, practice.key, route, fixture, { idempotencyKey: key, body });
        assert.equal(first.status, route.status, first.text);
        assert.equal(first.headers.get('idempotent-replayed'), null);
        const again = await sendRoute(svc, practice.key, route, fixture, { idempotencyKey: key, body });
        assert.equal(again.status, first.status, again.text);
        assert.equal(again.headers.get('idempotent-replayed'), 'true');
        assert.deepEqual(again.body, first.body);
        assert.equal(again.headers.get('location'), first.headers.get('location'));
        assert.notEqual(again.headers.get('x-request-id'), first.headers.get('x-request-id'));
      });

      test('the same key with a different body is 422 idempotency_key_reused', async () => {
        const svc = getSvc();
        const practice = await svc.newPractice();
        const fixture = await prepared(svc, practice);
        const body = route.body?.(fixture);
        const other = (route.otherBody ?? route.body)?.(fixture);
        assert.notDeepEqual(other, body, 'the RouteCase gives a different body');
        const key = uniqueKey();
        const first = await sendRoute(svc, practice.key, route, fixture, { idempotencyKey: key, body });
        assert.equal(first.status, route.status, first.text);
        const reused = await sendRoute(svc, practice.key, route, fixture, {
          idempotencyKey: key,
          body: other,
        });
        assert.equal(reused.status, 422, reused.text);
        assert.equal(reused.body.code, 'idempotency_key_reused');
        assert.equal(reused.headers.get('idempotent-replayed'), null);
      });
    });
  }
}
