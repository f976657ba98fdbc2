// scripts/citus-distribute.sql names every table of the migrated schema exactly once, so that a table
// a migration adds cannot be left out of a distributed deployment unnoticed. The schema's tables are
// those of src/platform/db/tables.ts, which test/platform-db-tables.test.ts holds to the migrations.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

const root = path.resolve(import.meta.dirname, '../..');
const script = readFileSync(path.join(root, 'scripts/citus-distribute.sql'), 'utf8');
const schemaTables = [
  ...readFileSync(path.join(root, 'src/platform/db/tables.ts'), 'utf8').matchAll(
    /^ {2}([a-z_]+): \w+Table;$/gm,
  ),
].map((m) => m[1]!);

/** Each table the script places, with how: distributed, reference, a Citus local table, or left local. */
const placed = [
  ...script.matchAll(
    /^SELECT (create_distributed_table|create_reference_table|citus_add_local_table_to_metadata)\('([a-z_]+)'|^-- stays local: ([a-z_]+)/gm,
  ),
].map((m) => ({ how: m[1] ?? 'stays local', table: (m[2] ?? m[3])! }));

test('the schema has tables to place', () => {
  assert.ok(schemaTables.length > 30, `read ${schemaTables.length} tables from src/platform/db/tables.ts`);
});

test('every table of the schema is placed exactly once', () => {
  for (const table of schemaTables) {
    const times = placed.filter((p) => p.table === table).length;
    assert.equal(times, 1, `${table} is placed ${times} times in scripts/citus-distribute.sql`);
  }
});

test('the script places no table the schema does not have', () => {
  const unknown = placed.filter((p) => !schemaTables.includes(p.table)).map((p) => p.table);
  assert.deepEqual(unknown, []);
});

test('tenant tables are distributed by practice_id, colocated with the first of them', () => {
  const distributed = [...script.matchAll(/^SELECT create_distributed_table\((.*)\);$/gm)].map((m) => m[1]!);
  assert.ok(distributed.length > 0);
  const [first, ...rest] = distributed;
  assert.match(first!, /^'[a-z_]+', 'practice_id'$/);
  const anchor = /^'([a-z_]+)'/.exec(first!)![1];
  for (const call of rest)
    assert.match(call, new RegExp(`^'[a-z_]+', 'practice_id', colocate_with => '${anchor}'$`));
});
