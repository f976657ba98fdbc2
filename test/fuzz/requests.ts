// Request generators for contract fuzzing: ids for each path parameter (the caller's own, another
// practice's, made up or of the wrong kind), query and header mutations, and the whole request.
import fc from 'fast-check';
import { uniqueKey } from '../harness.ts';
import { applyBodyMutation, bodyMutation, pick } from './mutations.ts';
import type { Operation } from './operations.ts';
import { BIG_NUMBERS, type Hints, HOSTILE_HEADERS, hostileString, schemaArb } from './values.ts';

export interface IdPools {
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

export interface FuzzRequest {
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

export function requestArb(
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
