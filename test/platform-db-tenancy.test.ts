// Tenancy: the database itself keeps practices apart (forced row-level security, service roles that
// cannot bypass it, keys that carry practice_id), and through the API one practice never sees or
// learns of another's records, even when every request shares one pooled connection.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { APP_ROLE, OPERATOR_ROLE } from '../migrations/security.ts';
import { type Database, openPostgres } from '../src/platform/db/database.ts';
import {
  type Answer,
  apiClient,
  describeEachBackend,
  patientBody,
  startService,
  type TestService,
  uniqueKey,
} from './harness.ts';

/** A superuser connection to the test's database: PGlite's own, or a new one to PostgreSQL. */
async function withSuperuser<T>(svc: TestService, fn: (db: Database) => Promise<T>): Promise<T> {
  if (svc.backend === 'pglite') return fn(svc.db);
  const db = openPostgres({ url: svc.databaseUrl!, poolSize: 1, statementTimeoutMs: 15_000 });
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

const TENANT_TABLES = sql`
  SELECT c.oid, c.relname AS name, c.relrowsecurity AS rls, c.relforcerowsecurity AS forced
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')
    AND (c.relname = 'practices' OR EXISTS (
      SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'practice_id' AND NOT a.attisdropped))`;

async function createPatient(svc: TestService, key: string, body = patientBody()) {
  const answer = await apiClient(svc, key)('POST', '/patients', { body, idempotencyKey: uniqueKey() });
  assert.equal(answer.status, 201, answer.text);
  return answer.body as { id: string; organizationId: string; externalId: { system: string; value: string } };
}

/** What a caller can compare between two answers: everything but the request's own id and time. */
function comparable(answer: Answer) {
  const requestId = answer.headers.get('x-request-id') ?? '';
  const headers = [...answer.headers.keys()].filter((h) => !h.startsWith('x-ratelimit')).sort();
  return {
    status: answer.status,
    headers,
    contentType: answer.headers.get('content-type'),
    body: answer.text.replaceAll(requestId, '<request-id>'),
  };
}

describeEachBackend('tenancy', (backend) => {
  let svc: TestService;
  before(async () => {
    svc = await startService(backend);
  });
  after(async () => {
    await svc.close();
  });

  test('every tenant table has row-level security enabled, not forced on its owner', async () => {
    const tables = await withSuperuser(
      svc,
      async (db) =>
        (await sql<{ name: string; rls: boolean; forced: boolean }>`${TENANT_TABLES}`.execute(db.kysely))
          .rows,
    );
    const names = tables.map((t) => t.name);
    for (const expected of [
      'practices',
      'patients',
      'audit_events',
      'idempotency_keys',
      'api_keys',
      'clients',
    ]) {
      assert.ok(names.includes(expected), `${expected} is a tenant table (found ${names.join(', ')})`);
    }
    for (const t of tables) {
      assert.equal(t.rls, true, `${t.name} has row-level security enabled`);
      // Not forced: the owner's plain pg_dump reads with row_security off (migration 0025); the service
      // never works as the owner, and its roles are bound by the policies either way.
      assert.equal(t.forced, false, `${t.name} does not force row-level security on its owner`);
    }
  });

  test('the service roles are not superusers, cannot bypass RLS and own nothing', async () => {
    await withSuperuser(svc, async (db) => {
      const roles = await sql<{ name: string; super: boolean; bypass: boolean }>`
          SELECT rolname AS name, rolsuper AS super, rolbypassrls AS bypass FROM pg_roles
          WHERE rolname IN (${APP_ROLE}, ${OPERATOR_ROLE}) ORDER BY rolname`.execute(db.kysely);
      assert.deepEqual(
        roles.rows.map((r) => r.name),
        [APP_ROLE, OPERATOR_ROLE].sort(),
      );
      for (const r of roles.rows) {
        assert.equal(r.super, false, `${r.name} is not a superuser`);
        assert.equal(r.bypass, false, `${r.name} cannot bypass RLS`);
      }
      // Nor can they become a role that could (role membership is inherited or SET ROLE-able).
      const granted = await sql<{ member: string; role: string }>`
          SELECT m.rolname AS member, r.rolname AS role
          FROM pg_auth_members am JOIN pg_roles r ON r.oid = am.roleid JOIN pg_roles m ON m.oid = am.member
          WHERE m.rolname IN (${APP_ROLE}, ${OPERATOR_ROLE}) AND (r.rolsuper OR r.rolbypassrls)`.execute(
        db.kysely,
      );
      assert.deepEqual(granted.rows, []);
      const owned = await sql<{ name: string }>`
          SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = 'public' AND pg_get_userbyid(c.relowner) IN (${APP_ROLE}, ${OPERATOR_ROLE})`.execute(
        db.kysely,
      );
      assert.deepEqual(owned.rows, []);
      // The one function that reads across practices without a transaction: the key look-up. It runs
      // as the owner of the tables (never as its caller; migration 0025, so that a restore by the owner
      // keeps it) and only the service roles may call it.
      const lookUp = await sql<{
        owner: string;
        tablesOwner: string;
        definer: boolean;
        publicCanRun: boolean;
      }>`
          SELECT pg_get_userbyid(p.proowner) AS owner, p.prosecdef AS definer,
                 has_function_privilege('public', p.oid, 'EXECUTE') AS "publicCanRun",
                 (SELECT pg_get_userbyid(relowner) FROM pg_class WHERE relname = 'patients') AS "tablesOwner"
          FROM pg_proc p WHERE p.proname = 'api_key_for_request'`.execute(db.kysely);
      assert.equal(lookUp.rows.length, 1);
      const [row] = lookUp.rows;
      assert.deepEqual(
        { owner: row!.owner, definer: row!.definer, publicCanRun: row!.publicCanRun },
        { owner: row!.tablesOwner, definer: true, publicCanRun: false },
      );
    });
  });

  test('every primary key, unique index and foreign key of a tenant table includes practice_id', async () => {
    await withSuperuser(svc, async (db) => {
      const indexes = await sql<{ tbl: string; idx: string; cols: string | null }>`
          WITH t AS (${TENANT_TABLES})
          SELECT t.name AS tbl, i.indexrelid::regclass::text AS idx,
            (SELECT string_agg(a.attname, ',' ORDER BY k.ord) FROM unnest(i.indkey) WITH ORDINALITY k(attnum, ord)
              JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum) AS cols
          FROM pg_index i JOIN t ON t.oid = i.indrelid
          WHERE (i.indisunique OR i.indisprimary) AND t.name <> 'practices'`.execute(db.kysely);
      assert.ok(
        indexes.rows.some((r) => r.tbl === 'patients'),
        'the query finds the keys of patients',
      );
      for (const r of indexes.rows) {
        assert.ok((r.cols ?? '').split(',').includes('practice_id'), `${r.tbl} key ${r.idx} (${r.cols})`);
      }

      const foreign = await sql<{ tbl: string; con: string; ref: string; cols: string; refcols: string }>`
          WITH t AS (${TENANT_TABLES})
          SELECT t.name AS tbl, c.conname AS con, c.confrelid::regclass::text AS ref,
            string_agg(a.attname, ',' ORDER BY k.ord) AS cols, string_agg(fa.attname, ',' ORDER BY k.ord) AS refcols
          FROM pg_constraint c JOIN t ON t.oid = c.conrelid
          CROSS JOIN LATERAL unnest(c.conkey, c.confkey) WITH ORDINALITY k(attnum, fattnum, ord)
          JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
          JOIN pg_attribute fa ON fa.attrelid = c.confrelid AND fa.attnum = k.fattnum
          WHERE c.contype = 'f'
          GROUP BY t.name, c.conname, c.confrelid`.execute(db.kysely);
      assert.ok(
        foreign.rows.some((r) => r.tbl === 'api_keys' && r.ref === 'clients'),
        'finds api_keys → clients',
      );
      const tenantNames = new Set(
        (await sql<{ name: string }>`${TENANT_TABLES}`.execute(db.kysely)).rows.map((t) => t.name),
      );
      // A reference to shared published data (insurance plans, code systems) has no practice to
      // carry; every reference to a tenant table must carry the practice.
      for (const r of foreign.rows.filter((f) => tenantNames.has(f.ref))) {
        const cols = r.cols.split(',');
        const refcols = r.refcols.split(',');
        const at = cols.indexOf('practice_id');
        assert.ok(at >= 0, `${r.tbl} foreign key ${r.con} (${r.cols}) includes practice_id`);
        // The practice column must point at the referenced row's practice, not at some other column.
        assert.equal(
          refcols[at],
          r.ref === 'practices' ? 'id' : 'practice_id',
          `${r.con} → ${r.ref}(${r.refcols})`,
        );
      }
    });
  });

  test('the tables written on every request reference no practices row, and a practice is never deleted, truncated nor renumbered', async () => {
    const practice = await svc.newPractice();
    await withSuperuser(svc, async (db) => {
      const referencing = await sql<{ tbl: string }>`
          SELECT c.conrelid::regclass::text AS tbl FROM pg_constraint c
           WHERE c.contype = 'f' AND c.confrelid = 'practices'::regclass ORDER BY 1`.execute(db.kysely);
      assert.deepEqual(
        referencing.rows.map((r) => r.tbl),
        ['clients', 'practice_code_systems', 'practice_prices', 'practitioners', 'webhook_endpoints'],
      );
      for (const change of [
        sql`DELETE FROM practices WHERE id = ${practice.practiceId}`,
        sql`UPDATE practices SET id = ${`${practice.practiceId}x`} WHERE id = ${practice.practiceId}`,
        sql`TRUNCATE practices CASCADE`,
      ]) {
        await assert.rejects(change.execute(db.kysely), /a practice is never deleted, nor its id changed/);
      }
    });
  });

  test('as the app role in practice A, the database hides and refuses practice B', async () => {
    const a = await svc.newPractice();
    const b = await svc.newPractice();
    const mine = await createPatient(svc, a.key);
    const theirs = await createPatient(svc, b.key);
    await withSuperuser(svc, async (db) => {
      const seen = await db.kysely.transaction().execute(async (trx) => {
        await sql`SET LOCAL ROLE ${sql.raw(APP_ROLE)}`.execute(trx);
        await sql`SELECT set_config('app.practice_id', ${a.practiceId}, true)`.execute(trx);
        return (
          await sql<{ id: string; practice_id: string }>`SELECT id, practice_id FROM patients`.execute(trx)
        ).rows;
      });
      assert.ok(
        seen.some((p) => p.id === mine.id),
        'practice A sees its own patient',
      );
      assert.ok(!seen.some((p) => p.id === theirs.id || p.practice_id !== a.practiceId), 'and nothing of B');

      await assert.rejects(
        db.kysely.transaction().execute(async (trx) => {
          await sql`SET LOCAL ROLE ${sql.raw(APP_ROLE)}`.execute(trx);
          await sql`SELECT set_config('app.practice_id', ${a.practiceId}, true)`.execute(trx);
          await sql`INSERT INTO patients (practice_id, id, given_names, last_name, birth_date)
              VALUES (${b.practiceId}, ${`pat_${randomBytes(8).toString('hex')}`}, '["Eve"]', 'Intruder', '1990-01-01')`.execute(
            trx,
          );
        }),
        /row-level security/,
      );

      const unset = await db.kysely.transaction().execute(async (trx) => {
        await sql`SET LOCAL ROLE ${sql.raw(APP_ROLE)}`.execute(trx);
        return (await sql<{ n: number }>`SELECT count(*)::int AS n FROM patients`.execute(trx)).rows[0]!.n;
      });
      assert.equal(unset, 0, 'without a practice set, the app role sees no patient at all');
    });
  });

  test("another practice's record answers exactly like an id that does not exist", async () => {
    const a = await svc.newPractice();
    const b = await svc.newPractice();
    const theirs = await createPatient(svc, b.key);
    const api = apiClient(svc, a.key);
    const random = `pat_${[...theirs.id.slice(4)].reverse().join('')}`;
    assert.notEqual(random, theirs.id);
    const foreign = await api('GET', `/patients/${theirs.id}`);
    const absent = await api('GET', `/patients/${random}`);
    assert.equal(foreign.status, 404, foreign.text);
    assert.equal(foreign.body.code, 'not_found');
    assert.deepEqual(comparable(foreign), {
      ...comparable(absent),
      body: comparable(absent).body.replaceAll(random, theirs.id),
    });
    assert.ok(!foreign.text.includes(b.practiceId));
    const byNumber = await api(
      'GET',
      `/patients?externalSystem=${encodeURIComponent(theirs.externalId.system)}&externalId=${encodeURIComponent(theirs.externalId.value)}`,
    );
    assert.equal(byNumber.status, 200);
    assert.deepEqual(byNumber.body.data, []);
  });

  test('200 interleaved requests of two practices over ONE pooled connection never mix', {
    skip: backend !== 'postgres' && 'a PostgreSQL pool is needed',
  }, async () => {
    const single = await startService('postgres', { poolSize: 1 });
    try {
      const a = await single.newPractice();
      const b = await single.newPractice();
      // The same practice number in both practices: a lookup that leaked would find the other's.
      const shared = { system: 'urn:test:mrn', value: randomBytes(5).toString('hex') };
      const pa = await createPatient(single, a.key, patientBody({ externalId: shared, lastName: 'Alpha' }));
      const pb = await createPatient(single, b.key, patientBody({ externalId: shared, lastName: 'Beta' }));
      const who = [
        { practice: a, patient: pa, other: pb },
        { practice: b, patient: pb, other: pa },
      ];
      const query = `externalSystem=${encodeURIComponent(shared.system)}&externalId=${shared.value}`;
      const answers = await Promise.all(
        Array.from({ length: 200 }, async (_, i) => {
          const side = who[i % 2]!;
          const api = apiClient(single, side.practice.key);
          const kind = Math.floor(i / 2) % 3;
          const path =
            kind === 0
              ? `/patients/${side.patient.id}`
              : kind === 1
                ? `/patients?${query}`
                : `/patients/${side.other.id}`;
          return { side, kind, answer: await api('GET', path) };
        }),
      );
      for (const { side, kind, answer } of answers) {
        if (kind !== 2) assert.ok(!answer.text.includes(side.other.id), `leaked the other: ${answer.text}`);
        assert.ok(!answer.text.includes(side.other === pa ? a.practiceId : b.practiceId), answer.text);
        assert.ok(!answer.text.includes(side.practice === a ? 'Beta' : 'Alpha'), answer.text);
        if (kind === 0) {
          assert.equal(answer.status, 200, answer.text);
          assert.equal(answer.body.id, side.patient.id);
          assert.equal(answer.body.organizationId, side.practice.practiceId);
        } else if (kind === 1) {
          assert.equal(answer.status, 200, answer.text);
          assert.deepEqual(
            answer.body.data.map((p: { id: string }) => p.id),
            [side.patient.id],
          );
        } else {
          assert.equal(answer.status, 404, answer.text);
        }
      }
    } finally {
      await single.close();
    }
  });
});
