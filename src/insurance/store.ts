// Owns queries over insurance schemes, plans and their rates (published, upserted by the catalogue
// loader) and coverages (a practice's patients').
import { type Insertable, type Kysely, sql } from 'kysely';
import { pastPosition } from '../paging/keyset.ts';
import type {
  CoveragesTable,
  InsurancePlanRatesTable,
  InsurancePlansTable,
  InsuranceSchemeRatesTable,
  Tables,
} from '../platform/db/tables.ts';
import type { Trx } from '../platform/db/transaction.ts';

export interface PlanRow {
  id: string;
  name: string;
  aliases: string[];
  option_code: string | null;
  active: boolean;
  scheme_id: string;
  scheme_name: string;
}

export async function listPlans(
  trx: Trx,
  filters: { name?: string | undefined; optionCode?: string | undefined },
  after: [string, string] | undefined,
  limit: number,
): Promise<PlanRow[]> {
  const pattern = filters.name ? `%${filters.name.replace(/[\\%_]/g, (m) => `\\${m}`).toLowerCase()}%` : null;
  const result = await sql<PlanRow>`
    SELECT p.id, p.name, p.aliases, p.option_code, p.active, s.id AS scheme_id, s.name AS scheme_name
    FROM insurance_plans p JOIN insurance_schemes s ON s.id = p.scheme_id
    WHERE (${pattern}::text IS NULL OR lower(p.name) LIKE ${pattern}::text
           OR EXISTS (SELECT 1 FROM unnest(p.aliases) a WHERE lower(a) LIKE ${pattern}::text))
      AND (${filters.optionCode ?? null}::text IS NULL OR lower(p.option_code) = lower(${filters.optionCode ?? null}::text))
      AND ${pastPosition(
        'asc',
        after && [
          { column: 'p.name', value: after[0], type: 'text' },
          { column: 'p.id', value: after[1], type: 'text' },
        ],
      )}
    ORDER BY p.name, p.id
    LIMIT ${limit + 1}`.execute(trx);
  return result.rows;
}

export async function findPlan(trx: Trx, planId: string) {
  return trx.selectFrom('insurance_plans').selectAll().where('id', '=', planId).executeTakeFirst();
}

export interface CoverageRow {
  id: string;
  patient_id: string;
  plan_id: string;
  member_number: string;
  dependent_code: string | null;
  member_surname: string | null;
  member_initials: string | null;
  start_date: string | null;
  end_date: string | null;
  plan_active: boolean;
  created_at: Date;
}

function coverageQuery(trx: Trx, practiceId: string) {
  return trx
    .selectFrom('coverages as c')
    .innerJoin('insurance_plans as p', 'p.id', 'c.plan_id')
    .select([
      'c.id',
      'c.patient_id',
      'c.plan_id',
      'c.member_number',
      'c.dependent_code',
      'c.member_surname',
      'c.member_initials',
      'c.start_date',
      'c.end_date',
      'p.active as plan_active',
      'c.created_at',
    ])
    .where('c.practice_id', '=', practiceId);
}

export async function listCoverages(trx: Trx, practiceId: string, patientId: string): Promise<CoverageRow[]> {
  return coverageQuery(trx, practiceId)
    .where('c.patient_id', '=', patientId)
    .orderBy('c.created_at')
    .orderBy('c.id')
    .execute();
}

export async function findCoverage(
  trx: Trx,
  practiceId: string,
  coverageId: string,
): Promise<CoverageRow | undefined> {
  return coverageQuery(trx, practiceId).where('c.id', '=', coverageId).executeTakeFirst();
}

// The published schemes, plans and rates, loaded by src/catalogue/loader.ts: upserts keyed on natural keys.

export async function upsertScheme(db: Kysely<Tables>, id: string, name: string): Promise<void> {
  await db
    .insertInto('insurance_schemes')
    .values({ id, name })
    .onConflict((oc) => oc.column('id').doUpdateSet((eb) => ({ name: eb.ref('excluded.name') })))
    .execute();
}

export async function upsertSchemeRate(
  db: Kysely<Tables>,
  row: Insertable<InsuranceSchemeRatesTable>,
): Promise<void> {
  await db
    .insertInto('insurance_scheme_rates')
    .values(row)
    .onConflict((oc) =>
      oc
        .columns(['scheme_id', 'system', 'code'])
        .doUpdateSet((eb) => ({ amount: eb.ref('excluded.amount') })),
    )
    .execute();
}

export async function upsertPlan(db: Kysely<Tables>, row: Insertable<InsurancePlansTable>): Promise<void> {
  await db
    .insertInto('insurance_plans')
    .values(row)
    .onConflict((oc) =>
      oc.column('id').doUpdateSet((eb) => ({
        scheme_id: eb.ref('excluded.scheme_id'),
        name: eb.ref('excluded.name'),
        aliases: eb.ref('excluded.aliases'),
        option_code: eb.ref('excluded.option_code'),
        active: eb.ref('excluded.active'),
      })),
    )
    .execute();
}

export async function upsertPlanRates(
  db: Kysely<Tables>,
  rows: Insertable<InsurancePlanRatesTable>[],
): Promise<void> {
  await db
    .insertInto('insurance_plan_rates')
    .values(rows)
    .onConflict((oc) =>
      oc.columns(['plan_id', 'system', 'code']).doUpdateSet((eb) => ({ amount: eb.ref('excluded.amount') })),
    )
    .execute();
}

/** A plan's rates, every system's. */
export async function planRatesOf(trx: Trx, planId: string) {
  return trx
    .selectFrom('insurance_plan_rates')
    .select(['system', 'code', 'amount'])
    .where('plan_id', '=', planId)
    .execute();
}

export async function insertCoverage(trx: Trx, row: Insertable<CoveragesTable>): Promise<void> {
  await trx.insertInto('coverages').values(row).execute();
}

/** The scheme and plan names of a coverage, for the patient's account; undefined when there is none. */
export async function coverageSchemeNames(trx: Trx, practiceId: string, coverageId: string) {
  return trx
    .selectFrom('coverages as c')
    .innerJoin('insurance_plans as p', 'p.id', 'c.plan_id')
    .innerJoin('insurance_schemes as s', 's.id', 'p.scheme_id')
    .select(['s.name as scheme_name', 'p.name as plan_name'])
    .where('c.practice_id', '=', practiceId)
    .where('c.id', '=', coverageId)
    .executeTakeFirst();
}

/** Removes the scheme membership numbers of the patient's coverages (a de-identification). */
export async function clearPatientMemberNumbers(trx: Trx, practiceId: string, patientId: string, now: Date) {
  await trx
    .updateTable('coverages')
    .set({ member_number: '', dependent_code: null, updated_at: now })
    .where('practice_id', '=', practiceId)
    .where('patient_id', '=', patientId)
    .execute();
}
