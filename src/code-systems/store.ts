// Owns the queries over code systems and concepts: the published ones (shared by every practice) and
// the practice's own, presented together.
import { type Insertable, type Kysely, sql, type Updateable } from 'kysely';
import { pastPosition } from '../paging/keyset.ts';
import type {
  CodeConceptsTable,
  CodeSystemsTable,
  PracticeCodeConceptsTable,
  PracticeCodeSystemsTable,
  Tables,
  TariffModifiersTable,
} from '../platform/db/tables.ts';
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
      AND ${pastPosition(
        'asc',
        after && [
          { column: 's.owner_rank', value: after[0], type: 'int' },
          { column: 's.name', value: after[1], type: 'text' },
          { column: 's.id', value: after[2], type: 'text' },
        ],
      )}
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
      AND ${pastPosition(
        'asc',
        after && [
          { column: 'c.code', value: after[0], type: 'text' },
          { column: 'c.id', value: after[1], type: 'text' },
        ],
      )}
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
 * deleted only after this transaction commits, when deleteConcept sees the use and refuses. Every
 * tenant table is filtered by the practice itself (not by a join), so that a distributed database
 * (Citus) sends the whole statement, its lock included, to the practice's node alone.
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
         WHERE c.practice_id = ${practiceId} AND c.code_system_id = s.id AND c.code = w.code
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

/** Inserts the practice's system unless its url is taken; returns its id, or undefined when taken. */
export async function insertPracticeSystem(trx: Trx, row: Insertable<PracticeCodeSystemsTable>) {
  return trx
    .insertInto('practice_code_systems')
    .values(row)
    .onConflict((oc) => oc.columns(['practice_id', 'url']).doNothing())
    .returning('id')
    .executeTakeFirst();
}

export async function findPracticeSystemByUrl(trx: Trx, practiceId: string, url: string) {
  return trx
    .selectFrom('practice_code_systems')
    .select('id')
    .where('practice_id', '=', practiceId)
    .where('url', '=', url)
    .executeTakeFirstOrThrow();
}

export async function updatePracticeSystem(
  trx: Trx,
  practiceId: string,
  id: string,
  set: Updateable<PracticeCodeSystemsTable>,
): Promise<void> {
  await trx
    .updateTable('practice_code_systems')
    .set(set)
    .where('practice_id', '=', practiceId)
    .where('id', '=', id)
    .execute();
}

/** Inserts the practice's code unless its system has the code; returns the row, or undefined when taken. */
export async function insertPracticeConcept(trx: Trx, row: Insertable<PracticeCodeConceptsTable>) {
  return trx
    .insertInto('practice_code_concepts')
    .values(row)
    .onConflict((oc) => oc.columns(['practice_id', 'code_system_id', 'code']).doNothing())
    .returningAll()
    .executeTakeFirst();
}

export async function findPracticeConceptByCode(
  trx: Trx,
  practiceId: string,
  systemId: string,
  code: string,
) {
  return trx
    .selectFrom('practice_code_concepts')
    .select('id')
    .where('practice_id', '=', practiceId)
    .where('code_system_id', '=', systemId)
    .where('code', '=', code)
    .executeTakeFirst();
}

/** The practice's code, locked for update until commit. */
export async function lockPracticeConcept(trx: Trx, practiceId: string, systemId: string, id: string) {
  return trx
    .selectFrom('practice_code_concepts')
    .select(['id', 'code'])
    .where('practice_id', '=', practiceId)
    .where('code_system_id', '=', systemId)
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst();
}

export async function findPublishedConcept(trx: Trx, systemId: string, id: string) {
  return trx
    .selectFrom('code_concepts')
    .select(['id', 'code'])
    .where('code_system_id', '=', systemId)
    .where('id', '=', id)
    .executeTakeFirst();
}

export async function deletePracticeConcept(trx: Trx, practiceId: string, id: string): Promise<void> {
  await trx
    .deleteFrom('practice_code_concepts')
    .where('practice_id', '=', practiceId)
    .where('id', '=', id)
    .execute();
}

// The published catalogue, loaded by src/catalogue/loader.ts: upserts keyed on natural keys.

export async function upsertPublishedSystem(
  db: Kysely<Tables>,
  row: Insertable<CodeSystemsTable>,
): Promise<void> {
  await db
    .insertInto('code_systems')
    .values(row)
    .onConflict((oc) =>
      oc.column('url').doUpdateSet((eb) => ({
        name: eb.ref('excluded.name'),
        title: eb.ref('excluded.title'),
        description: eb.ref('excluded.description'),
        usage: eb.ref('excluded.usage'),
        updated_at: eb.ref('excluded.updated_at'),
      })),
    )
    .execute();
}

export async function publishedSystemIdOf(db: Kysely<Tables>, url: string) {
  return db.selectFrom('code_systems').select('id').where('url', '=', url).executeTakeFirstOrThrow();
}

export async function upsertPublishedConcepts(
  db: Kysely<Tables>,
  rows: Insertable<CodeConceptsTable>[],
): Promise<void> {
  await db
    .insertInto('code_concepts')
    .values(rows)
    .onConflict((oc) =>
      oc.columns(['code_system_id', 'code']).doUpdateSet((eb) => ({
        display: eb.ref('excluded.display'),
        definition: eb.ref('excluded.definition'),
        default_price: eb.ref('excluded.default_price'),
        currency: eb.ref('excluded.currency'),
        updated_at: eb.ref('excluded.updated_at'),
      })),
    )
    .execute();
}

export async function upsertModifiers(
  db: Kysely<Tables>,
  rows: Insertable<TariffModifiersTable>[],
): Promise<void> {
  await db
    .insertInto('tariff_modifiers')
    .values(rows)
    .onConflict((oc) =>
      oc.columns(['system', 'code']).doUpdateSet((eb) => ({
        display: eb.ref('excluded.display'),
        percent_basis_points: eb.ref('excluded.percent_basis_points'),
      })),
    )
    .execute();
}
