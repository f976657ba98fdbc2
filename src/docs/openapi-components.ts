// Owns the shared parts of the OpenAPI document: a route schema with a `title` (PatientRequest,
// Invoice, Problem, ...) becomes one entry of `components.schemas`, referenced with `$ref` wherever
// it appears, with its examples from openapi-examples.ts; responses get real descriptions; every
// free-text string of a request states the service's text check (no NUL, no unpaired surrogate). Route
// schemas stay as they are for validation and serialisation: only the built document changes.
//
// A new route's schemas become components by giving them a `title` (PascalCase, unique): two
// different schemas under one title stop the document from being built.
import { isDeepStrictEqual } from 'node:util';
import { ERROR_CODES } from '../platform/http/errors.ts';
import { STORABLE_TEXT_PATTERN } from '../platform/http/validation.ts';
import { EXAMPLES } from './openapi-examples.ts';

type Json = Record<string, unknown>;

const COMPONENT_NAME = /^[A-Z][A-Za-z0-9]*$/;
/** Keys whose values are data, not schemas: never searched for named schemas. */
const DATA_KEYS = new Set(['example', 'examples', 'default', 'enum', 'const']);

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isNamedSchema(value: Json): value is Json & { title: string } {
  return typeof value.title === 'string' && COMPONENT_NAME.test(value.title) && 'type' in value;
}

/** Replaces every named schema below `node` with a `$ref`, collecting it once in `schemas`. */
function extract(node: unknown, schemas: Json): unknown {
  if (Array.isArray(node)) return node.map((item) => extract(item, schemas));
  if (!isObject(node)) return node;
  const copy: Json = {};
  for (const [key, value] of Object.entries(node))
    copy[key] = DATA_KEYS.has(key) ? value : extract(value, schemas);
  if (!isNamedSchema(copy)) return copy;
  const name = copy.title;
  const examples = EXAMPLES[name];
  const component = examples ? { ...copy, examples } : copy;
  const known = schemas[name];
  if (known !== undefined && !isDeepStrictEqual(known, component))
    throw new Error(`two different schemas are named ${name}: give one of them another title`);
  schemas[name] = component;
  return { $ref: `#/components/schemas/${name}` };
}

const SUCCESS: Record<string, string> = {
  '200': 'OK',
  '201': 'Created',
  '202': 'Accepted: the work goes on after the answer',
  '204': 'Done; no body',
};

function errorDescription(status: string): string {
  const codes = Object.entries(ERROR_CODES).filter(([, def]) =>
    status.endsWith('XX') ? String(def.status)[0] === status[0] : String(def.status) === status,
  );
  if (status.endsWith('XX')) {
    return `A Problem: ${codes.map(([code]) => `\`${code}\``).join(', ')}.`;
  }
  return codes.map(([code, def]) => `\`${code}\`: ${def.description}`).join('\n\n');
}

function responseDescription(status: string, response: Json): string {
  const schema = (((response.content as Json | undefined)?.['application/json'] as Json | undefined)
    ?.schema ?? {}) as Json;
  const ref = typeof schema.$ref === 'string' ? schema.$ref.split('/').pop() : undefined;
  if (status.startsWith('2')) {
    const what = SUCCESS[status] ?? 'Success';
    return ref ? `${what}: a ${ref}.` : `${what}.`;
  }
  return errorDescription(status);
}

function isPlainText(schema: Json): boolean {
  const type = Array.isArray(schema.type) ? schema.type : [schema.type];
  return (
    type.includes('string') &&
    !('pattern' in schema) &&
    !('format' in schema) &&
    !('enum' in schema) &&
    !('const' in schema)
  );
}

/** Every free-text string a request carries states the service's text check as its pattern. */
function stateTextCheck(node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) stateTextCheck(item);
    return;
  }
  if (!isObject(node)) return;
  if (isPlainText(node)) node.pattern = STORABLE_TEXT_PATTERN;
  for (const [key, value] of Object.entries(node)) if (!DATA_KEYS.has(key)) stateTextCheck(value);
}

function requestSchemasOf(paths: Record<string, Record<string, Json>>): Json[] {
  const found: Json[] = [];
  for (const item of Object.values(paths)) {
    for (const operation of Object.values(item)) {
      for (const parameter of (operation?.parameters ?? []) as Json[])
        if (isObject(parameter.schema)) found.push(parameter.schema);
      const content = ((operation?.requestBody as Json | undefined)?.content ?? {}) as Record<string, Json>;
      for (const media of Object.values(content)) if (isObject(media.schema)) found.push(media.schema);
    }
  }
  return found;
}

/** Moves named schemas into components and describes every response (returns a new document). */
export function shareNamedSchemas<T>(document: T): T {
  const doc = document as Json;
  const components = { ...((doc.components as Json | undefined) ?? {}) };
  const schemas: Json = { ...((components.schemas as Json | undefined) ?? {}) };
  const copied = structuredClone(doc.paths ?? {}) as Record<string, Record<string, Json>>;
  for (const schema of requestSchemasOf(copied)) stateTextCheck(schema);
  const paths = extract(copied, schemas) as Record<string, Record<string, Json>>;
  for (const item of Object.values(paths)) {
    for (const operation of Object.values(item)) {
      const responses = (operation?.responses ?? {}) as Record<string, Json>;
      for (const [status, response] of Object.entries(responses)) {
        if (response.description === 'Default Response' || !response.description)
          response.description = responseDescription(status, response);
      }
    }
  }
  const sorted = Object.fromEntries(Object.entries(schemas).sort(([a], [b]) => a.localeCompare(b)));
  return { ...doc, paths, components: { ...components, schemas: sorted } } as T;
}

/**
 * Error answers are the same for every operation of an API (a Problem and the platform's headers,
 * by status): each becomes one entry of `components.responses` (`Problem404`, `AdminProblem4XX`).
 * Runs after the headers are declared.
 */
export function shareErrorResponses<T>(document: T): T {
  const doc = document as Json;
  const components = (doc.components ?? {}) as Json;
  const responses: Json = { ...((components.responses as Json | undefined) ?? {}) };
  for (const [path, item] of Object.entries((doc.paths ?? {}) as Record<string, Record<string, Json>>)) {
    const scope = path.startsWith('/admin/') ? 'AdminProblem' : 'Problem';
    for (const operation of Object.values(item)) {
      const answers = (operation?.responses ?? {}) as Record<string, Json>;
      for (const [status, response] of Object.entries(answers)) {
        if (status.startsWith('2') || '$ref' in response) continue;
        const name = `${scope}${status}`;
        const known = responses[name];
        if (known !== undefined && !isDeepStrictEqual(known, response)) continue;
        responses[name] = response;
        answers[status] = { $ref: `#/components/responses/${name}` };
      }
    }
  }
  doc.components = { ...components, responses };
  return document;
}
