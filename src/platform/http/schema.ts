// Owns small schema helpers shared by every resource: nullable types, the Problem and list shapes,
// paging parameters. Schemas are TypeBox: one declaration gives validation, types and OpenAPI.
import { type Static, type TSchema, Type } from 'typebox';
import { ERROR_CODES } from './errors.ts';

/** `T or null`, written as a JSON Schema type array so validation errors stay one per field. */
export function Nullable<T extends TSchema>(schema: T): ReturnType<typeof Type.Unsafe<Static<T> | null>> {
  const s = schema as unknown as { type?: string | string[]; enum?: unknown[]; title?: string };
  // A named schema stays itself (one component in the OpenAPI document), or null beside it.
  if (typeof s.title === 'string')
    return Type.Unsafe<Static<T> | null>({ anyOf: [schema, { type: 'null' }] });
  if (typeof s.type !== 'string') throw new Error('Nullable needs a schema with a single type');
  const copy = { ...(schema as object), type: [s.type, 'null'] } as Record<string, unknown>;
  if (Array.isArray(s.enum)) copy.enum = [...s.enum, null];
  return Type.Unsafe<Static<T> | null>(copy);
}

export const FieldErrorSchema = Type.Object(
  {
    field: Type.String({
      description: 'Dotted path of a body field (`givenNames.0`), or a query parameter or header name.',
    }),
    code: Enum(['required', 'invalid']),
    message: Type.String(),
  },
  { title: 'FieldError', additionalProperties: false },
);

export const ProblemSchema = Type.Object(
  {
    type: Type.String({ description: 'Link to the error code on the errors page.' }),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    code: Enum(Object.keys(ERROR_CODES) as (keyof typeof ERROR_CODES)[]),
    requestId: Type.String(),
    errors: Type.Optional(Type.Array(FieldErrorSchema)),
  },
  { title: 'Problem', additionalProperties: false },
);

export function ListOf<T extends TSchema>(item: T, name: string) {
  return Type.Object(
    {
      object: Type.Literal('list'),
      data: Type.Array(item),
      hasMore: Type.Boolean(),
      nextCursor: Nullable(Type.String()),
    },
    { title: name, additionalProperties: false },
  );
}

export const PagingQuery = {
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 100, default: 50, description: 'Page size, 1 to 100.' }),
  ),
  cursor: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 2000,
      description: '`nextCursor` of the previous page, unchanged.',
    }),
  ),
};

export function IdParam<K extends string>(name: K, description: string) {
  const properties = { [name]: Type.String({ minLength: 1, maxLength: 100, description }) } as Record<
    K,
    ReturnType<typeof Type.String>
  >;
  return Type.Object(properties, { additionalProperties: false });
}

/** One of a fixed set of strings, written as a JSON Schema enum. */
export function Enum<const T extends readonly string[]>(
  values: T,
  options: { description?: string; default?: T[number] } = {},
) {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });
}

/** A date-time with a mandatory offset, as the service writes it (always UTC). */
export const DateTime = Type.String({ format: 'date-time' });
/** A real calendar date, `YYYY-MM-DD`. */
export const CalendarDate = Type.String({ format: 'date', pattern: '^\\d{4}-\\d{2}-\\d{2}$' });

/** Marks a route schema whose body may be left out; the OpenAPI document then says it is not required. */
export const BODY_OPTIONAL = 'x-body-optional';

/** A required piece of text, 1 to `max` characters. */
export const Text = (max: number) => Type.String({ minLength: 1, maxLength: max });
