// Owns statements sent with the COMMIT: the last writes of a request whose answer nobody reads (its
// audit row, the stored answer of an Idempotency-Key). On PostgreSQL such a statement is held back
// and sent in one message with its transaction's COMMIT (src/platform/db/database.ts), so it costs no
// round trip of its own; if it fails, the COMMIT fails with its error and nothing of the transaction
// is kept. A message of several statements takes no parameters, so the values are written here as
// literals, in the escaped form (E'...') that reads the same whatever standard_conforming_strings says.
import { type RawBuilder, sql } from 'kysely';

/** The comment that ends a statement to be sent with the COMMIT; the database layer looks for it. */
export const SENT_WITH_COMMIT_MARK = '/* sent with commit */';

/** Ends a statement to be sent with the COMMIT: put it last in the statement's text. */
export const sentWithCommit: RawBuilder<unknown> = sql.raw(SENT_WITH_COMMIT_MARK);

export type LiteralValue = string | number | null;

/**
 * Whether every value can be written as a literal: PostgreSQL keeps no NUL in text, and a NUL would
 * cut a statement's text short, so a value with one is sent as a parameter (and refused there).
 */
export function literalsCanCarry(values: readonly LiteralValue[]): boolean {
  return values.every(
    (value) => value === null || (typeof value === 'number' ? Number.isFinite(value) : !value.includes('\0')),
  );
}

/** The value as an SQL literal; check it with literalsCanCarry first. */
export function literal(value: LiteralValue): RawBuilder<unknown> {
  if (value === null) return sql.raw('NULL');
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new RangeError(`${value} has no SQL literal`);
    return sql.raw(String(value));
  }
  if (value.includes('\0')) throw new RangeError('text with a NUL has no SQL literal');
  return sql.raw(`E'${value.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`);
}

/** A row's values as literals, column by column (check them with literalsCanCarry first). */
export function literals<Row extends Record<string, LiteralValue>>(
  row: Row,
): { [Column in keyof Row]: RawBuilder<Row[Column]> } {
  return Object.fromEntries(Object.entries(row).map(([column, value]) => [column, literal(value)])) as {
    [Column in keyof Row]: RawBuilder<Row[Column]>;
  };
}
