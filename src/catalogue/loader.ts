// Owns loading the published catalogue from data files into the database, through the stores of the
// tables' owners: code systems and their concepts, tariff modifiers (code-systems), governing-body
// prices (catalogue), medical schemes, plans and their rates (insurance). Runs as
// the schema owner after migrations, when the catalogue's content hash differs from the one last
// loaded; loading is an upsert keyed on natural keys, so it is idempotent and a fuller catalogue
// (CATALOGUE_DIR, same layout) can be laid over the shipped one.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import type { Kysely } from 'kysely';
import {
  publishedSystemIdOf,
  upsertModifiers,
  upsertPublishedConcepts,
  upsertPublishedSystem,
} from '../code-systems/store.ts';
import { upsertPlan, upsertPlanRates, upsertScheme, upsertSchemeRate } from '../insurance/store.ts';
import type { Tables } from '../platform/db/tables.ts';
import { upsertGoverningBody, upsertGoverningBodyRates } from './store.ts';

export const SHIPPED_CATALOGUE_DIR = path.resolve(import.meta.dirname, '..', '..', 'catalogue');

interface CodeSystemFile {
  id: string;
  url: string;
  name: string;
  title?: string | null;
  description?: string | null;
  usage: string[];
  /** CSV of concepts: code, display, and optionally definition, defaultPrice, governingBodyPrice. */
  concepts?: string;
  /** CSV of modifiers: code, display, percent (basis points). */
  modifiers?: string;
  /** The body whose prices the concepts file's governingBodyPrice column holds. */
  governingBody?: { id: string; name: string };
}

interface RateFile {
  system: string;
  code: string;
  amount: number;
}

interface InsuranceFile {
  schemes: Array<{
    id: string;
    name: string;
    rates?: RateFile[];
    plans: Array<{
      id: string;
      name: string;
      aliases?: string[];
      optionCode?: string | null;
      active?: boolean;
      rates: RateFile[];
    }>;
  }>;
}

export interface CatalogueCounts {
  codeSystems: number;
  concepts: number;
  modifiers: number;
  governingBodyRates: number;
  plans: number;
  planRates: number;
}

function hashDir(hash: ReturnType<typeof createHash>, dir: string, prefix: string): void {
  if (!fs.existsSync(dir)) return;
  for (const entry of fs
    .readdirSync(dir, { withFileTypes: true })
    .sort((a, b) => a.name.localeCompare(b.name))) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) hashDir(hash, full, `${prefix}${entry.name}/`);
    else if (entry.isFile())
      hash.update(`${prefix}${entry.name}\0`).update(fs.readFileSync(full)).update('\0');
  }
}

/**
 * The content hash of the catalogue directories in load order, and of this loader (a new loader may
 * read the same files differently): equal hashes mean loading again would change nothing.
 */
export function catalogueHash(dirs: readonly string[]): string {
  const hash = createHash('sha256');
  hash.update(fs.readFileSync(import.meta.filename));
  for (const [index, dir] of dirs.entries()) {
    hash.update(`\n#${index} ${path.resolve(dir)}\n`);
    hashDir(hash, dir, '');
  }
  return hash.digest('hex');
}

/** A stable id for a published concept, so reloading keeps ids the same. */
export function publishedConceptId(systemUrl: string, code: string): string {
  return `cc_${createHash('sha256').update(`${systemUrl}|${code}`).digest('base64url').replace(/[-_]/g, '').slice(0, 22)}`;
}

function readCsv(file: string): Array<Record<string, string>> {
  return parse(fs.readFileSync(file, 'utf8'), { columns: true, skip_empty_lines: true, trim: true }) as Array<
    Record<string, string>
  >;
}

function integerOrNull(value: string | undefined, what: string): number | null {
  if (value === undefined || value === '') return null;
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new Error(`${what}: "${value}" is not an integer`);
  return n;
}

async function inChunks<T>(rows: T[], size: number, fn: (chunk: T[]) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < rows.length; i += size) await fn(rows.slice(i, i + size));
}

export async function loadCatalogue(db: Kysely<Tables>, dir: string): Promise<CatalogueCounts> {
  const counts: CatalogueCounts = {
    codeSystems: 0,
    concepts: 0,
    modifiers: 0,
    governingBodyRates: 0,
    plans: 0,
    planRates: 0,
  };
  const systemsFile = path.join(dir, 'code-systems.json');
  const insuranceFile = path.join(dir, 'insurance.json');
  await db.transaction().execute(async (trx) => {
    if (fs.existsSync(systemsFile)) {
      const systems = JSON.parse(fs.readFileSync(systemsFile, 'utf8')) as CodeSystemFile[];
      for (const system of systems) {
        await loadCodeSystem(trx, dir, system, counts);
      }
    }
    if (fs.existsSync(insuranceFile)) {
      await loadInsurance(trx, JSON.parse(fs.readFileSync(insuranceFile, 'utf8')) as InsuranceFile, counts);
    }
  });
  return counts;
}

async function loadCodeSystem(
  trx: Kysely<Tables>,
  dir: string,
  system: CodeSystemFile,
  counts: CatalogueCounts,
) {
  await upsertPublishedSystem(trx, {
    id: system.id,
    url: system.url,
    name: system.name,
    title: system.title ?? null,
    description: system.description ?? null,
    usage: system.usage,
  });
  counts.codeSystems++;
  const stored = await publishedSystemIdOf(trx, system.url);

  if (system.concepts) await loadConcepts(trx, dir, system, system.concepts, stored.id, counts);

  if (system.modifiers) {
    const modifiers = readCsv(path.join(dir, system.modifiers)).map((row) => ({
      system: system.url,
      code: row.code!,
      display: row.display!,
      percent_basis_points: integerOrNull(row.percent, `${system.modifiers} ${row.code} percent`)!,
    }));
    await inChunks(modifiers, 200, (chunk) => upsertModifiers(trx, chunk));
    counts.modifiers += modifiers.length;
  }
}

/** A code system's concepts, and its governing body's rates when the file names one. */
async function loadConcepts(
  trx: Kysely<Tables>,
  dir: string,
  system: CodeSystemFile,
  file: string,
  storedId: string,
  counts: CatalogueCounts,
) {
  const rows = readCsv(path.join(dir, file));
  const concepts = rows.map((row) => {
    if (!row.code || !row.display) throw new Error(`${file}: every row needs code and display`);
    const defaultPrice = integerOrNull(row.defaultPrice, `${file} ${row.code} defaultPrice`);
    return {
      id: publishedConceptId(system.url, row.code),
      code_system_id: storedId,
      code: row.code,
      display: row.display,
      definition: row.definition || null,
      default_price: defaultPrice,
      currency: defaultPrice === null ? null : 'ZAR',
    };
  });
  await inChunks(concepts, 200, (chunk) => upsertPublishedConcepts(trx, chunk));
  counts.concepts += concepts.length;
  if (system.governingBody)
    await loadGoverningBodyRates(trx, system, system.governingBody, file, rows, counts);
}

/** The governing body's rate of each concept that has one. */
async function loadGoverningBodyRates(
  trx: Kysely<Tables>,
  system: CodeSystemFile,
  body: NonNullable<CodeSystemFile['governingBody']>,
  file: string,
  rows: ReturnType<typeof readCsv>,
  counts: CatalogueCounts,
) {
  await upsertGoverningBody(trx, body.id, body.name);
  const rates = rows
    .filter((row) => row.governingBodyPrice)
    .map((row) => ({
      governing_body_id: body.id,
      system: system.url,
      code: row.code!,
      amount: integerOrNull(row.governingBodyPrice, `${file} ${row.code} governingBodyPrice`)!,
    }));
  await inChunks(rates, 200, (chunk) => upsertGoverningBodyRates(trx, chunk));
  counts.governingBodyRates += rates.length;
}

async function loadInsurance(trx: Kysely<Tables>, insurance: InsuranceFile, counts: CatalogueCounts) {
  for (const scheme of insurance.schemes) {
    await upsertScheme(trx, scheme.id, scheme.name);
    for (const rate of scheme.rates ?? []) {
      await upsertSchemeRate(trx, {
        scheme_id: scheme.id,
        system: rate.system,
        code: rate.code,
        amount: rate.amount,
      });
    }
    for (const plan of scheme.plans) {
      await upsertPlan(trx, {
        id: plan.id,
        scheme_id: scheme.id,
        name: plan.name,
        aliases: plan.aliases ?? [],
        option_code: plan.optionCode ?? null,
        active: plan.active ?? true,
      });
      counts.plans++;
      const rates = plan.rates.map((rate) => ({
        plan_id: plan.id,
        system: rate.system,
        code: rate.code,
        amount: rate.amount,
      }));
      if (rates.length > 0) {
        await upsertPlanRates(trx, rates);
      }
      counts.planRates += rates.length;
    }
  }
}
