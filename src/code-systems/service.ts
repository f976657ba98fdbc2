// Owns the rules for code systems: the published ones are read-only; a practice creates, replaces
// and fills its own (whose url derives from its name), and cannot delete a code still in use.

import { insertUnlessTaken, type Trx } from '../platform/db/transaction.ts';
import { AppError, type FieldError, fieldErrors, notFound } from '../platform/http/errors.ts';
import type { Partly } from '../platform/http/field-rules.ts';
import { newId } from '../platform/ids.ts';
import { codeUses } from './code-uses.ts';
import type { CodeConcept, CodeConceptRequest, CodeSystem, CodeSystemRequest } from './schemas.ts';
import {
  type CodeSystemRow,
  type ConceptRow,
  deletePracticeConcept,
  findCodeSystem,
  findPracticeConceptByCode,
  findPracticeSystemByUrl,
  findPublishedConcept,
  insertPracticeConcept,
  insertPracticeSystem,
  listConcepts,
  lockPracticeConcept,
  updatePracticeSystem,
} from './store.ts';

export { listCodeSystems, listConcepts, listModifiers, resolveCodes } from './store.ts';

export function codeSystemOf(row: CodeSystemRow): CodeSystem {
  return {
    object: 'code_system',
    id: row.id,
    url: row.url,
    name: row.name,
    title: row.title,
    description: row.description,
    owner: row.owner,
    usage: row.usage,
    status: row.status,
    updatedAt: new Date(row.updated_at).toISOString(),
  };
}

export function conceptOf(row: ConceptRow): CodeConcept {
  return {
    object: 'code_concept',
    id: row.id,
    codeSystemId: row.code_system_id,
    system: row.system,
    code: row.code,
    display: row.display,
    definition: row.definition,
    usage: [...new Set([...row.system_usage, ...row.usage])],
    defaultPrice: row.default_price === null ? null : Number(row.default_price),
    currency: row.currency,
    updatedAt: new Date(row.updated_at).toISOString(),
  };
}

export function slugOf(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
}

export function practiceSystemUrl(practiceId: string, name: string): string {
  return `urn:service:organization:${practiceId}:codesystem:${slugOf(name)}`;
}

export async function readCodeSystem(trx: Trx, practiceId: string, id: string): Promise<CodeSystemRow> {
  const row = await findCodeSystem(trx, practiceId, id);
  if (!row) throw notFound('Code system');
  return row;
}

async function practiceSystem(
  trx: Trx,
  practiceId: string,
  id: string,
  action: string,
): Promise<CodeSystemRow> {
  const row = await readCodeSystem(trx, practiceId, id);
  if (row.owner !== 'practice') {
    throw new AppError(
      'business_rule',
      `${row.name} is a published code system; only a practice's own system can ${action}.`,
    );
  }
  return row;
}

/**
 * The wrong fields of a code system request by the service's rules (those its schema let through):
 * a practice's existing system keeps its name. (That a name makes a url, having a letter or digit of
 * its own slug, is its schema's pattern, SYSTEM_NAME_PATTERN.)
 */
export function codeSystemRuleErrors(
  request: Partly<CodeSystemRequest>,
  current?: CodeSystemRow,
): FieldError[] {
  if (request.name === undefined) return [];
  if (current && request.name !== current.name) {
    return [
      {
        field: 'name',
        code: 'invalid',
        message: `name cannot change once the system exists (it is "${current.name}")`,
      },
    ];
  }
  return [];
}

/** The rule errors of replacing a system; a published or missing one has none to add (it is refused whole). */
export async function replaceRuleErrors(
  trx: Trx,
  practiceId: string,
  id: string,
  request: Partly<CodeSystemRequest>,
): Promise<FieldError[]> {
  return codeSystemRuleErrors(request, await practiceSystem(trx, practiceId, id, 'be changed'));
}

export async function createCodeSystem(trx: Trx, practiceId: string, request: CodeSystemRequest, now: Date) {
  const errors = codeSystemRuleErrors(request);
  if (errors.length > 0) throw fieldErrors(errors);
  const url = practiceSystemUrl(practiceId, request.name);
  const id = newId('codeSystem');
  const inserted = await insertPracticeSystem(trx, {
    practice_id: practiceId,
    id,
    url,
    name: request.name,
    title: request.title ?? null,
    description: request.description ?? null,
    usage: request.usage,
    created_at: now,
    updated_at: now,
  });
  if (!inserted) {
    const existing = await findPracticeSystemByUrl(trx, practiceId, url);
    throw new AppError(
      'duplicate',
      `The practice already has a code system with url ${url}: ${existing.id}.`,
    );
  }
  return readCodeSystem(trx, practiceId, id);
}

export async function replaceCodeSystem(
  trx: Trx,
  practiceId: string,
  id: string,
  request: CodeSystemRequest,
  now: Date,
) {
  const row = await practiceSystem(trx, practiceId, id, 'be changed');
  const errors = codeSystemRuleErrors(request, row);
  if (errors.length > 0) throw fieldErrors(errors);
  await updatePracticeSystem(trx, practiceId, id, {
    title: request.title ?? null,
    description: request.description ?? null,
    usage: request.usage,
    updated_at: now,
  });
  return readCodeSystem(trx, practiceId, id);
}

export async function addConcept(
  trx: Trx,
  practiceId: string,
  currency: string,
  systemId: string,
  request: CodeConceptRequest,
  now: Date,
): Promise<ConceptRow> {
  const system = await practiceSystem(trx, practiceId, systemId, 'take new codes');
  const defaultPrice = request.defaultPrice ?? null;
  // The code in the way may be deleted before it is named: then the insert is tried again.
  const row = await insertUnlessTaken(
    () =>
      insertPracticeConcept(trx, {
        practice_id: practiceId,
        id: newId('codeConcept'),
        code_system_id: system.id,
        code: request.code,
        display: request.display,
        definition: request.definition ?? null,
        usage: request.usage ?? [],
        default_price: defaultPrice,
        currency: defaultPrice === null ? null : currency,
        created_at: now,
        updated_at: now,
      }),
    async () => {
      const existing = await findPracticeConceptByCode(trx, practiceId, system.id, request.code);
      if (existing) {
        throw new AppError(
          'duplicate',
          `Code ${request.code} already exists in ${system.name}: ${existing.id}.`,
        );
      }
    },
  );
  return { ...row, system: system.url, system_usage: system.usage };
}

export async function deleteConcept(trx: Trx, practiceId: string, systemId: string, conceptId: string) {
  const system = await readCodeSystem(trx, practiceId, systemId);
  const concept =
    system.owner === 'practice'
      ? await lockPracticeConcept(trx, practiceId, system.id, conceptId)
      : await findPublishedConcept(trx, system.id, conceptId);
  // The practice's code is locked (FOR UPDATE above) before its uses are looked for: a request that
  // records it holds it (FOR KEY SHARE, resolveCodes) until it commits, so that use is seen here.
  if (!concept) throw notFound('Code');
  if (system.owner !== 'practice') {
    throw new AppError(
      'business_rule',
      `${system.name} is a published code system; its codes cannot be deleted.`,
    );
  }
  const uses = await codeUses(trx, practiceId, system.url, concept.code);
  if (uses.length > 0) {
    throw new AppError(
      'business_rule',
      `Code ${concept.code} is still used on ${uses.join(' and on ')}; it cannot be deleted.`,
    );
  }
  await deletePracticeConcept(trx, practiceId, concept.id);
  return { object: 'code_concept' as const, id: concept.id, deleted: true as const };
}

/** One code of a system the practice can see. */
export async function readConcept(trx: Trx, practiceId: string, systemId: string, conceptId: string) {
  const system = await readCodeSystem(trx, practiceId, systemId);
  const [row] = await listConcepts(trx, practiceId, system, { id: conceptId }, undefined, 1);
  if (!row) throw notFound('Code');
  return row;
}
