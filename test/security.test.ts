// Security properties seen from outside: API keys and webhook secrets are never stored in clear (every
// text/json column of every table scanned) nor logged (a service process at LOG_LEVEL=trace through a
// whole flow, patient details included); every 401 reason answers the same bytes and headers, and
// before answering a well-formed key's refusal the service does the same work whatever the reason, so
// that nothing, its timing included, tells the reasons apart; headers fit for an API. (Audit rows
// being append-only is in audit.test.ts, webhook SSRF in webhooks-ssrf.test.ts.)
import assert from 'node:assert/strict';
import crypto, { createHash, randomBytes } from 'node:crypto';
import { syncBuiltinESMExports } from 'node:module';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { PERMISSIONS } from '../src/auth/permissions.ts';
import type { StatementCounts } from '../src/platform/db/statement-counts.ts';
import { remotePractice, startServeProcess } from './child-service.ts';
import {
  type Answer,
  apiClient,
  call,
  describeEachBackend,
  patientBody,
  startService,
  type TestService,
  uniqueKey,
} from './harness.ts';
import { freePort, removeDataDir, sandboxBanner, startServiceProcess, tempDir } from './processes.ts';
import { followingKeyChanges, keyChangesHeard, UNKNOWN_PATIENT } from './support/key-cache.ts';
import { COUNTED_REQUEST_HEADER, countWhileAnswering } from './support/statement-counts.ts';

function median(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.floor(sorted.length / 2)]!;
}

const randomBase62 = (n: number) => {
  const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  return Array.from(randomBytes(n), (b) => alphabet[b % 62]).join('');
};

/**
 * The bearer tokens of one practice that fail for each reason the service knows. The key whose id the
 * wrong secret borrows, and the expiring key before it expires, have let a request in, so the service
 * remembers them (src/auth/key-cache.ts): their refusals must still be decided by the database.
 */
async function refusedTokens(svc: TestService): Promise<Record<string, string | undefined>> {
  await followingKeyChanges(svc);
  const practice = await svc.newPractice();
  const client = async (extra: Record<string, unknown> = {}) => {
    const c = await svc.admin('POST', `/practices/${practice.practiceId}/clients`, {
      name: `Client ${randomBytes(2).toString('hex')}`,
      permissions: [...PERMISSIONS],
      ...extra,
    });
    assert.equal(c.status, 201, c.text);
    return c.body.id as string;
  };
  const key = async (clientId: string, body: Record<string, unknown> = {}) => {
    const k = await svc.admin('POST', `/clients/${clientId}/keys`, body);
    assert.equal(k.status, 201, k.text);
    return { id: k.body.id as string, key: k.body.key as string };
  };
  const revoked = await key(await client());
  assert.equal((await svc.admin('POST', `/keys/${revoked.id}/revoke`)).status, 200);
  const expiring = await key(await client(), {
    expiresAt: new Date(svc.clock.now().getTime() + 60_000).toISOString(),
  });
  const suspendedClient = await client();
  const suspended = await key(suspendedClient);
  assert.equal((await svc.admin('POST', `/clients/${suspendedClient}/suspend`)).status, 200);
  const elsewhere = await key(await client({ allowedIps: ['192.0.2.7'] }));
  // Remembered after every change announced so far is heard: a change drops the practice's keys.
  await keyChangesHeard(svc);
  for (const { key: token, id } of [{ key: practice.key, id: practice.keyId }, expiring]) {
    const answer = await call(svc.baseUrl, 'GET', `/api/v1${UNKNOWN_PATIENT}`, { token });
    assert.equal(answer.status, 404, answer.text);
    assert.ok(svc.deps.keyCache.peek(id), `${id} is remembered`);
  }
  const [, idPart] = /^pbk_([0-9A-Za-z]{22})_/.exec(practice.key)!;
  // The expiring key expires when the service's clock moves past it; no other key here has an expiry.
  svc.clock.advance(120_000);
  return {
    missing: undefined,
    malformed: 'Bearer not-a-key',
    unknown: `Bearer pbk_${randomBase62(22)}_${randomBase62(43)}`,
    wrong_secret: `Bearer pbk_${idPart}_${randomBase62(43)}`,
    revoked: `Bearer ${revoked.key}`,
    expired: `Bearer ${expiring.key}`,
    suspended: `Bearer ${suspended.key}`,
    address_not_allowed: `Bearer ${elsewhere.key}`,
  };
}

async function probe(
  svc: TestService,
  authorization: string | undefined,
  counted = '',
): Promise<Answer & { ms: number }> {
  const headers: Record<string, string> = counted ? { [COUNTED_REQUEST_HEADER]: counted } : {};
  if (authorization) headers.authorization = authorization;
  const started = performance.now();
  const answer = await call(svc.baseUrl, 'GET', `/api/v1${UNKNOWN_PATIENT}`, { headers });
  return { ...answer, ms: performance.now() - started };
}

/**
 * Records the first argument of every crypto.timingSafeEqual call in this process (the service's
 * included: its named import follows node:crypto's export, syncBuiltinESMExports) until restored.
 */
function recordConstantTimeComparisons(): { compared: Buffer[]; restore(): void } {
  const original = crypto.timingSafeEqual;
  const compared: Buffer[] = [];
  crypto.timingSafeEqual = (a: NodeJS.ArrayBufferView, b: NodeJS.ArrayBufferView) => {
    compared.push(Buffer.from(a.buffer, a.byteOffset, a.byteLength));
    return original(a, b);
  };
  syncBuiltinESMExports();
  return {
    compared,
    restore() {
      crypto.timingSafeEqual = original;
      syncBuiltinESMExports();
    },
  };
}

/** Whether a refusal is written to the audit log of the key's practice: when the key is known. */
const KNOWN_KEY_REASONS = new Set(['wrong_secret', 'revoked', 'expired', 'suspended', 'address_not_allowed']);

/** Waits until the audit row of a refused known key, written once its 401 is out, is in. */
async function auditWritten(svc: TestService, answer: Answer): Promise<void> {
  const requestId = answer.headers.get('x-request-id');
  for (let asked = 1; ; asked++) {
    const found = await sql<{ n: number }>`
        SELECT count(*)::int AS n FROM audit_events WHERE request_id = ${requestId}`.execute(svc.db.kysely);
    if (found.rows[0]!.n === 1) return;
    assert.ok(asked < 300, `the audit row of ${requestId} is written`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The secret of a presented key, hashed as the service stores it (src/auth/api-keys.ts). */
function secretHashOf(authorization: string): Buffer {
  return createHash('sha256')
    .update(authorization.slice(authorization.lastIndexOf('_') + 1))
    .digest();
}

const VARYING_HEADERS = new Set(['x-request-id', 'date', 'x-ratelimit-remaining', 'x-ratelimit-reset']);

function stableHeaders(answer: Answer): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of answer.headers) if (!VARYING_HEADERS.has(name)) kept[name] = value;
  return kept;
}

describeEachBackend('security', (backend) => {
  let svc: TestService;
  before(async () => {
    svc = await startService(backend, {
      env: {
        RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: '10000000',
        RATE_LIMIT_PER_MINUTE: '10000000',
        // Remembered keys stay remembered across the clock's moves; heartbeats are few.
        API_KEY_CACHE_SECONDS: '3600',
        DATABASE_LISTEN_HEARTBEAT_MS: '60000',
      },
    });
  });
  after(async () => {
    await svc.close();
  });

  test('API keys and webhook secrets are not stored in clear in any column of any table', async () => {
    const practice = await svc.newPractice();
    const endpoint = await svc.admin('POST', `/practices/${practice.practiceId}/webhook-endpoints`, {
      url: 'https://hooks.example.com/billing',
    });
    assert.equal(endpoint.status, 201, endpoint.text);
    const secret = endpoint.body.secret as string;
    assert.match(secret, /^whsec_/);
    const keySecret = practice.key.slice(practice.key.lastIndexOf('_') + 1);
    const needles = [practice.key, keySecret, secret, secret.slice('whsec_'.length)];

    const columns = await sql<{ schema: string; table: string; column: string }>`
        SELECT c.table_schema AS schema, c.table_name AS table, c.column_name AS column
        FROM information_schema.columns c
        JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
        WHERE t.table_type = 'BASE TABLE'
          AND c.table_schema NOT IN ('pg_catalog', 'information_schema')
          AND c.data_type IN ('text', 'character varying', 'character', 'json', 'jsonb', 'bytea', 'ARRAY')`.execute(
      svc.db.kysely,
    );
    assert.ok(columns.rows.length > 20, `found ${columns.rows.length} columns`);
    const tables = new Set<string>();
    for (const { schema, table, column } of columns.rows) {
      tables.add(`${schema}.${table}`);
      const target = sql`${sql.id(schema, table)}`;
      // bytea as its text (escape) form also catches a key stored as raw UTF-8 bytes.
      const asText = sql`(CASE WHEN pg_typeof(${sql.ref(column)})::text = 'bytea'
          THEN encode(${sql.ref(column)}::text::bytea, 'escape') ELSE ${sql.ref(column)}::text END)`;
      for (const needle of needles) {
        const found = await sql<{ n: number }>`
            SELECT count(*)::int AS n FROM ${target} WHERE strpos(${asText}, ${needle}) > 0`.execute(
          svc.db.kysely,
        );
        assert.equal(found.rows[0]!.n, 0, `${schema}.${table}.${column} holds a secret in clear`);
      }
    }
    assert.ok(tables.has('public.api_keys') && tables.has('public.webhook_endpoints'), [...tables].join());
  });

  test('every 401 reason answers the same bytes and headers', async () => {
    const tokens = await refusedTokens(svc);
    const answers = new Map<string, Answer>();
    for (const [reason, token] of Object.entries(tokens)) answers.set(reason, await probe(svc, token));
    const [firstReason, first] = [...answers.entries()][0]!;
    for (const [reason, answer] of answers) {
      assert.equal(answer.status, 401, `${reason}: ${answer.text}`);
      assert.equal(answer.body.code, 'unauthenticated');
      assert.equal(answer.body.requestId, answer.headers.get('x-request-id'));
      assert.equal(
        answer.text.replace(answer.body.requestId, 'REQ'),
        first.text.replace(first.body.requestId, 'REQ'),
        `${reason} answers other bytes than ${firstReason}`,
      );
      assert.deepEqual(
        stableHeaders(answer),
        stableHeaders(first),
        `${reason} headers differ from ${firstReason}`,
      );
    }
  });

  // What a caller could time is the work done before its answer: that must be the same for every
  // reason a well-formed key is refused (whether its id exists, or what state the key is in). Counted,
  // not timed: the database statements, round trips and transactions the service sends from the
  // request's arrival to its answer's end (a refused known key's audit row is written after it), and
  // the constant-time comparison of the presented secret's hash, against a stand-in hash when no key
  // has that id. Work of the process's own (a listening connection's heartbeat) can only add to a
  // request's counts; a difference the service makes shows in every request of a reason, so each
  // reason's fewest are compared. The times are printed, for the record, never judged.
  test('a well-formed key is refused after the same work whether unknown, wrong, revoked, expired, suspended or elsewhere', async () => {
    const tokens = await refusedTokens(svc);
    const reasons = Object.keys(tokens);
    const wellFormed = ['unknown', 'wrong_secret', 'revoked', 'expired', 'suspended', 'address_not_allowed'];
    const counting = countWhileAnswering();
    const comparisons = recordConstantTimeComparisons();
    const counts = new Map<string, StatementCounts[]>(reasons.map((r) => [r, []]));
    const times = new Map<string, number[]>(reasons.map((r) => [r, []]));
    try {
      for (let round = 0; round < 3; round++) {
        // Each round starts with another reason, so that none always follows the same one.
        for (const reason of [...reasons.slice(round), ...reasons.slice(0, round)]) {
          const token = tokens[reason];
          const compared = comparisons.compared.length;
          const answer = await probe(svc, token, `${reason} ${round}`);
          assert.equal(answer.status, 401, `${reason}: ${answer.text}`);
          counts.get(reason)!.push(counting.counts.get(`${reason} ${round}`)!);
          times.get(reason)!.push(answer.ms);
          if (wellFormed.includes(reason)) {
            const hash = secretHashOf(token!);
            assert.ok(
              comparisons.compared.slice(compared).some((given) => given.equals(hash)),
              `${reason}: the presented secret's hash is compared before the 401`,
            );
          }
          if (KNOWN_KEY_REASONS.has(reason)) await auditWritten(svc, answer);
        }
      }
    } finally {
      comparisons.restore();
      counting.stop();
    }
    const fewest = (reason: string) =>
      counts
        .get(reason)!
        .reduce((a, b) => (b.roundTrips + b.statements < a.roundTrips + a.statements ? b : a));
    const shown = (reason: string) => {
      const c = fewest(reason);
      return `${reason} ${c.statements}/${c.roundTrips}/${c.transactions}, ${median(times.get(reason)!).toFixed(3)} ms`;
    };
    process.stdout.write(
      `# before each 401 (${backend}), statements/round trips/transactions and median time: ${reasons.map(shown).join('; ')}\n`,
    );
    assert.deepEqual(
      fewest('missing'),
      { statements: 0, roundTrips: 0, transactions: 0 },
      'no key, no look-up',
    );
    assert.ok(fewest('unknown').roundTrips > 0, 'an unknown key is looked up');
    for (const reason of wellFormed) {
      assert.deepEqual(
        fewest(reason),
        fewest('unknown'),
        `${reason} is refused after other work than unknown`,
      );
    }
  });

  test('headers fit for an API: no framework banner, no-store on patient data, nosniff', async () => {
    const practice = await svc.newPractice();
    const api = apiClient(svc, practice.key);
    const created = await api('POST', '/patients', { body: patientBody(), idempotencyKey: uniqueKey() });
    assert.equal(created.status, 201, created.text);
    const answers: Array<[string, Answer]> = [
      ['create', created],
      ['read', await api('GET', `/patients/${created.body.id}`)],
      [
        'list',
        await api(
          'GET',
          `/patients?externalSystem=urn%3Atest%3Amrn&externalId=${created.body.externalId.value}`,
        ),
      ],
      ['second create', await api('POST', '/patients', { body: patientBody(), idempotencyKey: uniqueKey() })],
      ['404', await api('GET', '/patients/pat_0000000000000000000000')],
      ['401', await call(svc.baseUrl, 'GET', `/api/v1/patients/${created.body.id}`)],
      ['unknown path', await call(svc.baseUrl, 'GET', '/nowhere')],
      ['admin', await svc.admin('GET', `/practices/${practice.practiceId}`)],
    ];
    for (const [what, answer] of answers) {
      assert.equal(answer.headers.get('x-powered-by'), null, what);
      assert.equal(answer.headers.get('server'), null, what);
      assert.equal(answer.headers.get('x-content-type-options'), 'nosniff', what);
      assert.equal(answer.headers.get('cache-control'), 'no-store', what);
    }
  });
});

describe('secrets and patient details stay out of the logs', () => {
  test('a service process at LOG_LEVEL=trace logs no key, secret, name, birth date or identity number', async () => {
    let stop: () => Promise<void> = async () => {};
    let svc: TestService | undefined;
    let dataDir: string | undefined;
    try {
      let baseUrl: string;
      let adminToken: string;
      let output: () => string;
      const env = { LOG_LEVEL: 'trace', WEBHOOK_ALLOW_PRIVATE: 'true', INSURER_DELAY_MS: '0' };
      if (process.env.DATABASE_URL) {
        svc = await startService('postgres');
        const child = await startServeProcess({ databaseUrl: svc.databaseUrl!, env });
        ({ baseUrl, adminToken, output } = child);
        stop = child.stop;
      } else {
        dataDir = tempDir('security');
        const child = await startServiceProcess({ dataDir, port: await freePort(), env });
        ({ apiUrl: baseUrl, adminToken } = sandboxBanner(child.stdout()));
        baseUrl = new URL(baseUrl).origin;
        output = () => child.stdout() + child.stderr();
        stop = async () => {
          await child.stop();
        };
      }
      const practice = await remotePractice(baseUrl, adminToken);
      const endpoint = await call(
        baseUrl,
        'POST',
        `/admin/v1/practices/${practice.practiceId}/webhook-endpoints`,
        {
          token: adminToken,
          body: { url: 'https://127.0.0.1:9/hook' },
        },
      );
      assert.equal(endpoint.status, 201, endpoint.text);
      const secret = endpoint.body.secret as string;
      const api = (method: string, p: string, body?: unknown) =>
        call(baseUrl, method, `/api/v1${p}`, {
          token: practice.key,
          ...(body !== undefined ? { body } : {}),
          ...(method === 'POST' ? { idempotencyKey: uniqueKey() } : {}),
        });
      const given = `Zanele${randomBase62(6)}`;
      const family = `Mokoena${randomBase62(6)}`;
      const birthDate = '1987-11-23';
      const idNumber = `8711${randomBytes(4).readUInt32BE(0)}`;
      const patient = await api('POST', '/patients', {
        ...patientBody(),
        givenNames: [given],
        lastName: family,
        birthDate,
        identifiers: [{ type: 'national_id', value: idNumber }],
      });
      assert.equal(patient.status, 201, patient.text);
      const end = new Date(Date.now() - 3_600_000);
      const visit = await api('POST', '/encounters', {
        patientId: patient.body.id,
        practitionerId: practice.practitionerId,
        start: new Date(end.getTime() - 1_200_000).toISOString(),
        end: end.toISOString(),
        diagnoses: [{ code: 'J06.9' }],
        procedures: [{ code: '0190', diagnosisCodes: ['J06.9'] }],
      });
      assert.equal(visit.status, 201, visit.text);
      const billed = await api('POST', `/encounters/${visit.body.id}/bill`, { issue: true });
      assert.equal(billed.status, 201, billed.text);
      // Refusals and reads log too: a wrong key, a read of the patient, a 404.
      assert.equal(
        (await call(baseUrl, 'GET', `/api/v1/patients/${patient.body.id}`, { token: `${practice.key}x` }))
          .status,
        401,
      );
      assert.equal((await api('GET', `/patients/${patient.body.id}`)).status, 200);
      assert.equal((await api('GET', '/patients/pat_0000000000000000000000')).status, 404);
      await new Promise((resolve) => setTimeout(resolve, 500));
      await stop();
      const logged = output();
      // One line per request, with its method, route, id, status and time.
      const lines = logged
        .split('\n')
        .filter((line) => line.includes('"request completed"'))
        .map((line) => JSON.parse(line) as Record<string, { statusCode?: number; route?: string }>);
      assert.ok(
        lines.some((l) => l.req?.route === '/api/v1/patients/:patientId' && l.res?.statusCode === 200),
        'requests were logged',
      );
      assert.ok(!logged.includes('incoming request'), 'one line per request');
      const keySecret = practice.key.slice(practice.key.lastIndexOf('_') + 1);
      for (const [what, needle] of [
        ['API key', practice.key],
        ['API key secret', keySecret],
        ['webhook secret', secret],
        ['webhook secret body', secret.slice('whsec_'.length)],
        ['given name', given],
        ['last name', family],
        ['birth date', birthDate],
        ['identity number', idNumber],
      ] as const) {
        assert.ok(!logged.includes(needle), `the log contains the ${what}`);
      }
    } finally {
      await stop();
      await svc?.close();
      if (dataDir) removeDataDir(dataDir);
    }
  });
});
