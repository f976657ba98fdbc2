// Owns the queries over every value the service keeps sealed with SECRET_ENCRYPTION_KEY: webhook signing
// secrets (the current and the previous one of each endpoint) and the idempotent answers that show a
// secret (an API key, a signing secret). A value is replaced only where it is still the one read, so a
// re-encryption running beside the service never overwrites a secret rotated meanwhile.
import { sql } from 'kysely';
import type { Trx } from '../platform/db/transaction.ts';

/** What the operator is told about: each kind counted apart. */
export type SealedKind = 'webhookSecrets' | 'idempotentAnswers';

interface SealedColumn {
  kind: SealedKind;
  table: string;
  column: string;
  /** The columns that name one row. */
  keys: string[];
}

export const SEALED_COLUMNS: readonly SealedColumn[] = [
  {
    kind: 'webhookSecrets',
    table: 'webhook_endpoints',
    column: 'secret_encrypted',
    keys: ['practice_id', 'id'],
  },
  {
    kind: 'webhookSecrets',
    table: 'webhook_endpoints',
    column: 'previous_secret_encrypted',
    keys: ['practice_id', 'id'],
  },
  {
    kind: 'idempotentAnswers',
    table: 'idempotency_keys',
    column: 'response_body',
    keys: ['practice_id', 'client_id', 'key'],
  },
  {
    kind: 'idempotentAnswers',
    table: 'operator_idempotency_keys',
    column: 'response_body',
    keys: ['key'],
  },
];

export interface SealedValue {
  /** The row's key values, in the column's `keys` order. */
  key: string[];
  sealed: string;
}

/** Every sealed value of one column (a sealed body starts `v1.`; plain answers are JSON). */
export async function readSealed(trx: Trx, column: SealedColumn): Promise<SealedValue[]> {
  const keys = column.keys.map((k) => sql.ref(k));
  const { rows } = await sql<{ key: string[]; sealed: string }>`
    SELECT ARRAY[${sql.join(keys)}]::text[] AS key, ${sql.ref(column.column)} AS sealed
    FROM ${sql.table(column.table)}
    WHERE ${sql.ref(column.column)} LIKE 'v1.%'`.execute(trx);
  return rows;
}

/** Replaces one sealed value if it is still `from`; true when it was. */
export async function replaceSealed(
  trx: Trx,
  column: SealedColumn,
  value: SealedValue,
  to: string,
): Promise<boolean> {
  const matches = column.keys.map((k, i) => sql`${sql.ref(k)} = ${value.key[i]}`);
  const result = await sql`
    UPDATE ${sql.table(column.table)} SET ${sql.ref(column.column)} = ${to}
    WHERE ${sql.join(matches, sql` AND `)} AND ${sql.ref(column.column)} = ${value.sealed}`.execute(trx);
  return Number(result.numAffectedRows ?? 0) === 1;
}
