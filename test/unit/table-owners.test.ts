// Each table's SQL lives with its owner (src/table-owners.ts). The source of src/ is read as text:
// a table is named in SQL by Kysely's selectFrom, insertInto, updateTable, deleteFrom, mergeInto and
// joins, by childRows, or as a word of an sql`` template. A file outside the owner's stores may name
// it only as a declared cross-owner read (reading) or write.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { CROSS_OWNER_READS, CROSS_OWNER_WRITES, TABLE_OWNERS } from '../../src/table-owners.ts';

const root = path.resolve(import.meta.dirname, '../..');

const databaseTables = [
  ...readFileSync(path.join(root, 'src/platform/db/tables.ts'), 'utf8').matchAll(
    /^ {2}([a-z_]+): \w+Table;$/gm,
  ),
].map((m) => m[1]!);

function sourceFiles(dir: string): string[] {
  return readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const relative = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return sourceFiles(relative);
    return entry.name.endsWith('.ts') ? [relative] : [];
  });
}

export interface TableUse {
  table: string;
  writes: boolean;
}

const KYSELY_CALL =
  /\.(selectFrom|insertInto|updateTable|deleteFrom|mergeInto|replaceInto|innerJoin|leftJoin|rightJoin|fullJoin|innerJoinLateral|leftJoinLateral)\(\s*(\[[^\]]*\]|'[^']*'|"[^"]*")/g;
const WRITING_CALLS = new Set(['insertInto', 'updateTable', 'deleteFrom', 'mergeInto', 'replaceInto']);
const SQL_TEMPLATE = /\bsql(?:<[^`]*?>)?`((?:[^`\\]|\\.)*)`/g;

/** The tables a source text names in SQL, and whether it writes them. */
export function tablesNamedInSql(source: string, tables: readonly string[]): Map<string, TableUse> {
  const known = new Set(tables);
  const uses = new Map<string, TableUse>();
  const note = (table: string, writes: boolean) => {
    if (!known.has(table)) return;
    const use = uses.get(table) ?? { table, writes: false };
    use.writes ||= writes;
    uses.set(table, use);
  };
  for (const m of source.matchAll(KYSELY_CALL)) {
    for (const name of m[2]!.matchAll(/['"]([a-z_]+)/g)) note(name[1]!, WRITING_CALLS.has(m[1]!));
  }
  for (const m of source.matchAll(/\bchildRows\(\s*'([a-z_]+)'/g)) note(m[1]!, false);
  for (const m of source.matchAll(SQL_TEMPLATE)) {
    const text = m[1]!.replace(/\$\{[^}]*\}/g, ' ');
    for (const word of text.matchAll(/\b[a-z_]+\b/g)) note(word[0], false);
    for (const w of text.matchAll(/\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM|MERGE\s+INTO)\s+([a-z_]+)/gi))
      note(w[1]!, true);
  }
  return uses;
}

const ownerOf = new Map<string, { capability: string; stores: string[] }>();
for (const [capability, owner] of Object.entries(TABLE_OWNERS)) {
  for (const table of owner.tables) {
    assert.ok(
      !ownerOf.has(table),
      `${table} has two owners: ${ownerOf.get(table)?.capability} and ${capability}`,
    );
    ownerOf.set(table, { capability, stores: owner.stores });
  }
}

/** Every naming of a table in SQL that the map does not allow, as `file: table (owner)`. */
export function strayTableUses(files: Array<{ file: string; source: string }>): string[] {
  const stray: string[] = [];
  for (const { file, source } of files) {
    for (const use of tablesNamedInSql(source, databaseTables).values()) {
      const owner = ownerOf.get(use.table);
      if (!owner || owner.stores.includes(file)) continue;
      const read = CROSS_OWNER_READS.some((r) => r.files.includes(file) && r.reads.includes(use.table));
      const write = CROSS_OWNER_WRITES.some((w) => w.file === file && w.writes.includes(use.table));
      if (write || (read && !use.writes)) continue;
      stray.push(`${file}: ${use.writes ? 'writes' : 'reads'} ${use.table} (owned by ${owner.capability})`);
    }
  }
  return stray;
}

const files = sourceFiles('src').map((file) => ({
  file,
  source: readFileSync(path.join(root, file), 'utf8'),
}));

describe('table owners', () => {
  test('every table of the database has one owner, and the map names no other table', () => {
    assert.deepEqual([...ownerOf.keys()].sort(), [...databaseTables].sort());
  });

  test("every owner's store and every declared exception is a file of src/", () => {
    const known = new Set(files.map((f) => f.file));
    const listed = [
      ...Object.values(TABLE_OWNERS).flatMap((o) => o.stores),
      ...CROSS_OWNER_READS.flatMap((r) => r.files),
      ...CROSS_OWNER_WRITES.map((w) => w.file),
    ];
    assert.deepEqual(
      listed.filter((file) => !known.has(file)),
      [],
    );
  });

  test('no file outside its owner names a table in SQL', () => {
    assert.deepEqual(strayTableUses(files), []);
  });

  test('a declared exception is still needed: it names each table it declares', () => {
    const unused: string[] = [];
    for (const read of CROSS_OWNER_READS) {
      const named = new Set(
        read.files.flatMap((file) => [
          ...tablesNamedInSql(files.find((f) => f.file === file)?.source ?? '', databaseTables).keys(),
        ]),
      );
      unused.push(
        ...read.reads.filter((table) => !named.has(table)).map((table) => `${read.name}: ${table}`),
      );
    }
    assert.deepEqual(unused, []);
  });

  test('the check finds a non-owner naming a table, by Kysely or in SQL text, and a read model that writes', () => {
    assert.deepEqual(
      strayTableUses([
        { file: 'src/claims/service.ts', source: "trx.selectFrom('invoices as i').selectAll()" },
        { file: 'src/clients/store.ts', source: 'sql`SELECT 1 FROM webhook_endpoints w`' },
        { file: 'src/back-office/dashboard-reads.ts', source: "trx.updateTable('invoices').set({})" },
        { file: 'src/invoices/rates.ts', source: 'sql`UPDATE practice_prices SET amount = 1`' },
        { file: 'src/invoices/store.ts', source: "trx.insertInto('invoices').values(row)" },
      ]),
      [
        'src/claims/service.ts: reads invoices (owned by invoices)',
        'src/clients/store.ts: reads webhook_endpoints (owned by webhooks)',
        'src/back-office/dashboard-reads.ts: writes invoices (owned by invoices)',
        'src/invoices/rates.ts: writes practice_prices (owned by pricing)',
      ],
    );
  });
});
