// Owns where a line's price can come from. Sources in the order billing tries them: the practitioner's
// favourite, the practice's own price, the patient's plan, the plan's scheme, a governing body's tariff,
// and the code's default price. Each source maps to the pricingSource a line records.
import { sql } from 'kysely';
import type { Trx } from '../platform/db/transaction.ts';

export const RATE_SOURCES = [
  'practitioner',
  'practice',
  'insurance_plan',
  'insurance_scheme',
  'governing_body',
  'code_default',
] as const;
export type RateSource = (typeof RATE_SOURCES)[number];

export const PRICING_SOURCES = ['governing_body', 'medical_aid', 'custom', 'favorite'] as const;
export type PricingSource = (typeof PRICING_SOURCES)[number];

export const PRICING_SOURCE_OF: Record<RateSource, PricingSource> = {
  practitioner: 'favorite',
  practice: 'custom',
  insurance_plan: 'medical_aid',
  insurance_scheme: 'medical_aid',
  governing_body: 'governing_body',
  code_default: 'custom',
};

export interface RateCandidate {
  source: RateSource;
  name: string | null;
  amount: number;
  currency: string;
  pricingSource: PricingSource;
}

export interface PricingContext {
  practiceId: string;
  currency: string;
  practitionerId: string | null;
  planId: string | null;
}

/** Every known rate for a code, in the order billing tries them. */
export async function ratesFor(
  trx: Trx,
  context: PricingContext,
  system: string | null,
  code: string,
): Promise<RateCandidate[]> {
  if (system === null) return [];
  const { practiceId, practitionerId, planId } = context;
  const result = await sql<{
    source: RateSource;
    name: string | null;
    amount: number;
    currency: string | null;
  }>`
    SELECT 'practitioner' AS source, t.name, pp.amount, NULL AS currency, 1 AS rank, pp.id AS tie
      FROM practice_prices pp JOIN practitioners t ON t.practice_id = pp.practice_id AND t.id = pp.practitioner_id
     WHERE pp.practice_id = ${practiceId} AND pp.practitioner_id = ${practitionerId} AND pp.system = ${system} AND pp.code = ${code}
    UNION ALL
    SELECT 'practice', pr.name, pp.amount, NULL, 2, pp.id
      FROM practice_prices pp JOIN practices pr ON pr.id = pp.practice_id
     WHERE pp.practice_id = ${practiceId} AND pp.practitioner_id IS NULL AND pp.system = ${system} AND pp.code = ${code}
    UNION ALL
    SELECT 'insurance_plan', p.name, r.amount, r.currency, 3, p.id
      FROM insurance_plan_rates r JOIN insurance_plans p ON p.id = r.plan_id
     WHERE r.plan_id = ${planId} AND r.system = ${system} AND r.code = ${code}
    UNION ALL
    SELECT 'insurance_scheme', s.name, r.amount, r.currency, 4, s.id
      FROM insurance_plans p JOIN insurance_schemes s ON s.id = p.scheme_id
      JOIN insurance_scheme_rates r ON r.scheme_id = s.id
     WHERE p.id = ${planId} AND r.system = ${system} AND r.code = ${code}
    UNION ALL
    SELECT 'governing_body', b.name, r.amount, r.currency, 5, b.id
      FROM governing_body_rates r JOIN governing_bodies b ON b.id = r.governing_body_id
     WHERE r.system = ${system} AND r.code = ${code}
    UNION ALL
    SELECT 'code_default', NULL, c.default_price, c.currency, 6, c.id
      FROM code_concepts c JOIN code_systems s ON s.id = c.code_system_id
     WHERE s.url = ${system} AND c.code = ${code} AND c.default_price IS NOT NULL
    UNION ALL
    SELECT 'code_default', NULL, c.default_price, c.currency, 6, c.id
      FROM practice_code_concepts c
      JOIN practice_code_systems s ON s.practice_id = c.practice_id AND s.id = c.code_system_id
     WHERE c.practice_id = ${practiceId} AND s.url = ${system} AND c.code = ${code} AND c.default_price IS NOT NULL
    ORDER BY rank, tie`.execute(trx);
  return result.rows
    .filter((r) => r.currency === null || r.currency === context.currency)
    .map((r) => ({
      source: r.source,
      name: r.name,
      amount: Number(r.amount),
      currency: context.currency,
      pricingSource: PRICING_SOURCE_OF[r.source],
    }));
}
