// Texts a transaction learns only with its COMMIT's answer (src/platform/db/late-text.ts): a held
// JSON write replaces the placeholder in SQL with the text a statement before it wrote, escaped as
// JSON; the answer is finished once the text is had; work rolled back forgets the texts it gave.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import {
  addLateText,
  forgetLateTextsSince,
  jsonWithLateTexts,
  type LateText,
  lateTextCount,
  lateTextFinisher,
} from '../src/platform/db/late-text.ts';
import { asOperator, type Trx } from '../src/platform/db/transaction.ts';
import { describeEachBackend, startService, type TestService } from './harness.ts';

const PLACEHOLDER = '#late_1';
// Every character JSON escapes that a text can hold, and SQL's quote.
const AWKWARD = `A-"quoted"\\back'slash\ttab`;

/** A late text whose SQL reads `read` and whose answer is `value`, not had yet. */
function lateText(read: string | null, value: string): LateText {
  return {
    placeholder: PLACEHOLDER,
    read: read === null ? sql<string>`(SELECT NULL::text)` : sql<string>`(SELECT ${read}::text)`,
    value: async () => value,
    known: () => undefined,
  };
}

async function jsonInSql(trx: Trx, json: string): Promise<unknown> {
  const text = await jsonWithLateTexts(trx, json);
  const { rows } = await sql<{ j: unknown }>`SELECT (${text})::jsonb AS j`.execute(trx);
  return rows[0]!.j;
}

describeEachBackend('late texts', (backend) => {
  let svc: TestService;
  before(async () => {
    svc = await startService(backend);
  });
  after(async () => {
    await svc.close();
  });

  test('a held JSON write takes the text in SQL, escaped as JSON, at every place it stands', async () => {
    const json = JSON.stringify({ number: PLACEHOLDER, reason: `Invoice ${PLACEHOLDER} was not issued` });
    const written = await asOperator(svc.db, async (trx) => {
      addLateText(trx, lateText(AWKWARD, AWKWARD));
      return jsonInSql(trx, json);
    });
    assert.deepEqual(written, { number: AWKWARD, reason: `Invoice ${AWKWARD} was not issued` });
  });

  test('a text whose write was undone leaves the placeholder, never an empty or null body', async () => {
    const json = JSON.stringify({ number: PLACEHOLDER });
    const written = await asOperator(svc.db, async (trx) => {
      addLateText(trx, lateText(null, 'unused'));
      return jsonInSql(trx, json);
    });
    assert.deepEqual(written, { number: PLACEHOLDER });
  });

  test('the answer is finished with the text once had, and a text already had is written as it is', async () => {
    const json = JSON.stringify({ number: PLACEHOLDER });
    const { finish, asWritten } = await asOperator(svc.db, async (trx) => {
      addLateText(trx, { ...lateText(AWKWARD, AWKWARD), known: () => AWKWARD });
      return { finish: lateTextFinisher(trx), asWritten: await jsonWithLateTexts(trx, json) };
    });
    assert.ok(finish);
    assert.deepEqual(JSON.parse(await finish(json)), { number: AWKWARD });
    assert.equal(typeof asWritten, 'string', 'no SQL is needed for a text already had');
    assert.deepEqual(JSON.parse(asWritten as string), { number: AWKWARD });
  });

  test('texts given by work rolled back are forgotten: nothing is replaced for them', async () => {
    const json = JSON.stringify({ number: PLACEHOLDER });
    const { finish, asWritten } = await asOperator(svc.db, async (trx) => {
      const before = lateTextCount(trx);
      addLateText(trx, { ...lateText('INV-000009', 'INV-000009'), known: () => 'INV-000009' });
      forgetLateTextsSince(trx, before);
      return { finish: lateTextFinisher(trx), asWritten: await jsonWithLateTexts(trx, json) };
    });
    assert.equal(finish, undefined);
    assert.equal(asWritten, json);
  });
});
