// A start loads the catalogue only when its content differs from what was loaded last: an unchanged
// catalogue is left alone, and a changed CATALOGUE_DIR file shows in the API after the next start.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { prepareSchema } from '../src/bootstrap.ts';
import { SHIPPED_CATALOGUE_DIR } from '../src/catalogue/loader.ts';
import { describeEachBackend, startService, type TestService } from './harness.ts';

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
