// A practice leaving the service: POST /admin/v1/practices/{id}/export writes all its data as JSON
// lines, one file per table; DELETE /admin/v1/practices/{id} (after the export, confirmed, with no job
// in flight) removes every row of it, and no row anywhere names it afterwards.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { pdfPages } from './accounts-fixtures.ts';
import { billedInvoice, billingPractice, newPatient } from './billing-fixtures.ts';
import { describeEachBackend, startService, type TestService } from './harness.ts';
import { childEnv, cli } from './processes.ts';
import { addEndpoint, Receiver } from './webhooks-fixtures.ts';

/** Every table with a row that mentions `needle` anywhere (each row read whole as text). */
async function tablesMentioning(svc: TestService, needle: string): Promise<string[]> {
  const tables = await sql<{ table_name: string }>`
    SELECT table_name FROM information_schema.tables
    WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name`.execute(svc.db.kysely);
  const found: string[] = [];
  for (const { table_name } of tables.rows) {
    const hits = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM ${sql.table(table_name)} AS t WHERE t::text LIKE ${`%${needle}%`}`.execute(
      svc.db.kysely,
    );
    if (hits.rows[0]!.n > 0) found.push(table_name);
  }
  return found;
}

/** The tables with a practice_id column, and those with a foreign key to practices. */
async function tablesOfPractices(svc: TestService): Promise<string[]> {
  const result = await sql<{ table_name: string }>`
    SELECT c.table_name FROM information_schema.columns c
    JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
    WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE' AND c.column_name = 'practice_id'
    UNION
    SELECT cl.relname FROM pg_constraint k JOIN pg_class cl ON cl.oid = k.conrelid
    WHERE k.contype = 'f' AND k.confrelid = 'practices'::regclass`.execute(svc.db.kysely);
  return result.rows.map((r) => r.table_name).sort();
}

describeEachBackend('a practice leaving the service', (backend) => {
  let svc: TestService;
  let receiver: Receiver;
  let dataDir: string;
  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'offboarding-'));
    svc = await startService(backend, { env: { DATA_DIR: dataDir } });
    receiver = await Receiver.forService(svc);
  });
  after(async () => {
    await receiver.close();
    await svc.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  test('is exported table by table, then deleted: no row of any table names it, the other practice is whole', async () => {
    const leaving = await billingPractice(svc);
    const staying = await billingPractice(svc);
    await addEndpoint(svc, leaving.practiceId, receiver);
    const patientId = await newPatient(leaving.api);
    const invoice = await billedInvoice(svc, leaving, { patientId, issue: true });
    const keptPatient = await newPatient(staying.api);
    await billedInvoice(svc, staying, { patientId: keptPatient, issue: true });
    const id = leaving.practiceId;
    const remove = (confirm: string) =>
      svc.admin('DELETE', `/practices/${id}?confirm=${encodeURIComponent(confirm)}`);

    const unexported = await remove(id);
    assert.equal(unexported.status, 409, unexported.text);
    assert.match(unexported.body.detail, /[Ee]xport/);

    // As docs/data-rights.md tells the operator: through the CLI.
    const server = ['--url', svc.baseUrl, '--token', svc.adminToken];
    const exportRun = await cli(['admin', 'practices', 'export', id, ...server], childEnv());
    assert.equal(exportRun.code, 0, exportRun.stderr);
    const exported = { body: JSON.parse(exportRun.stdout) };
    const directory = exported.body.directory as string;
    assert.ok(directory.startsWith(path.join(dataDir, 'exports')), directory);
    const files = new Map<string, string[]>(
      exported.body.tables.map((t: { table: string; file: string }) => [
        t.table,
        fs.readFileSync(path.join(directory, t.file), 'utf8').split('\n').filter(Boolean),
      ]),
    );
    for (const t of exported.body.tables) assert.equal(files.get(t.table)!.length, t.rows, t.table);
    assert.deepEqual(
      [...files.keys()].sort(),
      await tablesOfPractices(svc).then((t) => [...t, 'practices'].sort()),
    );
    const rows = (table: string) => files.get(table)!.map((line) => JSON.parse(line));
    assert.deepEqual(
      rows('patients').map((p) => p.id),
      [patientId],
    );
    assert.deepEqual(
      rows('invoices').map((i) => i.id),
      [invoice.id],
    );
    assert.ok(rows('invoice_lines').length > 0 && rows('audit_events').length > 0);
    assert.deepEqual(
      rows('practices').map((p) => p.id),
      [id],
    );
    for (const table of files.keys()) {
      for (const row of rows(table))
        assert.equal(row.practice_id ?? row.id, id, `${table} holds only this practice`);
    }
    assert.deepEqual(
      JSON.parse(fs.readFileSync(path.join(directory, 'manifest.json'), 'utf8')),
      exported.body,
    );
    // The issued invoice's account, as the patient received it.
    assert.equal(exported.body.accounts, 1);
    assert.deepEqual(fs.readdirSync(path.join(directory, 'accounts')), [`${invoice.number}.pdf`]);
    const pages = await pdfPages(fs.readFileSync(path.join(directory, 'accounts', `${invoice.number}.pdf`)));
    assert.ok(pages.join('\n').includes(invoice.number), 'the account names its invoice');

    const wrong = await remove(staying.practiceId);
    assert.equal(wrong.status, 422, wrong.text);
    assert.deepEqual(
      wrong.body.errors.map((e: { field: string }) => e.field),
      ['confirm'],
    );
    // The issued invoice's webhook delivery is still queued.
    const busy = await remove(id);
    assert.equal(busy.status, 409, busy.text);
    assert.match(busy.body.detail, /in flight/);
    await svc.worker.drain();

    const deleteRun = await cli(['admin', 'practices', 'delete', id, '--confirm', id, ...server], childEnv());
    assert.equal(deleteRun.code, 0, deleteRun.stderr);
    const deleted = JSON.parse(deleteRun.stdout);
    assert.ok(deleted.deleted.invoices === 1 && deleted.deleted.practices === 1, deleteRun.stdout);
    assert.deepEqual(await tablesMentioning(svc, id), [], 'no row of any table names the practice');
    assert.equal((await svc.admin('GET', `/practices/${id}`)).status, 404);
    assert.equal((await leaving.api('GET', `/patients/${patientId}`)).status, 401, 'its keys are gone');
    const kept = await staying.api('GET', `/patients/${keptPatient}`);
    assert.equal(kept.status, 200, kept.text);
    assert.equal((await staying.api('GET', '/invoices')).body.data.length, 1);
  });
});
