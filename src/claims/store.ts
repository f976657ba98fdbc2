// Owns the claims tables: one claim per invoice, with the insurer's per-line answer.
import { type Insertable, type Selectable, sql, type Updateable } from 'kysely';
import type { ClaimItemsTable, ClaimsTable } from '../platform/db/tables.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { writeUnanswered } from '../platform/db/unanswered-writes.ts';

export type ClaimRow = Selectable<ClaimsTable>;
export type ClaimItemRow = Selectable<ClaimItemsTable>;

export async function findClaimOfInvoice(trx: Trx, practiceId: string, invoiceId: string, forUpdate = false) {
  let query = trx
    .selectFrom('claims')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .where('invoice_id', '=', invoiceId);
  if (forUpdate) query = query.forUpdate();
  return query.executeTakeFirst();
}

export async function findClaim(trx: Trx, practiceId: string, claimId: string, forUpdate = false) {
  let query = trx
    .selectFrom('claims')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .where('id', '=', claimId);
  if (forUpdate) query = query.forUpdate();
  return query.executeTakeFirst();
}

export async function claimItems(trx: Trx, practiceId: string, claimId: string): Promise<ClaimItemRow[]> {
  return trx
    .selectFrom('claim_items')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .where('claim_id', '=', claimId)
    .orderBy('line_number')
    .execute();
}

/**
 * The claim with the benefit its items approved (`approved_benefit`: a denied line's counts nothing), in
 * one statement (its subquery filtered by the practice itself, so that Citus routes it to one node).
 */
export async function findClaimWithBenefit(trx: Trx, practiceId: string, claimId: string) {
  return trx
    .selectFrom('claims')
    .selectAll()
    .select(
      sql<number>`(SELECT coalesce(sum(CASE WHEN i.decision = 'denied' THEN 0 ELSE coalesce(i.benefit, 0) END), 0)
        FROM claim_items i WHERE i.practice_id = ${practiceId} AND i.claim_id = claims.id)`.as(
        'approved_benefit',
      ),
    )
    .where('practice_id', '=', practiceId)
    .where('id', '=', claimId)
    .executeTakeFirst();
}

/**
 * A claim's items, for a claim that has none (one submitting: a new submission starts without). Nobody
 * reads the insert's answer: it goes out with the transaction's next statement.
 */
export async function insertClaimItems(
  trx: Trx,
  practiceId: string,
  claimId: string,
  items: Omit<ClaimItemRow, 'practice_id' | 'claim_id'>[],
) {
  if (items.length === 0) return;
  await writeUnanswered(
    trx,
    trx.insertInto('claim_items').values(
      items.map((item) => ({
        ...item,
        practice_id: practiceId,
        claim_id: claimId,
        rejections: JSON.stringify(item.rejections),
        warnings: JSON.stringify(item.warnings),
      })),
    ),
  );
}

export async function replaceClaimItems(
  trx: Trx,
  practiceId: string,
  claimId: string,
  items: Omit<ClaimItemRow, 'practice_id' | 'claim_id'>[],
) {
  await trx
    .deleteFrom('claim_items')
    .where('practice_id', '=', practiceId)
    .where('claim_id', '=', claimId)
    .execute();
  await insertClaimItems(trx, practiceId, claimId, items);
}

export async function insertClaim(trx: Trx, row: Insertable<ClaimsTable>): Promise<ClaimRow> {
  return trx.insertInto('claims').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function updateClaim(
  trx: Trx,
  practiceId: string,
  id: string,
  set: Updateable<ClaimsTable>,
): Promise<ClaimRow> {
  return trx
    .updateTable('claims')
    .set(set)
    .where('practice_id', '=', practiceId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}
