// Body mutations for contract fuzzing: missing required fields, wrong types, oversize strings and
// arrays, unknown fields and broken JSON, each applied at one path of a valid body.
import fc from 'fast-check';
import { isObject, type Schema } from './operations.ts';
import { BIG_NUMBER_SENTINEL, BIG_NUMBERS, hostileString, wrongTypeValue } from './values.ts';

export type Path = (string | number)[];

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

export const bodyMutation: fc.Arbitrary<BodyMutation> = fc.oneof(
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

export function pick<T>(list: readonly T[], at: number): T | undefined {
  return list.length === 0 ? undefined : list[at % list.length];
}

/** The body text and content type for a valid body and a mutation. */
export function applyBodyMutation(
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
