// PROVISIONAL: the events feed's stamp and read bound until the change feed's safe high-water mark
// (src/platform/db/change-feed.ts) is merged: stamped at insert, read below the list transaction's start.
import { type RawBuilder, sql } from 'kysely';
import type { Trx } from '../platform/db/transaction.ts';

export async function writeStamp(_trx: Trx): Promise<RawBuilder<Date>> {
  return sql<Date>`clock_timestamp()`;
}

export async function readBound(_trx: Trx): Promise<RawBuilder<Date>> {
  return sql<Date>`now()`;
}
