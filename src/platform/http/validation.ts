// Owns request validation: ajv compiles each route's schemas (body without type coercion, query,
// params and headers with it), reports every error at once, and the errors become FieldErrors
// with dotted paths.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import { NOT_A_DATE_TIME, OFFSET_DATE_TIME_FORMAT, parseOffsetDateTime } from './date-time.ts';
import { type AppError, type FieldError, invalidParameters } from './errors.ts';
import { compiledOnFirstUse } from './lazy-compile.ts';
import { PATTERN_MESSAGES } from './patterns.ts';

// ajv-formats is published as CommonJS with a default export.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

function makeAjv(coerceTypes: boolean | 'array'): Ajv {
  const ajv = new Ajv({
    allErrors: true,
    coerceTypes,
    useDefaults: true,
    removeAdditional: false,
    strict: false,
    messages: true,
  });
  addFormats(ajv);
  ajv.addFormat(OFFSET_DATE_TIME_FORMAT, (value: string) => parseOffsetDateTime(value) !== undefined);
  return ajv;
}

const bodyAjv = makeAjv(false);
const otherAjv = makeAjv('array');

const UNSTORABLE_MESSAGE = 'must not contain a NUL character or an unpaired surrogate';
/**
 * The text check below as a JSON Schema pattern (ECMA-262 with the `u` flag, where a surrogate in a
 * class matches only an unpaired one), for the OpenAPI document to state it.
 */
export const STORABLE_TEXT_PATTERN = '^[^\\u0000\\uD800-\\uDFFF]*$';
const MAX_SCAN_DEPTH = 64;

/**
 * Strings no text column can hold and no canonical form can write: U+0000 (PostgreSQL text refuses
 * it) and unpaired UTF-16 surrogates (JSON escapes like `\ud800` are no Unicode character). One
 * error per place, keys included, in ajv's shape so they become FieldErrors like any other.
 */
function unstorableText(value: unknown, instancePath: string, out: ErrorObject[], depth: number): void {
  const refuse = (at: string) =>
    out.push({ instancePath: at, schemaPath: '#', keyword: 'text', params: {}, message: UNSTORABLE_MESSAGE });
  if (typeof value === 'string') {
    if (value.includes('\u0000') || !value.isWellFormed()) refuse(instancePath);
    return;
  }
  if (typeof value !== 'object' || value === null || depth > MAX_SCAN_DEPTH) return;
  if (Array.isArray(value)) {
    value.forEach((item, i) => {
      unstorableText(item, `${instancePath}/${i}`, out, depth + 1);
    });
    return;
  }
  for (const [key, item] of Object.entries(value)) {
    const at = `${instancePath}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`;
    if (key.includes('\u0000') || !key.isWellFormed()) refuse(at);
    else unstorableText(item, at, out, depth + 1);
  }
}

/** The schema's validation, then the text check: every part of every request gets both. */
function withTextCheck(compile: () => ValidateFunction): ValidateFunction {
  const validator = compiledOnFirstUse(compile);
  const checked = ((data: unknown) => {
    const validate = validator();
    const valid = validate(data);
    const errors = valid ? [] : [...(validate.errors ?? [])];
    unstorableText(data, '', errors, 0);
    checked.errors = errors.length > 0 ? errors : null;
    return errors.length === 0;
  }) as ValidateFunction;
  return checked;
}

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  const ajv = httpPart === 'body' ? bodyAjv : otherAjv;
  return withTextCheck(() => ajv.compile(schema as object) as ValidateFunction);
};

/**
 * A body schema's validation for use outside routes (for example to validate a merged patch),
 * compiled on first use like the routes' own.
 */
export function compileBodyValidator(schema: object): () => ValidateFunction {
  return compiledOnFirstUse(() => bodyAjv.compile(schema));
}

/**
 * The refusal of a JSON `null` sent where an operation requires a body: 400 naming `body`, like a body
 * that is not JSON. (An operation whose body is optional takes `null` as no body.)
 */
export function nullBodyRefused(): AppError {
  return invalidParameters([
    { field: 'body', code: 'required', message: 'body is required: send a JSON object, not null' },
  ]);
}

function pathOf(instancePath: string): string[] {
  if (instancePath === '') return [];
  return instancePath
    .slice(1)
    .split('/')
    .map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'));
}

/** Past this many values an enum's refusal points at the document instead of listing them all. */
const LISTED_VALUES = 300;

function describe(error: ErrorObject): string {
  switch (error.keyword) {
    case 'pattern':
      return (
        PATTERN_MESSAGES.get((error.params as { pattern: string }).pattern) ?? error.message ?? 'is invalid'
      );
    case 'type':
      return `must be ${String((error.params as { type: string | string[] }).type).replace(',', ' or ')}`;
    case 'format':
      if ((error.params as { format: string }).format === OFFSET_DATE_TIME_FORMAT) return NOT_A_DATE_TIME;
      return (error.params as { format: string }).format === 'date'
        ? 'must be a real calendar date, YYYY-MM-DD'
        : `must be a valid ${(error.params as { format: string }).format}`;
    case 'additionalProperties':
      return 'is not a known field';
    case 'enum':
      if (((error.params as { allowedValues: unknown[] }).allowedValues ?? []).length > LISTED_VALUES)
        return 'must be one of the values the OpenAPI document lists';
      return `must be one of ${((error.params as { allowedValues: unknown[] }).allowedValues ?? []).filter((v) => v !== null).join(', ')}`;
    default:
      return error.message ?? 'is invalid';
  }
}

/**
 * Turns ajv errors into one FieldError per field. `prefix` is used for the root of non-body parts;
 * header names are reported as sent (`Idempotency-Key`).
 */
export function toFieldErrors(
  errors: ErrorObject[],
  part: 'body' | 'querystring' | 'params' | 'headers',
): FieldError[] {
  const byField = new Map<string, FieldError>();
  const unionPaths = new Set(
    errors.filter((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf').map((e) => e.instancePath),
  );
  for (const error of errors) {
    let segments = pathOf(error.instancePath);
    let code: FieldError['code'] = 'invalid';
    let message = describe(error);
    if (error.keyword === 'required') {
      segments = [...segments, (error.params as { missingProperty: string }).missingProperty];
      code = 'required';
      message = 'is required';
    } else if (error.keyword === 'additionalProperties') {
      segments = [...segments, (error.params as { additionalProperty: string }).additionalProperty];
    } else if (unionPaths.has(error.instancePath) && error.keyword !== 'anyOf' && error.keyword !== 'oneOf') {
      // A branch of a union failed; the union's own error speaks for the field.
      continue;
    } else if (error.keyword === 'anyOf' || error.keyword === 'oneOf') {
      message = 'does not match any allowed shape';
    }
    // A query parameter is named as sent: `type`, not `type.0` for the first of its repeated values.
    let field = part === 'querystring' ? (segments[0] ?? '') : segments.join('.');
    if (part === 'headers') field = headerName(field);
    if (field === '') field = part === 'body' ? 'body' : part;
    const existing = byField.get(field);
    if (!existing || (existing.code !== 'required' && code === 'required')) {
      byField.set(field, { field, code, message: `${field} ${message}` });
    }
  }
  return [...byField.values()];
}

function headerName(lower: string): string {
  return lower
    .split('-')
    .map((p) => (p.length > 0 ? p[0]!.toUpperCase() + p.slice(1) : p))
    .join('-');
}
