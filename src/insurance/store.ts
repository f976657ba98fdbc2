// Owns queries over insurance plans (published) and coverages (a practice's patients').
import { sql } from 'kysely';
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
      AND (${after === undefined}::boolean OR (p.name, p.id) > (${after?.[0] ?? ''}::text, ${after?.[1] ?? ''}::text))
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
