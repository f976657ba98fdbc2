// Contract fuzzing: a seeded fast-check generator builds requests for every operation of the
// service's own OpenAPI document (public /api/v1 and operator /admin/v1), valid ones and mutated
// ones (missing required fields, wrong types, oversize strings and arrays, unknown fields, hostile
// strings, numbers beyond 2^53, ids that are real, another practice's, made up or of the wrong
// kind), sends them over real HTTP and checks every answer against the document: never a 5xx,
// only a documented status, a body valid for that status, and every error a Problem with a known
// code. Replay a failure with FUZZ_SEED=<printed seed>; FUZZ_RUNS sets the number of requests.
//
// Each database gets the full count (10,000 by default): PGlite is fast enough for that in CI.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import fc from 'fast-check';
import { ERROR_CODES } from '../src/platform/http/errors.ts';
import { STORABLE_TEXT_PATTERN } from '../src/platform/http/validation.ts';
import { billedInvoice, newPatient, newVisit } from './billing-fixtures.ts';
import { addClient } from './contract-suites.ts';
import {
  apiClient,
  describeEachBackend,
  startService,
  type TestPractice,
  type TestService,
  uniqueKey,
} from './harness.ts';
import { dereference } from './openapi-refs.ts';

// ajv-formats is published as CommonJS with a default export.
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

const SEED = process.env.FUZZ_SEED
  ? Number(process.env.FUZZ_SEED)
  : Date.now() ^ (Math.random() * 0x7fffffff);
const REQUESTS = process.env.FUZZ_RUNS ? Number(process.env.FUZZ_RUNS) : 10_000;
/** Requests of one fast-check run, sent concurrently. */
const BATCH = 8;
const RUNS = Math.ceil(REQUESTS / BATCH);

type Schema = { [key: string]: unknown };

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  schema?: Schema;
}

interface Operation {
  method: string;
  path: string;
  operationId: string;
  admin: boolean;
  creates: boolean;
  parameters: Parameter[];
  body: Schema | undefined;
  bodyRequired: boolean;
  responses: Record<string, { content?: Record<string, { schema?: Schema }> }>;
}

interface OpenApiDocument {
  paths: Record<string, Record<string, unknown>>;
}

function isObject(value: unknown): value is Schema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function operationsOf(document: OpenApiDocument): Operation[] {
  const ops: Operation[] = [];
  for (const [path, methods] of Object.entries(document.paths)) {
    if (!path.startsWith('/api/v1/') && !path.startsWith('/admin/v1/')) continue;
    for (const [method, raw] of Object.entries(methods)) {
      if (!isObject(raw) || !isObject(raw.responses)) continue;
      const parameters = (Array.isArray(raw.parameters) ? raw.parameters : []) as Parameter[];
      const requestBody = isObject(raw.requestBody) ? raw.requestBody : undefined;
      const content = requestBody && isObject(requestBody.content) ? requestBody.content : undefined;
      const json = content && isObject(content['application/json']) ? content['application/json'] : undefined;
      ops.push({
        method: method.toUpperCase(),
        path,
        operationId: String(raw.operationId),
        admin: path.startsWith('/admin/v1/'),
        creates: parameters.some((p) => p.in === 'header' && p.name === 'idempotency-key' && p.required),
        parameters,
        body: json && isObject(json.schema) ? json.schema : undefined,
        bodyRequired: requestBody?.required === true,
        responses: raw.responses as Operation['responses'],
      });
    }
  }
  return ops;
}

// ---------------------------------------------------------------------------------------------
// Values: hostile strings, wrong types, big numbers.

const BIG_NUMBER_SENTINEL = '\u0000fuzz-big-number\u0000';
const BIG_NUMBERS = [
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
const HOSTILE_HEADERS = [
  "' OR '1'='1",
  'prt_',
  '../x',
  '%00',
  'x'.repeat(101),
  '   ',
  `prt_${'A'.repeat(22)}`,
];

const longUnicode = fc.string({ unit: 'binary', minLength: 200, maxLength: 3000 });
const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
  { weight: 1, arbitrary: longUnicode },
  { weight: 1, arbitrary: fc.string({ unit: 'binary-ascii', maxLength: 40 }) },
);

const wrongTypeValue: fc.Arbitrary<unknown> = fc.oneof(
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

type Hints = Record<string, readonly unknown[]>;

function isoDate(d: Date): string {
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
  if (schema.format === 'date-time' || pattern?.includes('T\\d{2}:'))
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

function schemaArb(schema: Schema, name: string, hints: Hints, depth: number): fc.Arbitrary<unknown> {
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

// ---------------------------------------------------------------------------------------------
// Mutations of a body: applied at one path of the valid value.

type Path = (string | number)[];

function pathsOf(value: unknown, prefix: Path = [], out: Path[] = []): Path[] {
  if (prefix.length > 0) out.push(prefix);
  if (prefix.length >= 4) return out;
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) pathsOf(v, [...prefix, i], out);
  } else if (isObject(value)) {
    for (const [k, v] of Object.entries(value)) pathsOf(v, [...prefix, k], out);
  }
  return out;
}

function clone<T>(value: T): T {
  return structuredClone(value);
}

function setAt(
  root: unknown,
  path: Path,
  fn: (current: unknown, parent: Schema | unknown[], key: string | number) => void,
): unknown {
  const copy = clone(root);
  let parent: unknown = copy;
  for (let i = 0; i < path.length - 1; i++) parent = (parent as Record<string | number, unknown>)[path[i]!];
  const key = path[path.length - 1]!;
  if (Array.isArray(parent) || isObject(parent))
    fn((parent as Record<string | number, unknown>)[key], parent, key);
  return copy;
}

type BodyMutation =
  | { kind: 'valid' }
  | { kind: 'drop'; at: number }
  | { kind: 'wrong-type'; at: number; value: unknown }
  | { kind: 'hostile'; at: number; value: string }
  | { kind: 'oversize-string'; at: number; value: string }
  | { kind: 'oversize-array'; at: number; times: number }
  | { kind: 'unknown-field'; at: number; name: string; value: unknown }
  | { kind: 'big-number'; at: number; literal: string }
  | { kind: 'body-type'; value: unknown }
  | { kind: 'raw'; text: string; contentType?: string };

const bodyMutation: fc.Arbitrary<BodyMutation> = fc.oneof(
  { weight: 6, arbitrary: fc.constant({ kind: 'valid' as const }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('drop' as const), at: fc.nat() }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('wrong-type' as const), at: fc.nat(), value: wrongTypeValue }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('hostile' as const), at: fc.nat(), value: hostileString }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('oversize-string' as const),
      at: fc.nat(),
      value: fc.constantFrom('x'.repeat(2001), 'ß'.repeat(10_001), '😀'.repeat(600), 'a'.repeat(65)),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('oversize-array' as const),
      at: fc.nat(),
      times: fc.constantFrom(13, 21, 101),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('unknown-field' as const),
      at: fc.nat(),
      name: fc.constantFrom(
        '__proto__',
        'constructor',
        'practiceId',
        'organizationId',
        'id',
        'zz_unknown',
        'status',
      ),
      value: wrongTypeValue,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('big-number' as const),
      at: fc.nat(),
      literal: fc.constantFrom(...BIG_NUMBERS),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('body-type' as const),
      value: fc.constantFrom<unknown>([], 'text', 42, null, true, [{}]),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.oneof(
      fc.record({
        kind: fc.constant('raw' as const),
        text: fc.constantFrom('{', '{"a":', "{'a':1}", '\u0000', 'nul', '[1,]', '{"a":1}{"b":2}'),
      }),
      fc.record({
        kind: fc.constant('raw' as const),
        text: fc.constantFrom('{}', 'a=b'),
        contentType: fc.constantFrom(
          'text/plain',
          'application/x-www-form-urlencoded',
          'application/xml',
          'multipart/form-data; boundary=x',
        ),
      }),
      fc.record({
        kind: fc.constant('raw' as const),
        text: fc.constant(`{"x":"${'y'.repeat(300 * 1024)}"}`),
      }),
    ),
  },
);

function pick<T>(list: readonly T[], at: number): T | undefined {
  return list.length === 0 ? undefined : list[at % list.length];
}

/** The body text and content type for a valid body and a mutation. */
function applyBodyMutation(
  valid: unknown,
  m: BodyMutation,
): { text: string; contentType: string; label: string } {
  const json = (value: unknown) =>
    JSON.stringify(value).replaceAll(JSON.stringify(BIG_NUMBER_SENTINEL), () => bigLiteral);
  let bigLiteral = '0';
  const paths = pathsOf(valid);
  const label = m.kind;
  const ct = 'application/json';
  switch (m.kind) {
    case 'valid':
      return { text: json(valid), contentType: ct, label };
    case 'body-type':
      return { text: json(m.value), contentType: ct, label };
    case 'raw':
      return { text: m.text, contentType: m.contentType ?? ct, label };
    case 'unknown-field': {
      const objects = [[] as Path, ...paths.filter((p) => isObject(getAt(valid, p)))];
      const at = pick(objects, m.at)!;
      const copy = clone(valid);
      const target = at.length === 0 ? copy : getAt(copy, at);
      if (isObject(target))
        Object.defineProperty(target, m.name, {
          value: m.value,
          enumerable: true,
          configurable: true,
          writable: true,
        });
      return { text: json(copy), contentType: ct, label: `${label}:${m.name}@${at.join('.')}` };
    }
    default: {
      const at = pick(paths, m.at);
      if (!at) return { text: json(valid), contentType: ct, label: `${label}:none` };
      const where = `${label}@${at.join('.')}`;
      switch (m.kind) {
        case 'drop':
          return {
            text: json(
              setAt(valid, at, (_c, parent, key) => {
                if (Array.isArray(parent)) parent.splice(Number(key), 1);
                else delete parent[key as string];
              }),
            ),
            contentType: ct,
            label: where,
          };
        case 'wrong-type':
        case 'hostile':
        case 'oversize-string':
          return {
            text: json(
              setAt(valid, at, (_c, parent, key) => {
                (parent as Record<string | number, unknown>)[key] = m.value;
              }),
            ),
            contentType: ct,
            label: where,
          };
        case 'oversize-array':
          return {
            text: json(
              setAt(valid, at, (current, parent, key) => {
                const item = Array.isArray(current) ? (current[0] ?? 'x') : current;
                (parent as Record<string | number, unknown>)[key] = Array.from(
                  { length: m.times },
                  () => item,
                );
              }),
            ),
            contentType: ct,
            label: where,
          };
        case 'big-number':
          bigLiteral = m.literal;
          return {
            text: json(
              setAt(valid, at, (_c, parent, key) => {
                (parent as Record<string | number, unknown>)[key] = BIG_NUMBER_SENTINEL;
              }),
            ),
            contentType: ct,
            label: `${where}=${m.literal}`,
          };
      }
    }
  }
}

function getAt(root: unknown, path: Path): unknown {
  let value: unknown = root;
  for (const key of path) value = (value as Record<string | number, unknown> | undefined)?.[key];
  return value;
}

// ---------------------------------------------------------------------------------------------
// Ids: for each path parameter, the real ones of the caller, another practice's, made-up ones of
// the same shape, ids of another kind, and strings that are no id at all.

interface IdPools {
  /** Real ids by parameter name, in the caller's practice (or, for the operator API, its sandbox). */
  own: Record<string, string[]>;
  /** Real ids of another practice, by parameter name. */
  foreign: Record<string, string[]>;
  /** Ids that belong together (an invoice and one of its lines), by their parameter names joined. */
  together: Record<string, string[][]>;
}

function prefixOf(ids: readonly string[] | undefined): string {
  const first = ids?.[0];
  const cut = first ? first.indexOf('_') : -1;
  return first && cut > 0 ? first.slice(0, cut) : 'x';
}

const BASE62 = [...'0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'];

function idArb(name: string, pools: IdPools, allOwn: string[]): fc.Arbitrary<{ id: string; kind: string }> {
  const own = pools.own[name] ?? [];
  const foreign = pools.foreign[name] ?? [];
  const prefix = prefixOf(own);
  const tagged = (kind: string) => (id: string) => ({ id, kind });
  const options: fc.WeightedArbitrary<{ id: string; kind: string }>[] = [
    {
      weight: 2,
      arbitrary: fc
        .string({ unit: fc.constantFrom(...BASE62), minLength: 22, maxLength: 22 })
        .map((s) => ({ id: `${prefix}_${s}`, kind: 'random' })),
    },
    {
      weight: 1,
      arbitrary: hostileString.filter((s) => s.length > 0 && !/^\.{1,2}$/.test(s)).map(tagged('hostile')),
    },
    { weight: 1, arbitrary: fc.constantFrom(...allOwn).map(tagged('wrong-kind')) },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(`${prefix}_`, prefix, `${prefix}_${'A'.repeat(300)}`, '9007199254740993', '-1', '0')
        .map(tagged('malformed')),
    },
  ];
  if (own.length > 0) options.push({ weight: 6, arbitrary: fc.constantFrom(...own).map(tagged('own')) });
  if (foreign.length > 0)
    options.push({ weight: 2, arbitrary: fc.constantFrom(...foreign).map(tagged('foreign')) });
  return fc.oneof(...options);
}

/**
 * Path and query values are cut to 1,000 UTF-16 units: a longer one makes a request line beyond
 * Node's 16 KB header limit, which the HTTP parser refuses (431) before the service sees it.
 */
function urlValue(value: string): string {
  return value.slice(0, 1000).toWellFormed();
}

function encodePathSegment(value: string): string {
  return encodeURIComponent(urlValue(value));
}

// ---------------------------------------------------------------------------------------------
// Requests.

interface FuzzRequest {
  operation: Operation;
  url: string;
  headers: Record<string, string>;
  body: string | undefined;
  label: string;
}

type QueryMutation =
  | { kind: 'valid' }
  | { kind: 'drop'; at: number }
  | { kind: 'bad'; at: number; value: string }
  | { kind: 'unknown'; name: string; value: string }
  | { kind: 'repeat'; at: number };

const queryMutation: fc.Arbitrary<QueryMutation> = fc.oneof(
  { weight: 5, arbitrary: fc.constant({ kind: 'valid' as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('drop' as const), at: fc.nat() }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('bad' as const),
      at: fc.nat(),
      value: fc.oneof(
        hostileString,
        fc.constantFrom('abc', '-1', '0', '1.5', '1e3', ...BIG_NUMBERS, 'true', '[]', '{}', 'x'.repeat(2001)),
      ),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('unknown' as const),
      name: fc.constantFrom('zz', 'practiceId', 'limit[]', '__proto__'),
      value: fc.string({ maxLength: 8 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('repeat' as const), at: fc.nat() }) },
);

type HeaderMutation =
  | { kind: 'none' }
  | { kind: 'performer'; value: string }
  | { kind: 'no-idempotency-key' }
  | { kind: 'bad-idempotency-key'; value: string };

function requestArb(
  operation: Operation,
  pools: IdPools,
  hints: Hints,
  allOwn: string[],
): fc.Arbitrary<FuzzRequest> {
  const pathParams = operation.parameters.filter((p) => p.in === 'path');
  const queryParams = operation.parameters.filter((p) => p.in === 'query');
  const independent = fc.tuple(...pathParams.map((p) => idArb(p.name, pools, allOwn)));
  const together = pools.together[pathParams.map((p) => p.name).join(',')] ?? [];
  const ids =
    together.length > 0
      ? fc.oneof(
          { weight: 2, arbitrary: independent },
          {
            weight: 3,
            arbitrary: fc.constantFrom(...together).map((t) => t.map((id) => ({ id, kind: 'own-pair' }))),
          },
        )
      : independent;
  const query = fc.record(
    Object.fromEntries(
      queryParams.map((p) => [p.name, schemaArb(p.schema ?? { type: 'string' }, p.name, hints, 1)]),
    ),
    { requiredKeys: queryParams.filter((p) => p.required).map((p) => p.name) },
  );
  const body = operation.body ? schemaArb(operation.body, '', hints, 0) : fc.constant(undefined);
  const performers = [...(pools.own.practitionerId ?? []), ...(pools.foreign.practitionerId ?? [])];
  const header: fc.Arbitrary<HeaderMutation> = fc.oneof(
    { weight: 12, arbitrary: fc.constant({ kind: 'none' as const }) },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(...HOSTILE_HEADERS, ...performers)
        .map((value) => ({ kind: 'performer' as const, value })),
    },
    { weight: operation.creates ? 1 : 0, arbitrary: fc.constant({ kind: 'no-idempotency-key' as const }) },
    {
      weight: operation.creates ? 1 : 0,
      arbitrary: fc
        .constantFrom('k'.repeat(256), ' ', "' OR 1=1 --")
        .map((value) => ({ kind: 'bad-idempotency-key' as const, value })),
    },
  );
  return fc
    .record({ ids, query, queryMutation, body, bodyMutation, header, sendBody: fc.boolean() })
    .map(({ ids, query, queryMutation, body, bodyMutation, header, sendBody }) => {
      const labels: string[] = [];
      let path = operation.path;
      pathParams.forEach((p, i) => {
        const id = ids[i]!;
        path = path.replace(`{${p.name}}`, encodePathSegment(id.id));
        labels.push(`${p.name}:${id.kind}`);
      });
      const entries: [string, string][] = Object.entries(query).map(([k, v]) => [k, String(v)]);
      const m = queryMutation;
      if (m.kind === 'drop' && entries.length > 0) entries.splice(m.at % entries.length, 1);
      if (m.kind === 'bad') {
        const name = pick(queryParams, m.at)?.name;
        if (name) {
          const found = entries.findIndex(([k]) => k === name);
          if (found >= 0) entries[found] = [name, m.value];
          else entries.push([name, m.value]);
        }
      }
      if (m.kind === 'unknown') entries.push([m.name, m.value]);
      if (m.kind === 'repeat' && entries.length > 0) entries.push(entries[m.at % entries.length]!);
      if (m.kind !== 'valid' && queryParams.length > 0) labels.push(`query-${m.kind}`);
      const search = new URLSearchParams(entries.map(([k, v]) => [k, urlValue(v)])).toString();
      const headers: Record<string, string> = {};
      if (operation.creates && header.kind !== 'no-idempotency-key')
        headers['idempotency-key'] = header.kind === 'bad-idempotency-key' ? header.value : uniqueKey();
      if (header.kind === 'performer') headers['x-service-performer'] = header.value;
      if (header.kind !== 'none') labels.push(`header-${header.kind}`);
      let text: string | undefined;
      if (operation.body && (operation.bodyRequired || sendBody)) {
        const applied = applyBodyMutation(body, bodyMutation);
        text = applied.text;
        headers['content-type'] = applied.contentType;
        labels.push(`body-${applied.label}`);
      }
      const url = `${path}${search ? `?${search}` : ''}`;
      const label = labels.join(' ');
      return {
        operation,
        url,
        headers,
        body: text,
        label,
        // fast-check prints a counterexample with this: the request, not the whole operation.
        [fc.toStringMethod]: () =>
          `${operation.method} ${url.slice(0, 300)} [${label}] ${JSON.stringify(headers)} ${(text ?? '').slice(0, 300)}`,
      };
    });
}

// ---------------------------------------------------------------------------------------------
// Checking answers against the document.

const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true });
addFormats(ajv);
const validators = new Map<object, ValidateFunction>();

function responseFor(operation: Operation, status: number) {
  return (
    operation.responses[String(status)] ??
    operation.responses[`${String(status)[0]}XX`] ??
    operation.responses.default
  );
}

interface Violation {
  request: string;
  status: number;
  problem: string;
  body: string;
}

function check(
  request: FuzzRequest,
  status: number,
  contentType: string | null,
  text: string,
): string | undefined {
  if (status >= 500) return 'a 5xx answer';
  const documented = responseFor(request.operation, status);
  if (!documented)
    return `status ${status} is not documented (documented: ${Object.keys(request.operation.responses).join(', ')})`;
  const schema = documented.content?.['application/json']?.schema;
  if (!schema) return undefined;
  if (!contentType?.startsWith('application/json')) return `content type ${contentType}`;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return 'the body is not JSON';
  }
  let validate = validators.get(schema);
  if (!validate) {
    validate = ajv.compile(schema);
    validators.set(schema, validate);
  }
  if (!validate(body))
    return `the body does not match the schema for ${status}: ${ajv.errorsText(validate.errors)}`;
  if (status >= 400) {
    const code = isObject(body) ? body.code : undefined;
    if (typeof code !== 'string' || !Object.hasOwn(ERROR_CODES, code))
      return `unknown error code ${String(code)}`;
    const known = ERROR_CODES[code as keyof typeof ERROR_CODES];
    if (known.status !== status) return `code ${code} belongs to ${known.status}, answered ${status}`;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// The records requests act on.

interface World {
  pools: IdPools;
  hints: Hints;
  allOwn: string[];
  key: string;
}

async function practiceRecords(svc: TestService, practice: TestPractice) {
  const api = apiClient(svc, practice.key);
  const p = { ...practice, api };
  const patients = [await newPatient(api), await newPatient(api)];
  const plans = await api('GET', '/insurance-plans?limit=5');
  assert.equal(plans.status, 200, plans.text);
  const planIds = (plans.body.data as { id: string }[]).map((plan) => plan.id);
  const coverage = await api('POST', `/patients/${patients[0]}/coverages`, {
    body: { planId: planIds[0], memberNumber: `M${randomBytes(4).toString('hex')}` },
    idempotencyKey: uniqueKey(),
  });
  assert.equal(coverage.status, 201, coverage.text);
  const visits = [
    (await newVisit(svc, api, practice.practitionerId, patients[0]!)).id as string,
    (await newVisit(svc, api, practice.practitionerId, patients[1]!)).id as string,
  ];
  const draft = await billedInvoice(svc, p, { patientId: patients[1]! });
  const issued = await billedInvoice(svc, p, { patientId: patients[0]!, issue: true });
  const claimed = await billedInvoice(svc, p, { patientId: patients[0]!, issue: true });
  const claim = await api('POST', `/invoices/${claimed.id}/claim`, { body: {} });
  assert.equal(claim.status, 202, claim.text);
  const system = await api('POST', '/code-systems', {
    body: { name: `Fuzz ${randomBytes(3).toString('hex')}`, usage: ['procedure'] },
    idempotencyKey: uniqueKey(),
  });
  assert.equal(system.status, 201, system.text);
  const concepts: string[] = [];
  for (const code of ['F1', 'F2', 'F3']) {
    const concept = await api('POST', `/code-systems/${system.body.id}/concepts`, {
      body: { code, display: `Fuzz concept ${code}`, defaultPrice: 1000 },
      idempotencyKey: uniqueKey(),
    });
    assert.equal(concept.status, 201, concept.text);
    concepts.push(concept.body.id);
  }
  const published = await api('GET', '/code-systems?limit=5');
  assert.equal(published.status, 200, published.text);
  const patient = await api('GET', `/patients/${patients[0]}`);
  const invoices = [draft, issued, claimed] as { id: string; lineItems: { id: string }[] }[];
  return {
    ids: {
      patientId: patients,
      practitionerId: [practice.practitionerId],
      encounterId: [...visits, ...draft.encounterIds, ...issued.encounterIds],
      invoiceId: invoices.map((i) => i.id),
      lineItemId: invoices.flatMap((i) => i.lineItems.map((l) => l.id)),
      codeSystemId: [system.body.id as string, ...(published.body.data as { id: string }[]).map((c) => c.id)],
      conceptId: concepts,
      coverageId: [coverage.body.id as string],
      planId: planIds,
    } as Record<string, string[]>,
    together: {
      'invoiceId,lineItemId': invoices.flatMap((i) => i.lineItems.map((l) => [i.id, l.id])),
      'codeSystemId,conceptId': concepts.map((c) => [system.body.id as string, c]),
    } as Record<string, string[][]>,
    externalId: patient.body.externalId as { system: string; value: string },
  };
}

/** The operator API's records, in a sandbox practice of their own. */
async function sandboxRecords(svc: TestService) {
  const sandbox = await svc.newPractice();
  const spare = await addClient(svc, sandbox.practiceId);
  const endpoints: string[] = [];
  for (let i = 0; i < 3; i++) {
    const endpoint = await svc.admin('POST', `/practices/${sandbox.practiceId}/webhook-endpoints`, {
      url: `http://127.0.0.1:9/hook${i}`,
    });
    assert.equal(endpoint.status, 201, endpoint.text);
    endpoints.push(endpoint.body.id);
  }
  const price = await svc.admin('POST', `/practices/${sandbox.practiceId}/prices`, {
    system: 'urn:service:codesystem:tariff',
    code: '0190',
    amount: 12_345,
  });
  assert.equal(price.status, 201, price.text);
  // An issued invoice makes an event (and a delivery to the endpoint) for the event operations.
  const records = await practiceRecords(svc, sandbox);
  const deliveries = await svc.admin(
    'GET',
    `/practices/${sandbox.practiceId}/webhook-endpoints/${endpoints[0]}/deliveries`,
  );
  assert.equal(deliveries.status, 200, deliveries.text);
  const eventIds = [
    ...new Set(
      (deliveries.body.data as Record<string, unknown>[])
        .map((d) => d.eventId)
        .filter((id): id is string => typeof id === 'string'),
    ),
  ];
  return {
    practiceId: sandbox.practiceId,
    invoiceIds: records.ids.invoiceId!,
    ids: {
      practiceId: [sandbox.practiceId],
      clientId: [sandbox.clientId, spare.clientId],
      keyId: [spare.keyId],
      endpointId: endpoints,
      priceId: [price.body.id as string],
      eventId: eventIds,
    } as Record<string, string[]>,
    practitionerId: sandbox.practitionerId,
  };
}

async function buildWorld(svc: TestService): Promise<World> {
  const practice = await svc.newPractice({ rateLimitPerMinute: 10_000_000 });
  const other = await svc.newPractice();
  const mine = await practiceRecords(svc, practice);
  const theirs = await practiceRecords(svc, other);
  // The operator API acts on a sandbox practice, so that suspending, revoking or switching off the
  // add-on never touches the client the fuzzer calls the public API with.
  const sandbox = await sandboxRecords(svc);
  const own: Record<string, string[]> = { ...mine.ids, ...sandbox.ids };
  const foreign: Record<string, string[]> = {
    ...theirs.ids,
    // published code systems are everyone's: only the practice's own is foreign
    codeSystemId: theirs.ids.codeSystemId!.slice(0, 1),
  };
  const allOwn = Object.values(own).flat();
  const end = new Date(svc.clock.now().getTime() - 3_600_000);
  const hints: Hints = {
    patientId: [...own.patientId!, ...foreign.patientId!],
    practitionerId: [...own.practitionerId!, ...foreign.practitionerId!, sandbox.practitionerId],
    coverageId: [...own.coverageId!, ...foreign.coverageId!],
    planId: own.planId!,
    encounterId: own.encounterId!,
    invoiceId: [...own.invoiceId!, ...foreign.invoiceId!, ...sandbox.invoiceIds],
    code: ['0190', '0191', 'J06.9', '0145', 'F1'],
    diagnosisCodes: [['J06.9']],
    diagnoses: [[{ code: 'J06.9' }], [{ code: 'J06.9', primary: true }]],
    procedures: [[{ code: '0190', diagnosisCodes: ['J06.9'] }]],
    system: ['urn:service:codesystem:tariff', 'http://hl7.org/fhir/sid/icd-10'],
    start: [new Date(end.getTime() - 1_200_000).toISOString()],
    end: [end.toISOString()],
    birthDate: ['1990-02-28', '2001-12-31'],
    externalSystem: [mine.externalId.system],
    externalId: [mine.externalId.value],
    usage: [['procedure'], ['condition']],
    timezone: ['Africa/Johannesburg', 'UTC', 'Europe/Berlin'],
    url: ['http://127.0.0.1:9/hook', 'https://hooks.example.test/x'],
    allowedIps: [['10.0.0.0/8'], ['127.0.0.1', '::1']],
    expiresAt: ['2099-01-01T00:00:00Z'],
    serviceDate: [isoDate(end)],
    currency: ['ZAR'],
  };
  return {
    pools: {
      own,
      foreign,
      together: Object.fromEntries(
        Object.entries(mine.together).map(([k, pairs]) => [
          k,
          [...pairs, ...(theirs.together[k] ?? []).slice(0, 1)],
        ]),
      ),
    },
    hints,
    allOwn,
    key: practice.key,
  };
}

async function send(svc: TestService, world: World, request: FuzzRequest) {
  const token = request.operation.admin ? svc.adminToken : world.key;
  const response = await fetch(`${svc.baseUrl}${request.url}`, {
    method: request.operation.method,
    headers: { authorization: `Bearer ${token}`, ...request.headers },
    ...(request.body !== undefined ? { body: request.body } : {}),
  });
  return {
    status: response.status,
    contentType: response.headers.get('content-type'),
    text: await response.text(),
  };
}

describeEachBackend('contract fuzzing', (backend) => {
  let svc: TestService;
  before(async () => {
    svc = await startService(backend);
  });
  after(async () => {
    await svc.close();
  });

  test(`${REQUESTS} generated requests over every documented operation answer as documented`, {
    timeout: 600_000,
  }, async () => {
    const document = dereference(
      (await (await fetch(`${svc.baseUrl}/api/v1/openapi.json`)).json()) as OpenApiDocument,
    );
    const operations = operationsOf(document);
    assert.ok(operations.filter((o) => !o.admin).length >= 30, 'the document lists the public operations');
    assert.ok(
      operations.some((o) => o.admin),
      'and the operator ones',
    );
    const world = await buildWorld(svc);
    const request = fc.oneof(...operations.map((o) => requestArb(o, world.pools, world.hints, world.allOwn)));

    const started = performance.now();
    let sent = 0;
    const statuses = new Map<string, number>();
    const perOperation = new Map<string, number>();
    console.log(
      `contract fuzzing (${backend}): seed ${SEED} (replay with FUZZ_SEED=${SEED}), ${REQUESTS} requests`,
    );
    await fc.assert(
      fc.asyncProperty(fc.array(request, { minLength: BATCH, maxLength: BATCH }), async (batch) => {
        const answers = await Promise.all(batch.map((r) => send(svc, world, r)));
        const violations: Violation[] = [];
        answers.forEach((answer, i) => {
          const r = batch[i]!;
          sent++;
          const key = `${r.operation.operationId} ${answer.status}`;
          statuses.set(key, (statuses.get(key) ?? 0) + 1);
          perOperation.set(r.operation.operationId, (perOperation.get(r.operation.operationId) ?? 0) + 1);
          const problem = check(r, answer.status, answer.contentType, answer.text);
          if (problem) {
            violations.push({
              request: `${r.operation.method} ${r.url.slice(0, 300)} [${r.label}] body ${(r.body ?? '').slice(0, 300)}`,
              status: answer.status,
              problem,
              body: answer.text.slice(0, 500),
            });
          }
        });
        assert.deepEqual(violations, []);
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
    const seconds = (performance.now() - started) / 1000;
    console.log(
      `contract fuzzing (${backend}): ${sent} requests in ${seconds.toFixed(1)} s over ${perOperation.size} operations`,
    );
    if (process.env.FUZZ_VERBOSE)
      console.log(
        [...statuses.entries()]
          .sort()
          .map(([k, n]) => `${k}: ${n}`)
          .join('\n'),
      );
    assert.ok(sent >= REQUESTS, `sent ${sent} requests, expected at least ${REQUESTS}`);
    assert.equal(perOperation.size, operations.length, 'every operation was called');
    // Not only refusals: valid requests reach the records and succeed on every public operation.
    const succeeded = new Set(
      [...statuses.keys()].filter((k) => /\s2\d\d$/.test(k)).map((k) => k.split(' ')[0]),
    );
    const neverSucceeded = operations.filter((o) => !succeeded.has(o.operationId)).map((o) => o.operationId);
    console.log(
      `contract fuzzing (${backend}): operations never answered 2xx: ${neverSucceeded.join(', ') || 'none'}`,
    );
  });
});
