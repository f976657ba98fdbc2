// Owns the refusal wording of the patterns request schemas use: a pattern declared with
// explainedPattern is refused as "<field> <message>" instead of ajv's "must match pattern ...", so the
// pattern is written once and its explanation beside it. Also the address pieces several patterns share.

/** Pattern → what a refusal says after the field's name. */
export const PATTERN_MESSAGES = new Map<string, string>();

/** A pattern whose refusal says `message`; answers the pattern, for a schema's `pattern`. */
export function explainedPattern(pattern: string, message: string): string {
  PATTERN_MESSAGES.set(pattern, message);
  return pattern;
}

/** A simple e-mail address: one @, no spaces, a dot in the domain. */
export const EMAIL_PATTERN = explainedPattern(
  '^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$',
  'must be an e-mail address (name@example.org)',
);

const OCTET = '(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
/** An IPv4 address in dotted decimal, without leading zeros (pattern source, unanchored). */
export const IPV4 = `${OCTET}(\\.${OCTET}){3}`;
const GROUP = '[0-9A-Fa-f]{1,4}';
/** An IPv6 address: eight groups, `::` compression, an embedded IPv4 (pattern source, unanchored). */
export const IPV6 = [
  `(${GROUP}:){7}${GROUP}`,
  `(${GROUP}:){1,7}:`,
  `(${GROUP}:){1,6}:${GROUP}`,
  `(${GROUP}:){1,5}(:${GROUP}){1,2}`,
  `(${GROUP}:){1,4}(:${GROUP}){1,3}`,
  `(${GROUP}:){1,3}(:${GROUP}){1,4}`,
  `(${GROUP}:){1,2}(:${GROUP}){1,5}`,
  `${GROUP}:(:${GROUP}){1,6}`,
  `:((:${GROUP}){1,7}|:)`,
  `(${GROUP}:){6}${IPV4}`,
  `(${GROUP}:){1,5}:${IPV4}`,
  `::(${GROUP}:){0,5}${IPV4}`,
].join('|');

/** A TCP port, 1 to 65535 (pattern source). */
export const PORT = '(6553[0-5]|655[0-2]\\d|65[0-4]\\d\\d|6[0-4]\\d{3}|[1-5]\\d{4}|[1-9]\\d{0,3})';
