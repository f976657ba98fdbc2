// Owns the one rule for a date-time a request sends, in a body, a query or a path: ISO 8601 with a
// mandatory offset (`Z` or `+hh:mm`/`-hh:mm`), seconds and fractions optional, years 0001 to 9999,
// and a real calendar date and clock time. The schema states the shape as a pattern and names the
// rest with the `offset-date-time` format, which request validation checks with parseOffsetDateTime.
import { Type } from 'typebox';
import { explainedPattern } from './patterns.ts';

export const OFFSET_DATE_TIME_FORMAT = 'offset-date-time';

/** Years 0001-9999, months 01-12, days 01-31, hours 00-23, minutes and seconds 00-59, offset ±hh:mm. */
/** What a refusal says after the field's name. */
export const NOT_A_DATE_TIME =
  'is not a real date and time with an offset (YYYY-MM-DDThh:mm[:ss]Z or ±hh:mm)';

export const OFFSET_DATE_TIME_PATTERN = explainedPattern(
  '^(000[1-9]|00[1-9]\\d|0[1-9]\\d\\d|[1-9]\\d{3})-(0[1-9]|1[0-2])-(0[1-9]|[12]\\d|3[01])T([01]\\d|2[0-3]):[0-5]\\d(:[0-5]\\d(\\.\\d{1,9})?)?(Z|[+-]([01]\\d|2[0-3]):[0-5]\\d)$',
  NOT_A_DATE_TIME,
);
const PATTERN = new RegExp(OFFSET_DATE_TIME_PATTERN);

/** The instant a date-time names, or undefined when it breaks the rule above (a 30 February, say). */
export function parseOffsetDateTime(value: string): Date | undefined {
  if (!PATTERN.test(value)) return undefined;
  const [year, month, day] = value.slice(0, 10).split('-').map(Number) as [number, number, number];
  const daysInMonth = new Date(Date.UTC(2000, month, 0));
  daysInMonth.setUTCFullYear(year, month, 0);
  if (day > daysInMonth.getUTCDate()) return undefined;
  const parsed = new Date(value);
  return Number.isNaN(parsed.getTime()) ? undefined : parsed;
}

/** A date-time a request sends (the rule above). Answers always write UTC with seconds. */
export const OffsetDateTime = (description?: string) =>
  Type.String({
    pattern: OFFSET_DATE_TIME_PATTERN,
    format: OFFSET_DATE_TIME_FORMAT,
    description: `ISO 8601 with a mandatory offset (\`Z\` or \`+hh:mm\`/\`-hh:mm\`), seconds optional, a real date and time between years 0001 and 9999.${description ? ` ${description}` : ''}`,
  });
