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
  return (await ratesForCodes(trx, context, [{ system, code }])).get(codeKey(system, code)) ?? [];
}

/** The key of a code in the answer of ratesForCodes. */
export function codeKey(system: string, code: string): string {
  return `${system}\u0000${code}`;
}

/**
 * Every known rate of each code, in the order billing tries them, in one statement (a bill prices all
 * its lines at once), by codeKey.
 */
export async function ratesForCodes(
  trx: Trx,
  context: PricingContext,
  codes: ReadonlyArray<{ system: string; code: string }>,
): Promise<Map<string, RateCandidate[]>> {
  if (codes.length === 0) return new Map();
  return ratesByCode(await rateRows(trx, context, codes), context.currency);
}

interface RateRow {
  system: string;
  code: string;
  source: RateSource;
  name: string | null;
  amount: number;
  currency: string | null;
}

/** Every rate of each code, by the order of precedence, in one statement. */
async function rateRows(
  trx: Trx,
  context: PricingContext,
  codes: ReadonlyArray<{ system: string; code: string }>,
): Promise<RateRow[]> {
  const { practiceId, practitionerId, planId } = context;
  const result = await sql<RateRow>`
    WITH wanted (system, code) AS (
      SELECT DISTINCT * FROM unnest(${codes.map((c) => c.system)}::text[], ${codes.map((c) => c.code)}::text[]))
    SELECT w.system, w.code, r.source, r.name, r.amount, r.currency FROM wanted w CROSS JOIN LATERAL (
    SELECT 'practitioner' AS source, t.name, pp.amount, NULL AS currency, 1 AS rank, pp.id AS tie
      FROM practice_prices pp JOIN practitioners t ON t.practice_id = pp.practice_id AND t.id = pp.practitioner_id
     WHERE pp.practice_id = ${practiceId} AND pp.practitioner_id = ${practitionerId} AND pp.system = w.system AND pp.code = w.code
    UNION ALL
    SELECT 'practice', pr.name, pp.amount, NULL, 2, pp.id
      FROM practice_prices pp JOIN practices pr ON pr.id = pp.practice_id
     WHERE pp.practice_id = ${practiceId} AND pp.practitioner_id IS NULL AND pp.system = w.system AND pp.code = w.code
    UNION ALL
    SELECT 'insurance_plan', p.name, r.amount, r.currency, 3, p.id
      FROM insurance_plan_rates r JOIN insurance_plans p ON p.id = r.plan_id
     WHERE r.plan_id = ${planId} AND r.system = w.system AND r.code = w.code
    UNION ALL
    SELECT 'insurance_scheme', s.name, r.amount, r.currency, 4, s.id
      FROM insurance_plans p JOIN insurance_schemes s ON s.id = p.scheme_id
      JOIN insurance_scheme_rates r ON r.scheme_id = s.id
     WHERE p.id = ${planId} AND r.system = w.system AND r.code = w.code
    UNION ALL
    SELECT 'governing_body', b.name, r.amount, r.currency, 5, b.id
      FROM governing_body_rates r JOIN governing_bodies b ON b.id = r.governing_body_id
     WHERE r.system = w.system AND r.code = w.code
    UNION ALL
    SELECT 'code_default', NULL, c.default_price, c.currency, 6, c.id
      FROM code_concepts c JOIN code_systems s ON s.id = c.code_system_id
     WHERE s.url = w.system AND c.code = w.code AND c.default_price IS NOT NULL
    UNION ALL
    SELECT 'code_default', NULL, c.default_price, c.currency, 6, c.id
      FROM practice_code_concepts c
      JOIN practice_code_systems s ON s.practice_id = c.practice_id AND s.id = c.code_system_id
     WHERE c.practice_id = ${practiceId} AND s.url = w.system AND c.code = w.code AND c.default_price IS NOT NULL
    ) AS r
    ORDER BY w.system, w.code, r.rank, r.tie`.execute(trx);
  return result.rows;
}

/** The rates in the practice's currency, grouped by code in the rows' order. */
function ratesByCode(rows: readonly RateRow[], currency: string): Map<string, RateCandidate[]> {
  const byCode = new Map<string, RateCandidate[]>();
  for (const r of rows) {
    if (r.currency !== null && r.currency !== currency) continue;
    const key = codeKey(r.system, r.code);
    const rates = byCode.get(key) ?? [];
    byCode.set(key, rates);
    rates.push({
      source: r.source,
      name: r.name,
      amount: Number(r.amount),
      currency,
      pricingSource: PRICING_SOURCE_OF[r.source],
    });
  }
  return byCode;
}
