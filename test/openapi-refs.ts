// Resolves the document's local `$ref`s (components.schemas, .responses, .headers) in place of the
// references, for tests that read schemas and responses as a client's tooling would see them.
type Json = Record<string, unknown>;

function resolvePointer(document: Json, ref: string): unknown {
  if (!ref.startsWith('#/')) throw new Error(`not a local reference: ${ref}`);
  let node: unknown = document;
  for (const part of ref.slice(2).split('/')) {
    node = (node as Json | undefined)?.[part.replaceAll('~1', '/').replaceAll('~0', '~')];
    if (node === undefined) throw new Error(`${ref} does not resolve`);
  }
  return node;
}

export function dereference<T>(document: T): T {
  const root = document as Json;
  const walk = (node: unknown, seen: readonly string[]): unknown => {
    if (Array.isArray(node)) return node.map((item) => walk(item, seen));
    if (typeof node !== 'object' || node === null) return node;
    const ref = (node as Json).$ref;
    if (typeof ref === 'string') {
      if (seen.includes(ref)) throw new Error(`circular reference ${ref}`);
      return walk(resolvePointer(root, ref), [...seen, ref]);
    }
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, walk(v, seen)]));
  };
  return walk(document, []) as T;
}
