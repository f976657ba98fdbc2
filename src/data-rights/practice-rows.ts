// Owns the statements that reach every row of one practice in every table, for a practice that
// leaves (docs/decisions/0183-practice-offboarding.md): which tables hold a practice's rows (a
// `practice_id` column, and the practices row itself), in an order where a row is deleted before the
// rows it refers to; a page of one table's rows as JSON; and the deletion of them. Tables are found in
// the database's own catalogue, so a table added later is covered without a change here. Runs as the
// operator role; nothing else in the service deletes a practice's rows.
import { sql } from 'kysely';
import type { Trx } from '../platform/db/transaction.ts';

const PRACTICES = 'practices';

/** The column that names the practice in `table`. */
function practiceColumn(table: string) {
  return sql.ref(table === PRACTICES ? 'id' : 'practice_id');
}

/**
 * Every table holding a practice's rows, ordered so that a table comes before every table it refers
 * to (children before parents): deleting in this order never breaks a foreign key. Practices last.
 */
export async function practiceTables(trx: Trx): Promise<string[]> {
  const tables = await sql<{ table_name: string }>`
    SELECT c.table_name FROM information_schema.columns c
    JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
    WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE' AND c.column_name = 'practice_id'
    ORDER BY c.table_name`.execute(trx);
  const references = await sql<{ child: string; parent: string }>`
    SELECT cl.relname AS child, pl.relname AS parent FROM pg_constraint k
    JOIN pg_class cl ON cl.oid = k.conrelid JOIN pg_class pl ON pl.oid = k.confrelid
    JOIN pg_namespace n ON n.oid = k.connamespace
    WHERE k.contype = 'f' AND n.nspname = 'public'`.execute(trx);
  const names = [...tables.rows.map((r) => r.table_name), PRACTICES];
  return childrenFirst(names, references.rows);
}

/** `tables` ordered so that each comes before the tables it refers to (a topological order). */
export function childrenFirst(
  tables: string[],
  references: Array<{ child: string; parent: string }>,
): string[] {
  const ordered: string[] = [];
  const placed = new Set<string>();
  const visiting = new Set<string>();
  // A table is placed once every table referring to it is placed.
  const place = (table: string): void => {
    if (placed.has(table) || visiting.has(table)) return;
    visiting.add(table);
    for (const r of references)
      if (r.parent === table && r.child !== table && tables.includes(r.child)) place(r.child);
    visiting.delete(table);
    placed.add(table);
    ordered.push(table);
  };
  for (const table of [...tables].sort()) place(table);
  return ordered;
}

/** A page of the practice's rows of `table` as JSON, in the table's physical order after `after`. */
export async function practiceRowsPage(
  trx: Trx,
  table: string,
  practiceId: string,
  after: string,
  limit: number,
): Promise<Array<{ position: string; row: unknown }>> {
  const result = await sql<{ position: string; row: unknown }>`
    SELECT t.ctid::text AS position, to_jsonb(t) AS row FROM ${sql.table(table)} AS t
    WHERE ${practiceColumn(table)} = ${practiceId} AND t.ctid > ${after}::tid
    ORDER BY t.ctid LIMIT ${limit}`.execute(trx);
  return result.rows;
}

/** The first position, before every row. */
export const FIRST_POSITION = '(0,0)';

/**
 * Deletes every row of the practice, table by table in practiceTables' order, in the caller's
 * transaction; answers how many rows each table lost. The audit log's and the practices row's own
 * guards let this through only in this transaction (migration 0046).
 */
export async function deletePracticeRows(trx: Trx, practiceId: string): Promise<Record<string, number>> {
  await sql`SELECT set_config('app.offboarding_practice', ${practiceId}, true)`.execute(trx);
  const deleted: Record<string, number> = {};
  for (const table of await practiceTables(trx)) {
    const result =
      await sql`DELETE FROM ${sql.table(table)} WHERE ${practiceColumn(table)} = ${practiceId}`.execute(trx);
    deleted[table] = Number(result.numAffectedRows ?? 0);
  }
  return deleted;
}
