// An upgrade across migration 0055 loses no stored answer: a database migrated by a build before it,
// holding an answer to the operator's key (practice and client null, in idempotency_keys then) and one
// to a client's key, is migrated to the latest schema, and both keys still find their answers as a
// repeat of their requests would: the operator's in a transaction of the operator role, the client's in
// one of its practice (row-level security applied). An answer past its 24 hours stays expired, and
// a practice's transaction (the app role) cannot read the operator's table at all.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { prepareSchema } from '../src/bootstrap.ts';
import { type KeyScope, storedAnswer } from '../src/idempotency/idempotency-store.ts';
import { type Database, openPglite, openPostgres } from '../src/platform/db/database.ts';
import { asOperator, inPractice } from '../src/platform/db/transaction.ts';
import { describeEachBackend, emptyPostgresDatabase } from './harness.ts';
import { migrateUpToBefore } from './support/older-schema.ts';

const SPLIT = '0055_operator_idempotency_keys_apart';

const PRACTICE = 'org_upgrade_keys';
const CLIENT = 'cli_upgrade_keys';

/** An answer as a build before 0055 stored it. */
const answer = (status: number, body: object) => ({
  status,
  headers: { location: `/admin/v1/practices/${PRACTICE}` },
  body: JSON.stringify(body),
});
const OPERATOR_ANSWER = answer(201, { id: PRACTICE, object: 'practice' });
const CLIENT_ANSWER = answer(201, { id: 'pat_upgrade', object: 'patient' });

/** The rows a build before 0055 wrote: a practice, its client, and stored answers of both holders. */
async function writeOldAnswers(db: Database): Promise<void> {
  const stored = (
    practice: string | null,
    client: string | null,
    key: string,
    a: typeof OPERATOR_ANSWER,
    hours: number,
  ) =>
    sql`INSERT INTO idempotency_keys
          (practice_id, client_id, key, fingerprint, response_status, response_headers, response_body,
           created_at, expires_at)
        VALUES (${practice}, ${client}, ${key}, ${`fp-${key}`}, ${a.status}, ${JSON.stringify(a.headers)}::jsonb,
                ${a.body}, now() - interval '1 hour', now() + make_interval(hours => ${hours}))`.execute(
      db.kysely,
    );
  await sql`INSERT INTO practices (id, name) VALUES (${PRACTICE}, 'Upgrade practice')`.execute(db.kysely);
  await sql`INSERT INTO clients (practice_id, id, name, permissions)
            VALUES (${PRACTICE}, ${CLIENT}, 'Upgrade client', '{}')`.execute(db.kysely);
  await stored(null, null, 'operator-key', OPERATOR_ANSWER, 23);
  await stored(null, null, 'operator-expired', OPERATOR_ANSWER, -1);
  await stored(PRACTICE, CLIENT, 'client-key', CLIENT_ANSWER, 23);
  // The same key held by both: each holder's answer is its own.
  await stored(null, null, 'shared-key', OPERATOR_ANSWER, 23);
  await stored(PRACTICE, CLIENT, 'shared-key', CLIENT_ANSWER, 23);
}

describeEachBackend("stored answers across the upgrade that keeps the operator's keys apart", (backend) => {
  let db: Database;
  let drop: (() => Promise<void>) | undefined;
  before(async () => {
    if (backend === 'pglite') db = await openPglite({ dataDir: undefined });
    else {
      const database = await emptyPostgresDatabase('pb_keys_upgrade');
      drop = database.drop;
      db = openPostgres({ url: database.url, poolSize: 2, statementTimeoutMs: 60_000 });
    }
    await migrateUpToBefore(db, SPLIT);
    await writeOldAnswers(db);
    await prepareSchema(db.kysely);
  });
  after(async () => {
    await db?.close();
    await drop?.();
  });

  const operator = (key: string): KeyScope => ({ holder: 'operator', key });
  const client = (key: string): KeyScope => ({ holder: { practiceId: PRACTICE, clientId: CLIENT }, key });

  test("the operator's key finds its answer", async () => {
    const found = await asOperator(db, (trx) => storedAnswer(trx, operator('operator-key')));
    assert.deepEqual(found, { fingerprint: 'fp-operator-key', answer: OPERATOR_ANSWER });
  });

  test("a client's key finds its answer, within its practice", async () => {
    const found = await inPractice(db, PRACTICE, (trx) => storedAnswer(trx, client('client-key')));
    assert.deepEqual(found, { fingerprint: 'fp-client-key', answer: CLIENT_ANSWER });
  });

  test('a key both held answers each holder with its own', async () => {
    const theirs = await asOperator(db, (trx) => storedAnswer(trx, operator('shared-key')));
    const its = await inPractice(db, PRACTICE, (trx) => storedAnswer(trx, client('shared-key')));
    assert.deepEqual(theirs?.answer, OPERATOR_ANSWER);
    assert.deepEqual(its?.answer, CLIENT_ANSWER);
  });

  test('an expired answer stays expired, and no key is answered for the wrong holder', async () => {
    assert.equal(await asOperator(db, (trx) => storedAnswer(trx, operator('operator-expired'))), undefined);
    assert.equal(await asOperator(db, (trx) => storedAnswer(trx, operator('client-key'))), undefined);
    assert.equal(
      await inPractice(db, PRACTICE, (trx) => storedAnswer(trx, client('operator-key'))),
      undefined,
    );
  });

  test("a practice's transaction cannot read the operator's answers", async () => {
    await assert.rejects(
      inPractice(db, PRACTICE, (trx) => sql`SELECT key FROM operator_idempotency_keys`.execute(trx)),
      /permission denied/,
    );
  });
});
