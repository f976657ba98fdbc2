// Owns the reads of a practice's practitioners: the public list and read.
import type { Trx } from '../platform/db/transaction.ts';

/** Oldest first; `after` is the (createdAt, id) of the previous page's last practitioner. */
export async function listPractitionerRows(
  trx: Trx,
  practiceId: string,
  filters: { active?: boolean | undefined },
  after: { createdAt: string; id: string } | undefined,
  limit: number,
) {
  let query = trx
    .selectFrom('practitioners')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .orderBy('created_at')
    .orderBy('id')
    .limit(limit + 1);
  if (filters.active !== undefined) query = query.where('active', '=', filters.active);
  if (after) {
    const at = new Date(after.createdAt);
    query = query.where((eb) =>
      eb.or([eb('created_at', '>', at), eb.and([eb('created_at', '=', at), eb('id', '>', after.id)])]),
    );
  }
  return query.execute();
}

export async function findPractitioner(trx: Trx, practiceId: string, id: string) {
  return trx
    .selectFrom('practitioners')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .where('id', '=', id)
    .executeTakeFirst();
}
