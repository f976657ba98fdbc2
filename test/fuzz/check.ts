// The contract check of one fuzzed answer against the OpenAPI document: never a 5xx, only a
// documented status, a body valid for that status, and every error a Problem with a known code.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { OFFSET_DATE_TIME_FORMAT, parseOffsetDateTime } from '../../src/platform/http/date-time.ts';
import { ERROR_CODES } from '../../src/platform/http/errors.ts';
import { isObject, type Operation } from './operations.ts';
import type { FuzzRequest } from './requests.ts';

// ajv-formats is published as CommonJS with a default export.
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true });
addFormats(ajv);
ajv.addFormat(OFFSET_DATE_TIME_FORMAT, (v: string) => parseOffsetDateTime(v) !== undefined);
const validators = new Map<object, ValidateFunction>();

function responseFor(operation: Operation, status: number) {
  return (
    operation.responses[String(status)] ??
    operation.responses[`${String(status)[0]}XX`] ??
    operation.responses.default
  );
}

export interface Violation {
  request: string;
  status: number;
  problem: string;
  body: string;
}

export function check(
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
