// Owns statements compiled once: a hot statement of the request path, written with Kysely's builder
// over named placeholders, is built and compiled when its module loads, and each call runs that text
// with its own values in the placeholders' order, so a request pays for neither the builder nor the
// compiler. The same text every call, so it is sent as one prepared statement (src/platform/db/
// postgres-session.ts). Statements whose shape depends on their values are built per call as usual.
import {
  type Compilable,
  type CompiledQuery,
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
} from 'kysely';
import type { Tables } from './tables.ts';
import type { Trx } from './transaction.ts';

/** Builds and compiles only; never connected. Both databases speak PostgreSQL's SQL. */
const builder = new Kysely<Tables>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});

/** What a placeholder compiles to: a parameter no caller could send (PostgreSQL text holds no NUL). */
const PLACEHOLDER = '\u0000placeholder:';

type Slot = { name: string } | { constant: unknown };

/** A statement compiled once: run it with a call's values, or take it with them to run otherwise. */
export interface CompiledOnce<V, R> {
  (trx: Trx, values: V): Promise<R[]>;
  /** The statement with the call's values, for a caller that sends it its own way. */
  with(values: V): CompiledQuery<R>;
}

/**
 * A statement compiled once: `build` writes it with `value(name)` wherever a value of the call goes;
 * the function returned runs it in a transaction with the call's values and answers its rows.
 */
export function compiledOnce<V extends Record<string, unknown>, R>(
  build: (db: Kysely<Tables>, value: <K extends keyof V & string>(name: K) => V[K]) => Compilable<R>,
): CompiledOnce<V, R> {
  const compiled = build(builder, (name) => `${PLACEHOLDER}${name}` as never).compile();
  const slots: Slot[] = compiled.parameters.map((p) =>
    typeof p === 'string' && p.startsWith(PLACEHOLDER)
      ? { name: p.slice(PLACEHOLDER.length) }
      : { constant: p },
  );
  const withValues = (values: V): CompiledQuery<R> => ({
    ...compiled,
    parameters: slots.map((slot) => ('name' in slot ? values[slot.name] : slot.constant)),
  });
  const run = async (trx: Trx, values: V) => (await trx.executeQuery<R>(withValues(values))).rows;
  return Object.assign(run, { with: withValues });
}
