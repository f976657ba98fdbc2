// Owns reading a parent's child rows inside the parent's own statement: the rows of a child table
// (a practice's rows with a `position`) as one jsonb array in position order, so that a record and
// its parts cost one round trip. Columns keep the values the driver would give: numbers as numbers,
// dates as 'YYYY-MM-DD' strings, jsonb as objects (child tables hold no timestamps).
import { type RawBuilder, type Selectable, sql } from 'kysely';
import type { Tables } from './tables.ts';

type ChildTable = {
  [T in keyof Tables]: Tables[T] extends { practice_id: unknown; position: unknown } ? T : never;
}[keyof Tables];

export function childRows<T extends ChildTable>(
  table: T,
  parentColumn: keyof Tables[T] & string,
  practiceId: string,
  parentId: string,
): RawBuilder<Selectable<Tables[T]>[]> {
  return sql<Selectable<Tables[T]>[]>`coalesce((
    SELECT jsonb_agg(to_jsonb(c) ORDER BY c.position) FROM ${sql.table(table)} c
    WHERE c.practice_id = ${practiceId} AND ${sql.ref(`c.${parentColumn}`)} = ${parentId}), '[]'::jsonb)`;
}
