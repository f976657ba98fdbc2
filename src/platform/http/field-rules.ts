// Owns answering every wrong body field at once across the two rounds of checks: the route's schema
// and the service's own rules. A body the schema refuses is taken apart here: its wrong fields are
// removed, so the service's rules can judge the rest (typed as a partial body), and the two sets of
// errors are merged into one list in the order the schema declares the fields.
import type { ErrorObject } from 'ajv';
import type { FieldError } from './errors.ts';

/** A body of which some fields may be missing: the ones left out and the ones the schema refused. */
export type Partly<T> = T extends readonly (infer U)[]
  ? Array<Partly<U> | undefined>
  : T extends object
    ? { [K in keyof T]?: Partly<T[K]> }
    : T;

/** Whether the schema refused a field, one inside it or one it lies in (`diagnoses` covers `diagnoses.0.code`). */
export type WrongField = (field: string) => boolean;

export const noWrongFields: WrongField = () => false;

export function wrongFieldsOf(errors: FieldError[]): WrongField {
  const fields = errors.map((e) => e.field);
  if (fields.includes('body')) return () => true;
  return (field) => fields.some((f) => f === field || f.startsWith(`${field}.`) || field.startsWith(`${f}.`));
}

function segmentsOf(error: ErrorObject): string[] | undefined {
  if (error.keyword === 'required') return undefined;
  const segments =
    error.instancePath === ''
      ? []
      : error.instancePath
          .slice(1)
          .split('/')
          .map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'));
  if (error.keyword === 'additionalProperties') {
    segments.push((error.params as { additionalProperty: string }).additionalProperty);
  }
  return segments;
}

/**
 * A copy of the body without the values the schema refused: an object loses the key, an array keeps
 * the place (as undefined) so later items keep their index. A refused whole body leaves nothing.
 */
export function withoutWrongFields<T>(body: unknown, errors: ErrorObject[]): Partly<T> {
  let copy: unknown = structuredClone(body);
  for (const error of errors) {
    const segments = segmentsOf(error);
    if (segments === undefined) continue;
    if (segments.length === 0) {
      copy = {};
      break;
    }
    let parent: unknown = copy;
    for (const segment of segments.slice(0, -1)) {
      parent =
        typeof parent === 'object' && parent !== null
          ? (parent as Record<string, unknown>)[segment]
          : undefined;
    }
    const last = segments[segments.length - 1]!;
    if (Array.isArray(parent)) parent[Number(last)] = undefined;
    else if (typeof parent === 'object' && parent !== null) delete (parent as Record<string, unknown>)[last];
  }
  return (typeof copy === 'object' && copy !== null && !Array.isArray(copy) ? copy : {}) as Partly<T>;
}

interface SchemaNode {
  properties?: Record<string, SchemaNode>;
  items?: SchemaNode;
}

/** Sort key of a dotted field: each key's place among its object's declared properties, each index as is. */
function placeOf(schema: SchemaNode | undefined, field: string): number[] {
  if (field === 'body') return [-1];
  const place: number[] = [];
  let node = schema;
  for (const segment of field.split('.')) {
    if (node?.properties) {
      const index = Object.keys(node.properties).indexOf(segment);
      place.push(index === -1 ? Number.MAX_SAFE_INTEGER : index);
      node = node.properties[segment];
    } else {
      place.push(/^\d+$/.test(segment) ? Number(segment) : Number.MAX_SAFE_INTEGER);
      node = node?.items;
    }
  }
  return place;
}

function compare(a: number[], b: number[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a[i] !== b[i]) return a[i]! - b[i]!;
  }
  return a.length - b.length;
}

/**
 * The schema's errors and the rules' errors as one list, one entry per field (the schema's wins),
 * in the order the body schema declares the fields; unknown fields come last, as sent.
 */
export function mergeFieldErrors(
  schema: object,
  fromSchema: FieldError[],
  fromRules: FieldError[],
): FieldError[] {
  const seen = new Set(fromSchema.map((e) => e.field));
  const all = [...fromSchema, ...fromRules.filter((e) => !seen.has(e.field))];
  const places = new Map(all.map((e) => [e.field, placeOf(schema as SchemaNode, e.field)]));
  return all.sort((a, b) => compare(places.get(a.field)!, places.get(b.field)!));
}
