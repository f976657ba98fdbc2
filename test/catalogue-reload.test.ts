// A start loads the catalogue only when its content differs from what was loaded last: an unchanged
// catalogue is left alone, and a changed CATALOGUE_DIR file shows in the API after the next start.
// Processes starting together on an empty PostgreSQL database (the API and the worker) both start.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type { Kysely } from 'kysely';
import { prepareSchema } from '../src/bootstrap.ts';
import { SHIPPED_CATALOGUE_DIR } from '../src/catalogue/loader.ts';
import { openPostgres } from '../src/platform/db/database.ts';
import { migrateToLatest } from '../src/platform/db/migrate.ts';
import { describeEachBackend, emptyPostgresDatabase, startService, type TestService } from './harness.ts';

async function icd10Row(svc: TestService) {
  return svc.db.kysely
    .selectFrom('code_systems')
    .select(['title', 'updated_at'])
    .where('url', '=', 'http://hl7.org/fhir/sid/icd-10')
    .executeTakeFirstOrThrow();
}

describeEachBackend('catalogue reload', (backend) => {
  let svc: TestService;
  let extra: string;
  before(async () => {
    svc = await startService(backend);
    extra = fs.mkdtempSync(path.join(os.tmpdir(), 'catalogue-'));
    fs.cpSync(SHIPPED_CATALOGUE_DIR, extra, { recursive: true });
  });
  after(async () => {
    await svc.close();
    fs.rmSync(extra, { recursive: true, force: true });
  });

  test('an unchanged catalogue is not loaded again; a changed one is', async () => {
    await prepareSchema(svc.db.kysely, extra);
    const loaded = await icd10Row(svc);
    await new Promise((resolve) => setTimeout(resolve, 20));
    await prepareSchema(svc.db.kysely, extra);
    assert.deepEqual(await icd10Row(svc), loaded, 'the same content is not written again');

    const file = path.join(extra, 'code-systems.json');
    const systems = JSON.parse(fs.readFileSync(file, 'utf8')) as Array<{ url: string; title: string }>;
    systems.find((s) => s.url === 'http://hl7.org/fhir/sid/icd-10')!.title = 'ICD-10 (local edition)';
    fs.writeFileSync(file, JSON.stringify(systems));
    await prepareSchema(svc.db.kysely, extra);
    const changed = await icd10Row(svc);
    assert.equal(changed.title, 'ICD-10 (local edition)');
    assert.ok(changed.updated_at > loaded.updated_at);
  });
});

test('processes preparing an empty PostgreSQL database at once all start, and the catalogue is loaded once', {
  skip: process.env.DATABASE_URL ? false : 'needs DATABASE_URL',
}, async () => {
  const database = await emptyPostgresDatabase('pb_t_start');
  const processes = [1, 2, 3].map(() =>
    openPostgres({ url: database.url, poolSize: 2, statementTimeoutMs: 120_000 }),
  );
  try {
    // The schema is migrated and the catalogue not yet loaded: as a second process finds it when the
    // first has just finished migrating. Every process then judges the catalogue at the same moment.
    await migrateToLatest(processes[0]!.kysely as unknown as Kysely<unknown>);
    const started = await Promise.allSettled(processes.map((db) => prepareSchema(db.kysely)));
    assert.deepEqual(
      started.map((s) => (s.status === 'fulfilled' ? 'started' : String(s.reason))),
      ['started', 'started', 'started'],
    );
    const db = processes[0]!.kysely;
    const systems = await db
      .selectFrom('code_systems')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow();
    const shipped = JSON.parse(
      fs.readFileSync(path.join(SHIPPED_CATALOGUE_DIR, 'code-systems.json'), 'utf8'),
    ) as unknown[];
    assert.equal(Number(systems.n), shipped.length, 'each shipped code system once');
    const loads = await db
      .selectFrom('service_settings')
      .select('value')
      .where('name', '=', 'catalogue_hash')
      .execute();
    assert.equal(loads.length, 1);
  } finally {
    await Promise.all(processes.map((db) => db.close()));
    await database.drop();
  }
});
