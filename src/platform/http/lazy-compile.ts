// Owns deferring schema compilation: a route's validators and response serializers are compiled on
// their first use instead of when the app starts, so a start does not pay for a hundred routes it may
// not serve for a while. A process that serves (src/server.ts) compiles the rest right after it
// listens, one per turn of the event loop, so schema mistakes still show at start and a route's first
// request seldom pays for it.
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';

const pending = new Set<() => unknown>();

/** What `compile` returns, computed on the first call (or by compilePendingSchemas, whichever comes first). */
export function compiledOnFirstUse<T>(compile: () => T): () => T {
  let compiled: { value: T } | undefined;
  const get = () => {
    if (!compiled) {
      compiled = { value: compile() };
      pending.delete(get);
    }
    return compiled.value;
  };
  pending.add(get);
  return get;
}

/** Fastify's default serializer factory (fast-json-stringify), each serializer compiled on first use. */
export function buildSerializerOnFirstUse(
  ...factoryArgs: Parameters<ReturnType<typeof SerializerSelector>>
): ReturnType<ReturnType<typeof SerializerSelector>> {
  const compileFor = SerializerSelector()(...factoryArgs);
  return (route) => {
    const serializer = compiledOnFirstUse(() => compileFor(route));
    return (doc) => serializer()(doc);
  };
}

/** Compiles everything still waiting, yielding to the event loop between schemas; resolves when done. */
export async function compilePendingSchemas(): Promise<number> {
  let count = 0;
  for (const compile of pending) {
    compile();
    count++;
    await new Promise((resolve) => setImmediate(resolve));
  }
  return count;
}
