// Owns the one write the request pipeline makes to a key: when it was last used. The pipeline runs
// before any capability and so cannot reach up into the clients store that owns api_keys; this file
// is declared as a second store of that owner (src/table-owners.ts).
import type { Trx } from '../platform/db/transaction.ts';

/** Stamps the key's last use, unless another request already stamped it at or after `due`. */
export async function stampKeyUse(trx: Trx, practiceId: string, keyId: string, now: Date, due: Date) {
  await trx
    .updateTable('api_keys')
    .set({ last_used_at: now })
    .where('practice_id', '=', practiceId)
    .where('id', '=', keyId)
    .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<=', due)]))
    .execute();
}
