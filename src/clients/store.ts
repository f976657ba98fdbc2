// Owns the queries over integration clients and their API keys (src/table-owners.ts).
import { type Insertable, sql, type Updateable } from 'kysely';
import type { ApiKeysTable, ClientsTable } from '../platform/db/tables.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { signalKeyChange } from '../platform/key-changes.ts';

export async function insertClient(trx: Trx, row: Insertable<ClientsTable>) {
  return trx.insertInto('clients').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function findClient(trx: Trx, clientId: string) {
  return trx.selectFrom('clients').selectAll().where('id', '=', clientId).executeTakeFirst();
}

export async function listClientRows(trx: Trx, practiceId: string) {
  return trx
    .selectFrom('clients')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

export async function updateClient(
  trx: Trx,
  practiceId: string,
  clientId: string,
  set: Updateable<ClientsTable>,
) {
  const row = await trx
    .updateTable('clients')
    .set(set)
    .where('practice_id', '=', practiceId)
    .where('id', '=', clientId)
    .returningAll()
    .executeTakeFirst();
  if (row) await signalKeyChange(trx, practiceId);
  return row;
}

/**
 * A client already suspended keeps the time it was first suspended, judged on the row as written
 * (not as read before), so that of two suspensions at once the earlier's time stays.
 */
export async function updateClientSuspended(
  trx: Trx,
  practiceId: string,
  clientId: string,
  suspended: boolean,
  now: Date,
) {
  const row = await trx
    .updateTable('clients')
    .set({ suspended_at: suspended ? sql<Date>`coalesce(suspended_at, ${now})` : null, updated_at: now })
    .where('practice_id', '=', practiceId)
    .where('id', '=', clientId)
    .returningAll()
    .executeTakeFirst();
  if (row) await signalKeyChange(trx, practiceId);
  return row;
}

export async function insertApiKey(trx: Trx, row: Insertable<ApiKeysTable>) {
  return trx.insertInto('api_keys').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function listApiKeyRows(trx: Trx, practiceId: string, clientId: string) {
  return trx
    .selectFrom('api_keys')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .where('client_id', '=', clientId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** A key already revoked keeps its first revocation time, also when two revocations race. */
export async function updateApiKeyRevoked(trx: Trx, keyId: string, now: Date) {
  const row = await trx
    .updateTable('api_keys')
    .set({ revoked_at: sql<Date>`coalesce(revoked_at, ${now})` })
    .where('id', '=', keyId)
    .returningAll()
    .executeTakeFirst();
  if (row) await signalKeyChange(trx, row.practice_id);
  return row;
}

/** A key of the client, locked against a concurrent change of its expiry or revocation. */
export async function findClientKeyForUpdate(trx: Trx, practiceId: string, clientId: string, keyId: string) {
  return trx
    .selectFrom('api_keys')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .where('client_id', '=', clientId)
    .where('id', '=', keyId)
    .forNoKeyUpdate()
    .executeTakeFirst();
}

export async function findApiKey(trx: Trx, keyId: string) {
  return trx.selectFrom('api_keys').select(['practice_id', 'id']).where('id', '=', keyId).executeTakeFirst();
}

/** Sets the key to expire at `at`, unless it already expires sooner; answers the row as written. */
export async function shortenApiKeyExpiry(trx: Trx, practiceId: string, keyId: string, at: Date) {
  const row = await trx
    .updateTable('api_keys')
    .set({ expires_at: sql<Date>`least(coalesce(expires_at, ${at}), ${at})` })
    .where('practice_id', '=', practiceId)
    .where('id', '=', keyId)
    .returningAll()
    .executeTakeFirstOrThrow();
  await signalKeyChange(trx, practiceId);
  return row;
}
