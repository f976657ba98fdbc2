// src/platform/db/citus.ts places every table of the migrated schema exactly once (distributed by
// practice_id, a reference table, or left a plain table of the coordinator), so that a table a
// migration adds cannot be left out of a distributed deployment unnoticed. The schema's tables are those of
// src/platform/db/tables.ts, which test/platform-db-tables.test.ts holds to the migrations.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import {
  CITUS_DISTRIBUTED_TABLES,
  CITUS_REFERENCE_TABLES,
  CITUS_UNTOUCHED_TABLES,
} from '../../src/platform/db/citus.ts';

const root = path.resolve(import.meta.dirname, '../..');
const schemaTables = [
  ...readFileSync(path.join(root, 'src/platform/db/tables.ts'), 'utf8').matchAll(
    /^ {2}([a-z_]+): \w+Table;$/gm,
  ),
].map((m) => m[1]!);

const placed: string[] = [...CITUS_DISTRIBUTED_TABLES, ...CITUS_REFERENCE_TABLES, ...CITUS_UNTOUCHED_TABLES];

test('the schema has tables to place', () => {
  assert.ok(schemaTables.length > 30, `read ${schemaTables.length} tables from src/platform/db/tables.ts`);
});

test('every table of the schema is placed exactly once', () => {
  for (const table of schemaTables) {
    const times = placed.filter((t) => t === table).length;
    assert.equal(times, 1, `${table} is placed ${times} times in src/platform/db/citus.ts`);
  }
});

test('no table is placed that neither the schema nor the migrator has', () => {
  const unknown = placed.filter((t) => !schemaTables.includes(t) && !t.startsWith('kysely_migration'));
  assert.deepEqual(unknown, []);
});

test('the tables distributed by practice_id are the tenant tables with a practice_id column', () => {
  const source = readFileSync(path.join(root, 'src/platform/db/tables.ts'), 'utf8');
  for (const table of CITUS_DISTRIBUTED_TABLES) {
    const typeName = `${table
      .split('_')
      .map((w) => w[0]!.toUpperCase() + w.slice(1))
      .join('')}Table`;
    const body = new RegExp(`interface ${typeName} \\{([^}]*)\\}`).exec(source)?.[1] ?? '';
    assert.match(body, /\bpractice_id: string;/, `${table} has a practice_id that is never null`);
  }
});
