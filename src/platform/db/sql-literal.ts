// Owns how a text is written as an SQL literal, for statements that go out with no parameters (a
// transaction's frame, held writes): the escaped form (E'...', backslashes and quotes doubled), which
// reads the same whatever standard_conforming_strings says. PostgreSQL keeps no NUL in text, so a
// text holding one has no literal; callers check that first.

/** The text as an SQL literal; `value` must hold no NUL character. */
export function textLiteral(value: string): string {
  return `E'${value.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`;
}
