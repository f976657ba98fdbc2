// Owns the look-up behind X-Service-Performer: whether an id names a practitioner of the calling
// practice. The request pipeline asks it for every call that names a performer; it sits here, with the
// rest of "who is calling", so that the pipeline never reaches up into a capability.
import type { Trx } from '../platform/db/transaction.ts';

export async function practitionerExists(trx: Trx, practiceId: string, id: string): Promise<boolean> {
  const found = await trx
    .selectFrom('practitioners')
    .select('id')
    .where('practice_id', '=', practiceId)
    .where('id', '=', id)
    .executeTakeFirst();
  return found !== undefined;
}
