// Owns statements sent with the COMMIT: a transaction's last writes whose answer nobody reads (a
// request's audit row and stored answer, a job's end, a webhook attempt). On PostgreSQL such a
// statement is held back and sent in one message with its transaction's COMMIT
// (src/platform/db/database.ts), so it costs no round trip of its own; if it fails, the COMMIT fails
// with its error and nothing of the transaction is kept. A message of several statements takes no
// parameters, so the values are written here as literals, in the escaped form (E'...') that reads the
// same whatever standard_conforming_strings says.
import { type RawBuilder, sql } from 'kysely';

/** The comment that ends a statement to be sent with the COMMIT; the database layer looks for it. */
export const SENT_WITH_COMMIT_MARK = '/* sent with commit */';

/** Ends a statement to be sent with the COMMIT: put it last in the statement's text. */
export const sentWithCommit: RawBuilder<unknown> = sql.raw(SENT_WITH_COMMIT_MARK);

export type LiteralValue = string | number | boolean | Date | null;

function canBeLiteral(value: LiteralValue): boolean {
  if (typeof value === 'string') return !value.includes('\0');
  if (typeof value === 'number') return Number.isFinite(value);
  if (value instanceof Date) return !Number.isNaN(value.getTime());
  return true;
}

/** The value as an SQL literal (PostgreSQL keeps no NUL in text, and a NUL would cut the text short). */
function literal(value: LiteralValue): RawBuilder<unknown> {
  if (!canBeLiteral(value)) throw new RangeError(`${String(value)} has no SQL literal`);
  if (value === null) return sql.raw('NULL');
  if (typeof value === 'boolean') return sql.raw(value ? 'TRUE' : 'FALSE');
  if (typeof value === 'number') return sql.raw(String(value));
  const text = value instanceof Date ? value.toISOString() : value;
  return sql.raw(`E'${text.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`);
}

/**
 * A statement's values for sending it with the COMMIT: as literals, and `end`, the mark that goes last
 * in its text. When one of them cannot be a literal (text with a NUL) they are all parameters and `end`
 * is empty: the statement is sent on its own, as any other (and refused there).
 */
export function valuesForCommit<Row extends Record<string, LiteralValue>>(
  row: Row,
): { values: { [Column in keyof Row]: RawBuilder<Row[Column]> }; end: RawBuilder<unknown> } {
  const literals = Object.values(row).every(canBeLiteral);
  const values = Object.fromEntries(
    Object.entries(row).map(([column, value]) => [column, literals ? literal(value) : sql`${value}`]),
  ) as { [Column in keyof Row]: RawBuilder<Row[Column]> };
  return { values, end: literals ? sentWithCommit : sql`` };
}
