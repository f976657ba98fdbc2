// Owns what a traced SQL statement may show of itself: its shape, every literal replaced by `?`, so
// that values a statement carries inline (the transaction's frame: SET LOCAL takes no parameters, so
// its practice id is a literal, src/platform/db/transaction.ts) never leave the process in a span.

/**
 * A statement's text with its literals replaced by `?`: quoted strings (E'...' with backslash escapes,
 * '...' with doubled quotes, $tag$...$tag$) and numbers outside names. Whatever is left that could
 * still open a literal makes the whole text give way to its first word.
 */
export function statementShape(text: string): string {
  const shaped = text
    .replace(/\$([A-Za-z_]*)\$[\s\S]*?\$\1\$/g, '?')
    .replace(/[Ee]'(?:[^'\\]|\\[\s\S]|'')*'/g, '?')
    .replace(/'(?:[^']|'')*'/g, '?')
    .replace(/(?<![\w$.])-?\d+(?:\.\d+)?(?![\w$])/g, '?');
  if (/['$]/.test(shaped.replace(/\$\d+/g, ''))) return text.trim().split(/\s+/)[0] ?? '';
  return shaped;
}
