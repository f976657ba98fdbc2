// Owns the shape of an admin CLI command and how it is read off an admin route declaration. The
// declaration's `cli` names the command (and any flag that may not take its field's own name);
// everything else comes from the route: the method and path, the first path parameter as the one
// positional id, the other path parameters, the query parameters and the body fields (nested objects
// as dotted flags) as flags, each with its kind, whether it is required and its help, from the
// TypeBox schemas. Pure: no I/O.
import { adminKeyUse } from '../api/admin-key-use.ts';
import type { AnyAdminRoute } from '../api/admin-route.ts';

/** A mistake in how the command was written: the CLI prints it with the usage and exits 2. */
export class UsageError extends Error {}

/** How a flag's text becomes a value: as it is, a comma-separated list, a number, true/false, or JSON. */
export type FlagKind = 'text' | 'list' | 'integer' | 'number' | 'boolean' | 'json';

export interface FlagSpec {
  /** The flag without its dashes: `rate-limit-per-minute`, `default-systems.condition`. */
  flag: string;
  kind: FlagKind;
  /** Where the value goes: a dotted body field (`defaultSystems.condition`), a query or a path parameter. */
  to: { body: string } | { query: string } | { path: string };
  required: boolean;
  help: string;
}

export interface AdminCommand {
  resource: string;
  action: string;
  summary: string;
  description?: string;
  method: AnyAdminRoute['method'];
  /** The route under /admin/v1 exactly as it is declared. */
  route: string;
  /** The record the route names first: given as the one positional argument, or as its flag (`--practice`). */
  target?: { param: string; flag: string };
  /** Sends a JSON body built from the body flags (`{}` when none is given). */
  sendsBody: boolean;
  /**
   * Sends an Idempotency-Key (`--idempotency-key`, else a fresh one per run): the route requires one
   * (it moves money) or accepts one (every other POST).
   */
  idempotencyKey?: 'required' | 'optional';
  flags: FlagSpec[];
}

/** The flag that gives a command's Idempotency-Key, on the commands that send one. */
export const IDEMPOTENCY_KEY_FLAG = 'idempotency-key';

/** Flags every admin command takes (the connection, help, the key): no field may take their names. */
const COMMON_FLAGS = ['url', 'token', 'help', IDEMPOTENCY_KEY_FLAG];

/** The part of a JSON Schema (as TypeBox writes it) that a flag is read from. */
interface Schema {
  type?: string | string[];
  anyOf?: Schema[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  enum?: unknown[];
  const?: unknown;
  format?: string;
  default?: unknown;
  description?: string;
}

/** A field's flag name: camelCase to kebab-case, an id field without its Id (`practitionerId` is `practitioner`). */
function flagName(field: string): string {
  return field.replace(/(?<=.)Id$/, '').replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

/** The schema without its null alternative: `Nullable(T)` reads as T. */
function nonNull(schema: Schema): Schema {
  if (Array.isArray(schema.type)) {
    const types = schema.type.filter((t) => t !== 'null');
    if (types.length !== 1) return schema;
    return {
      ...schema,
      type: types[0],
      ...(schema.enum ? { enum: schema.enum.filter((v) => v !== null) } : {}),
    };
  }
  const branches = schema.anyOf?.filter((b) => b.type !== 'null');
  if (branches?.length === 1)
    return { ...branches[0], description: schema.description ?? branches[0]!.description };
  return schema;
}

/** The values the schema allows, where it lists them: an enum or a union of constants. */
function choices(schema: Schema): unknown[] | undefined {
  if (schema.enum) return schema.enum;
  if (schema.anyOf?.every((b) => b.const !== undefined)) return schema.anyOf.map((b) => b.const);
  return undefined;
}

function kindOf(schema: Schema): FlagKind {
  const s = nonNull(schema);
  if (s.type === 'string' || choices(s)?.every((v) => typeof v === 'string')) return 'text';
  if (s.type === 'integer') return 'integer';
  if (s.type === 'number') return 'number';
  if (s.type === 'boolean') return 'boolean';
  if (s.type === 'array' && s.items && kindOf(s.items) === 'text') return 'list';
  return 'json';
}

const FORMATS: Record<string, string> = {
  'date-time': 'an ISO 8601 date-time, e.g. 2027-01-31T00:00:00Z',
  'offset-date-time': 'e.g. 2027-01-31T00:00:00Z',
  date: 'YYYY-MM-DD',
  uri: 'a URL',
};

const MAX_LISTED_CHOICES = 50;

/** What the schema allows, said briefly, for a field without a description: its length or range. */
function limitsOf(
  s: Schema & { maxLength?: number; minimum?: number; maximum?: number },
): string | undefined {
  if (s.maxLength !== undefined) return `up to ${s.maxLength} characters`;
  if (s.minimum !== undefined && s.maximum !== undefined) return `${s.minimum} to ${s.maximum}`;
  if (s.minimum !== undefined) return `at least ${s.minimum}`;
  return undefined;
}

/** One line of help from the schema: its description (else its limits), the values it takes, its format and default. */
function helpOf(schema: Schema, kind: FlagKind): string {
  const s = nonNull(schema);
  const parts: string[] = [];
  const items = kind === 'list' ? nonNull(s.items ?? {}) : undefined;
  // A long list (the time zones) is left to the OpenAPI document.
  const all = choices(items ?? s);
  const values = all && all.length <= MAX_LISTED_CHOICES ? all : undefined;
  const limits = values || (s.format && FORMATS[s.format]) ? undefined : limitsOf(items ?? s);
  if (s.description) parts.push(s.description.replace(/`/g, '').replace(/\.$/, ''));
  else if (limits) parts.push(items ? `each ${limits}` : limits);
  if (kind === 'list')
    parts.push(
      values ? `comma-separated, of: ${values.join(', ')}; "" for none` : 'comma-separated; "" for none',
    );
  else if (values) parts.push(`one of: ${values.join(', ')}`);
  if (kind === 'json') parts.push('JSON');
  if (s.format && FORMATS[s.format]) parts.push(FORMATS[s.format]!);
  if (s.default !== undefined) parts.push(`default ${JSON.stringify(s.default)}`);
  return parts.join('; ');
}

interface Field {
  /** Dotted field path: `defaultSystems.condition`. */
  path: string;
  flag: string;
  schema: Schema;
  required: boolean;
}

/** The fields of an object schema, nested objects opened into their own fields (`defaultSystems.condition`). */
function fieldsOf(object: Schema, parent?: Field): Field[] {
  const required = new Set(object.required ?? []);
  return Object.entries(object.properties ?? {}).flatMap(([name, schema]) => {
    const field: Field = {
      path: parent ? `${parent.path}.${name}` : name,
      flag: parent ? `${parent.flag}.${flagName(name)}` : flagName(name),
      schema,
      required: (parent?.required ?? true) && required.has(name),
    };
    const inner = nonNull(schema);
    return inner.type === 'object' && inner.properties ? fieldsOf(inner, field) : [field];
  });
}

/** The path parameters of a route, in order: `/practices/:practiceId/prices/:priceId` has two. */
function pathParams(url: string): string[] {
  return [...url.matchAll(/:(\w+)/g)].map((m) => m[1]!);
}

/** The admin CLI command for an admin route: named by its `cli`, everything else read off the route. */
export function commandOf(route: AnyAdminRoute): AdminCommand {
  const where = `admin route ${route.method} ${route.url}`;
  const [resource, action, ...extra] = route.cli.command.split(' ');
  if (!resource || !action || extra.length > 0) {
    throw new Error(`${where}: cli.command is "<resource> <action>", not "${route.cli.command}"`);
  }
  const renames = { ...route.cli.flags };
  const flagOf = (field: { path: string; flag: string }) => {
    const renamed = renames[field.path];
    delete renames[field.path];
    return renamed ?? field.flag;
  };
  const paramSchemas = (route.params as Schema | undefined)?.properties ?? {};
  const [first, ...others] = pathParams(route.url);
  const target =
    first === undefined ? undefined : { param: first, flag: flagOf({ path: first, flag: flagName(first) }) };

  const flags: FlagSpec[] = [];
  const add = (field: Field, to: FlagSpec['to']) => {
    const kind = kindOf(field.schema);
    flags.push({ flag: flagOf(field), kind, to, required: field.required, help: helpOf(field.schema, kind) });
  };
  for (const param of others) {
    add(
      {
        path: param,
        flag: flagName(param),
        schema: paramSchemas[param] ?? { type: 'string' },
        required: true,
      },
      { path: param },
    );
  }
  for (const field of fieldsOf((route.querystring as Schema | undefined) ?? {}))
    add(field, { query: field.path });
  const body = route.body as Schema | undefined;
  if (body && !(nonNull(body).type === 'object' && nonNull(body).properties)) {
    throw new Error(`${where}: the CLI makes flags of a body that is an object with properties`);
  }
  for (const field of body ? fieldsOf(nonNull(body)) : []) add(field, { body: field.path });

  refuseTakenFlags(where, [...(target ? [{ flag: target.flag }] : []), ...flags]);
  const unused = Object.keys(renames);
  if (unused.length > 0) throw new Error(`${where}: cli.flags names no field: ${unused.join(', ')}`);

  const keyUse = adminKeyUse(route);
  return {
    resource,
    action,
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    method: route.method,
    route: route.url,
    ...(target ? { target } : {}),
    sendsBody: body !== undefined,
    ...(keyUse === 'none' ? {} : { idempotencyKey: keyUse }),
    flags,
  };
}

/** Each flag once: the id's, the fields' and the connection's never share a name. */
function refuseTakenFlags(where: string, flags: readonly { flag: string }[]): void {
  const taken = new Set(COMMON_FLAGS);
  for (const flag of flags) {
    if (taken.has(flag.flag)) {
      throw new Error(
        `${where}: --${flag.flag} is taken (by another field, the id or the connection); rename the field in cli.flags`,
      );
    }
    taken.add(flag.flag);
  }
}
