// Owns the queries over code systems and concepts: the published ones (shared by every practice) and
// the practice's own, presented together.
import { sql } from 'kysely';
import type { Trx } from '../platform/db/transaction.ts';

export interface CodeSystemRow {
  id: string;
  url: string;
  name: string;
  title: string | null;
  description: string | null;
  usage: string[];
  status: 'active' | 'retired';
  updated_at: Date;
  owner: 'service' | 'practice';
  owner_rank: number;
}

const visibleSystems = (practiceId: string) => sql`
  (SELECT id, url, name, title, description, usage, status, updated_at, 'service' AS owner, 0 AS owner_rank
     FROM code_systems
   UNION ALL
   SELECT id, url, name, title, description, usage, status, updated_at, 'practice' AS owner, 1 AS owner_rank
     FROM practice_code_systems WHERE practice_id = ${practiceId})`;

export async function listCodeSystems(
  trx: Trx,
  practiceId: string,
  filters: { usage?: string | undefined; owner?: string | undefined },
  after: [number, string, string] | undefined,
  limit: number,
): Promise<CodeSystemRow[]> {
  const result = await sql<CodeSystemRow>`
    SELECT * FROM ${visibleSystems(practiceId)} AS s
    WHERE (${filters.usage ?? null}::text IS NULL OR ${filters.usage ?? null}::text = ANY (s.usage))
      AND (${filters.owner ?? null}::text IS NULL OR s.owner = ${filters.owner ?? null}::text)
      AND (${after === undefined}::boolean OR (s.owner_rank, s.name, s.id) > (${after?.[0] ?? 0}::int, ${after?.[1] ?? ''}::text, ${after?.[2] ?? ''}::text))
    ORDER BY s.owner_rank, s.name, s.id
    LIMIT ${limit + 1}`.execute(trx);
  return result.rows;
}

export async function findCodeSystem(
  trx: Trx,
  practiceId: string,
  id: string,
): Promise<CodeSystemRow | undefined> {
  const result =
    await sql<CodeSystemRow>`SELECT * FROM ${visibleSystems(practiceId)} AS s WHERE s.id = ${id}`.execute(
      trx,
    );
  return result.rows[0];
}

export interface ConceptRow {
  id: string;
  code_system_id: string;
  system: string;
  code: string;
  display: string;
  definition: string | null;
  /** The concept's own usages besides its system's. */
  usage: string[];
  system_usage: string[];
  default_price: number | null;
  currency: string | null;
  updated_at: Date;
}

export async function listConcepts(
  trx: Trx,
  practiceId: string,
  system: CodeSystemRow,
  filters: { code?: string | undefined; search?: string | undefined; id?: string | undefined },
  after: [string, string] | undefined,
  limit: number,
): Promise<ConceptRow[]> {
  const table = system.owner === 'service' ? sql`code_concepts` : sql`practice_code_concepts`;
  const tenantFilter = system.owner === 'service' ? sql`TRUE` : sql`c.practice_id = ${practiceId}`;
  const search = filters.search
    ? `%${filters.search.replace(/[\\%_]/g, (m) => `\\${m}`).toLowerCase()}%`
    : null;
  const result = await sql<ConceptRow>`
    SELECT c.id, c.code_system_id, ${system.url}::text AS system, c.code, c.display, c.definition, c.usage,
           ${system.usage}::text[] AS system_usage, c.default_price, c.currency, c.updated_at
    FROM ${table} AS c
    WHERE ${tenantFilter} AND c.code_system_id = ${system.id}
      AND (${filters.code ?? null}::text IS NULL OR c.code = ${filters.code ?? null}::text)
      AND (${filters.id ?? null}::text IS NULL OR c.id = ${filters.id ?? null}::text)
      AND (${search}::text IS NULL OR lower(c.display) LIKE ${search}::text OR lower(c.code) LIKE ${search}::text)
      AND (${after === undefined}::boolean OR (c.code, c.id) > (${after?.[0] ?? ''}::text, ${after?.[1] ?? ''}::text))
    ORDER BY c.code, c.id
    LIMIT ${limit + 1}`.execute(trx);
  return result.rows;
}

export interface ResolvedCode {
  system: string;
  code: string;
  display: string;
  active: boolean;
  defaultPrice: number | null;
  /** The kinds of record the code is picked for: its system's usage and its own extras. */
  usage: string[];
}

/**
 * Looks codes up in every active system the practice can use; the key is `system|code`. The
 * practice's own codes found are held until commit (`FOR KEY SHARE`), so that the caller can record
 * them: a code deleted by a concurrent request is either gone before this look-up (not found) or
 * deleted only after this transaction commits, when deleteConcept sees the use and refuses.
 */
export async function resolveCodes(
  trx: Trx,
  practiceId: string,
  codings: Array<{ system: string; code: string }>,
): Promise<Map<string, ResolvedCode>> {
  if (codings.length === 0) return new Map();
  const systems = codings.map((c) => c.system);
  const codes = codings.map((c) => c.code);
  const result = await sql<{
    system: string;
    code: string;
    display: string;
    active: boolean;
    default_price: number | null;
    usage: string[];
  }>`
    WITH wanted (system, code) AS (SELECT * FROM unnest(${systems}::text[], ${codes}::text[]))
    SELECT s.url AS system, c.code, c.display, c.active, c.default_price, s.usage || c.usage AS usage
      FROM wanted w
      JOIN code_systems s ON s.url = w.system AND s.status = 'active'
      JOIN code_concepts c ON c.code_system_id = s.id AND c.code = w.code
    UNION ALL
    SELECT s.url AS system, c.code, c.display, true AS active, c.default_price, s.usage || c.usage AS usage
      FROM wanted w
      JOIN practice_code_systems s ON s.practice_id = ${practiceId} AND s.url = w.system AND s.status = 'active'
      JOIN LATERAL (
        SELECT * FROM practice_code_concepts c
         WHERE c.practice_id = s.practice_id AND c.code_system_id = s.id AND c.code = w.code
           FOR KEY SHARE) c ON TRUE`.execute(trx);
  return new Map(
    result.rows.map((r) => [
      `${r.system}|${r.code}`,
      {
        system: r.system,
        code: r.code,
        display: r.display,
        active: r.active,
        defaultPrice: r.default_price,
        usage: r.usage,
      },
    ]),
  );
}

/** The urls among `urls` that name an active system the practice can use. */
export async function knownSystemUrls(trx: Trx, practiceId: string, urls: string[]): Promise<Set<string>> {
  if (urls.length === 0) return new Set();
  const result = await sql<{ url: string }>`
    SELECT url FROM code_systems WHERE url = ANY (${urls}::text[]) AND status = 'active'
    UNION
    SELECT url FROM practice_code_systems WHERE practice_id = ${practiceId} AND url = ANY (${urls}::text[]) AND status = 'active'`.execute(
    trx,
  );
  return new Set(result.rows.map((r) => r.url));
}

/** Where a code is still used on a patient's record or a saved price; empty when free to delete. */
export async function codeUses(
  trx: Trx,
  practiceId: string,
  system: string,
  code: string,
): Promise<string[]> {
  const result = await sql<{ place: string }>`
    SELECT 'a visit''s diagnoses' AS place WHERE EXISTS (
      SELECT 1 FROM encounter_diagnoses WHERE practice_id = ${practiceId} AND system = ${system} AND code = ${code})
    UNION ALL
    SELECT 'a visit''s procedures' WHERE EXISTS (
      SELECT 1 FROM encounter_procedures WHERE practice_id = ${practiceId} AND system = ${system} AND code = ${code})
    UNION ALL
    SELECT 'an invoice line' WHERE EXISTS (
      SELECT 1 FROM invoice_lines WHERE practice_id = ${practiceId} AND system = ${system} AND code = ${code})
    UNION ALL
    SELECT 'an invoice line''s diagnoses' WHERE EXISTS (
      SELECT 1 FROM invoice_lines WHERE practice_id = ${practiceId}
        AND diagnoses @> jsonb_build_array(jsonb_build_object('system', ${system}::text, 'code', ${code}::text)))
    UNION ALL
    SELECT 'a saved price' WHERE EXISTS (
      SELECT 1 FROM practice_prices WHERE practice_id = ${practiceId} AND system = ${system} AND code = ${code})`.execute(
    trx,
  );
  return result.rows.map((r) => r.place);
}

/** The modifiers of a system's codes, by code. */
export async function listModifiers(trx: Trx, systemUrl: string) {
  return trx
    .selectFrom('tariff_modifiers')
    .selectAll()
    .where('system', '=', systemUrl)
    .orderBy('code')
    .execute();
}

/** Modifier percentages (basis points) of a system, by code. */
export async function modifiersOf(trx: Trx, system: string, codes: string[]): Promise<Map<string, number>> {
  if (codes.length === 0) return new Map();
  const rows = await trx
    .selectFrom('tariff_modifiers')
    .select(['code', 'percent_basis_points'])
    .where('system', '=', system)
    .where('code', 'in', codes)
    .execute();
  return new Map(rows.map((r) => [r.code, r.percent_basis_points]));
}
