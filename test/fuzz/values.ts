// Value generators for contract fuzzing: hostile strings, wrong types and numbers beyond 2^53, and
// valid values for a JSON Schema helped by hints (known-good values for a field of that name).
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import fc from 'fast-check';
import { OFFSET_DATE_TIME_FORMAT, parseOffsetDateTime } from '../../src/platform/http/date-time.ts';
import { STORABLE_TEXT_PATTERN } from '../../src/platform/http/validation.ts';
import { isObject, type Schema } from './operations.ts';

// ajv-formats is published as CommonJS with a default export.
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

export const BIG_NUMBER_SENTINEL = '\u0000fuzz-big-number\u0000';
export const BIG_NUMBERS = [
  '9007199254740993',
  '-9007199254740993',
  '123456789012345678901234567890',
  '1e309',
  '-1e400',
  '1e-400',
  '0.1234567890123456789',
  '18446744073709551616',
];

const HOSTILE_STRINGS = [
  "' OR '1'='1",
  "'; DROP TABLE patients; --",
  "1' UNION SELECT id, key_hash FROM api_keys --",
  "\\'; SELECT pg_sleep(5); --",
  '$1',
  '%s%s%n',
  '\u0000',
  'a\u0000b',
  '\u0001\u0002\u001b[31m\u001f\u007f',
  '\r\nX-Injected: 1',
  '\uFEFF\u200B\u202E',
  '\uD800',
  '\uDFFF\uD800',
  '../../../etc/passwd',
  '..%2F..%2F',
  '<script>alert(1)</script>',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a template-injection probe, meant literally
  '${7*7}{{7*7}}',
  'null',
  'NaN',
  '-0',
  ' ',
  '',
  '𝄞'.repeat(300),
  'é'.repeat(3000),
  '\u{10FFFF}'.repeat(200),
];

/** Printable ASCII only: what fetch lets through as a header value. */
export const HOSTILE_HEADERS = [
  "' OR '1'='1",
  'prt_',
  '../x',
  '%00',
  'x'.repeat(101),
  '   ',
  `prt_${'A'.repeat(22)}`,
];

const longUnicode = fc.string({ unit: 'binary', minLength: 200, maxLength: 3000 });
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
  { weight: 1, arbitrary: longUnicode },
  { weight: 1, arbitrary: fc.string({ unit: 'binary-ascii', maxLength: 40 }) },
);

export const wrongTypeValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double(),
  fc.string({ maxLength: 10 }),
  fc.constant([]),
  fc.constant({}),
  fc.array(fc.integer(), { minLength: 1, maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 3 }),
);

// ---------------------------------------------------------------------------------------------
// Valid values from a JSON Schema, helped by hints: known-good values for a field of that name.

export type Hints = Record<string, readonly unknown[]>;

export function isoDate(d: Date): string {
  return d.toISOString().slice(0, 10);
}

const someDate = fc.date({
  min: new Date('1990-01-01T00:00:00Z'),
  max: new Date('2030-12-31T00:00:00Z'),
  noInvalidDate: true,
});
const recentDate = fc
  .integer({ min: -400, max: 10 })
  .map((days) => new Date(Date.now() + days * 86_400_000 - 3_600_000));

function stringArb(schema: Schema): fc.Arbitrary<string> {
  const minLength = typeof schema.minLength === 'number' ? schema.minLength : 0;
  const maxLength = typeof schema.maxLength === 'number' ? schema.maxLength : 60;
  const pattern = typeof schema.pattern === 'string' ? schema.pattern : undefined;
  if (schema.format === 'date') return fc.oneof(someDate, recentDate).map(isoDate);
  if (schema.format === 'date-time' || schema.format === OFFSET_DATE_TIME_FORMAT)
    return fc.oneof(recentDate, someDate).map((d) => d.toISOString());
  if (schema.format === 'uri')
    return fc.oneof(
      fc.webUrl(),
      fc.string({ minLength: 1, maxLength: 20 }).map((s) => `urn:fuzz:${encodeURIComponent(s)}`),
    );
  if (schema.format === 'email') return fc.emailAddress();
  // The text check every free-text field states says what not to send; it shapes no value.
  if (pattern && pattern !== STORABLE_TEXT_PATTERN)
    return fc.stringMatching(new RegExp(pattern)).filter((s) => s.length <= maxLength);
  return fc.string({ minLength, maxLength: Math.min(maxLength, Math.max(minLength, 40)) });
}

function numberArb(schema: Schema, integer: boolean): fc.Arbitrary<number> {
  const exclusiveMin = typeof schema.exclusiveMinimum === 'number' ? schema.exclusiveMinimum : undefined;
  const min =
    typeof schema.minimum === 'number'
      ? schema.minimum
      : exclusiveMin !== undefined
        ? exclusiveMin + (integer ? 1 : 0.0001)
        : -1_000_000;
  const max = typeof schema.maximum === 'number' ? schema.maximum : 1_000_000;
  if (integer) return fc.oneof(fc.integer({ min, max: Math.min(max, min + 1000) }), fc.integer({ min, max }));
  return fc.integer({ min: Math.ceil(min * 10_000), max: Math.floor(max * 10_000) }).map((n) => n / 10_000);
}

const hintAjv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true });
addFormats(hintAjv);
hintAjv.addFormat(OFFSET_DATE_TIME_FORMAT, (v: string) => parseOffsetDateTime(v) !== undefined);

export function schemaArb(schema: Schema, name: string, hints: Hints, depth: number): fc.Arbitrary<unknown> {
  // A hint is used only where the field's schema accepts it (`system` of a contact is an enum).
  const hinted = (hints[name] ?? []).filter((v) => hintAjv.validate(schema, v));
  const plain = plainSchemaArb(schema, hints, depth);
  if (hinted.length > 0) {
    return fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...hinted) }, { weight: 1, arbitrary: plain });
  }
  return plain;
}

function plainSchemaArb(schema: Schema, hints: Hints, depth: number): fc.Arbitrary<unknown> {
  if ('const' in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum) && schema.enum.length > 0)
    return fc.constantFrom(...(schema.enum as unknown[]));
  for (const key of ['anyOf', 'oneOf'] as const) {
    const options = schema[key];
    if (Array.isArray(options) && options.length > 0)
      return fc.oneof(...options.filter(isObject).map((s) => plainSchemaArb(s, hints, depth)));
  }
  const type = schema.type;
  if (Array.isArray(type)) {
    const nonNull = type.filter((t) => t !== 'null');
    const arbs = nonNull.map((t) => plainSchemaArb({ ...schema, type: t }, hints, depth));
    if (type.includes('null'))
      return fc.oneof(
        { weight: 1, arbitrary: fc.constant(null) },
        { weight: 4, arbitrary: fc.oneof(...arbs) },
      );
    return fc.oneof(...arbs);
  }
  switch (type) {
    case 'string':
      return stringArb(schema);
    case 'integer':
      return numberArb(schema, true);
    case 'number':
      return numberArb(schema, false);
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      const items = isObject(schema.items) ? schema.items : {};
      const minLength = typeof schema.minItems === 'number' ? schema.minItems : 0;
      const maxItems = typeof schema.maxItems === 'number' ? schema.maxItems : 4;
      const maxLength = Math.max(minLength, Math.min(maxItems, depth > 2 ? minLength : 3));
      const item = plainSchemaArb(items, hints, depth + 1);
      return schema.uniqueItems
        ? fc.uniqueArray(item, { minLength, maxLength, selector: (v) => JSON.stringify(v) })
        : fc.array(item, { minLength, maxLength });
    }
    case 'object': {
      const properties = isObject(schema.properties) ? schema.properties : {};
      const required = Array.isArray(schema.required) ? (schema.required as string[]) : [];
      const model: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [key, sub] of Object.entries(properties)) {
        if (isObject(sub) && (depth < 4 || required.includes(key)))
          model[key] = schemaArb(sub, key, hints, depth + 1);
      }
      return fc.record(model, { requiredKeys: required.filter((k) => k in model) });
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}
