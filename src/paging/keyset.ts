// Owns keyset paging's one condition: the rows past a page's last one in the list's order. A list
// sorted on (c1, c2, …) ascending continues at (c1, c2, …) > (v1, v2, …), descending at <, with each
// value cast to its column's type; the first page has no position and takes every row.
import { type RawBuilder, sql } from 'kysely';

export type KeyType = 'text' | 'int' | 'bigint' | 'timestamptz';

/** One column of a list's order with the last row's value in it. */
export interface KeyPart {
  column: string;
  value: string | number | Date;
  type: KeyType;
}

/** The rows after `position` in a list ordered on its columns, `asc` or `desc`; TRUE without a position. */
export function pastPosition(order: 'asc' | 'desc', position: KeyPart[] | undefined): RawBuilder<boolean> {
  if (!position) return sql<boolean>`TRUE`;
  const columns = sql.join(position.map((part) => sql.ref(part.column)));
  const values = sql.join(position.map((part) => sql`${part.value}::${sql.raw(part.type)}`));
  return sql<boolean>`(${columns}) ${sql.raw(order === 'asc' ? '>' : '<')} (${values})`;
}
