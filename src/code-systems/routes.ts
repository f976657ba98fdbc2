// Declares the code system operations of the public API.
import { Type } from 'typebox';
import { defineApiRoute } from '../api/api-route.ts';
import { pageOf } from '../platform/http/cursor.ts';
import { Enum, IdParam, PagingQuery } from '../platform/http/schema.ts';
import {
  CodeConcept,
  CodeConceptList,
  CodeConceptRequest,
  CodeSystem,
  CodeSystemList,
  CodeSystemRequest,
  DeletedCodeConcept,
  ModifierList,
  USAGES,
} from './schemas.ts';
import {
  addConcept,
  codeSystemOf,
  codeSystemRuleErrors,
  conceptOf,
  createCodeSystem,
  deleteConcept,
  listCodeSystems,
  listConcepts,
  listModifiers,
  readCodeSystem,
  readConcept,
  replaceCodeSystem,
  replaceRuleErrors,
} from './service.ts';

const SystemParam = IdParam('codeSystemId', 'Code system id (`cs_...`).');
const ConceptParams = Type.Object(
  {
    codeSystemId: Type.String({ minLength: 1, maxLength: 100 }),
    conceptId: Type.String({ minLength: 1, maxLength: 100 }),
  },
  { additionalProperties: false },
);
const READ_ERRORS = [400, 401, 403, 404, 429, 500, 503];
const WRITE_ERRORS = [400, 401, 403, 404, 409, 413, 415, 422, 429, 500, 503];

export const codeSystemRoutes = [
  defineApiRoute({
    method: 'GET',
    url: '/code-systems',
    operationId: 'listCodeSystems',
    summary: 'List code systems',
    description: "Published systems first, then the practice's own, each by name.",
    tag: 'Code systems',
    permission: 'CODE_SYSTEMS:READ',
    resourceType: 'code_system',
    querystring: Type.Object(
      {
        usage: Type.Optional(Enum(USAGES)),
        owner: Type.Optional(
          Enum(['service', 'practice'], {
            description: "Only published systems, or only the practice's own.",
          }),
        ),
        ...PagingQuery,
      },
      { additionalProperties: false },
    ),
    successStatus: 200,
    response: CodeSystemList,
    errorStatuses: READ_ERRORS,
    handler: async ({ trx, deps, practiceId, query }) => {
      const limit = query.limit ?? 50;
      const filters = { usage: query.usage, owner: query.owner };
      const after = query.cursor ? deps.cursors.decode('code-systems', filters, query.cursor) : undefined;
      const rows = await listCodeSystems(
        trx,
        practiceId,
        filters,
        after as [number, string, string] | undefined,
        limit,
      );
      return {
        body: pageOf(
          rows,
          limit,
          codeSystemOf,
          (r) => [r.owner_rank, r.name, r.id],
          (p) => deps.cursors.encode('code-systems', filters, p),
        ),
      };
    },
  }),
  defineApiRoute({
    method: 'POST',
    url: '/code-systems',
    operationId: 'createCodeSystem',
    summary: "Create a practice's own code system",
    tag: 'Code systems',
    permission: 'CODE_SYSTEMS:CREATE',
    creates: true,
    resourceType: 'code_system',
    body: CodeSystemRequest,
    successStatus: 201,
    response: CodeSystem,
    errorStatuses: WRITE_ERRORS,
    fieldRules: async ({ body }) => codeSystemRuleErrors(body),
    handler: async ({ trx, practiceId, body, now }) => {
      const row = await createCodeSystem(trx, practiceId, body, now);
      return {
        body: codeSystemOf(row),
        location: `/api/v1/code-systems/${row.id}`,
        resource: { id: row.id },
      };
    },
  }),
  defineApiRoute({
    method: 'GET',
    url: '/code-systems/:codeSystemId',
    operationId: 'getCodeSystem',
    summary: 'Read a code system',
    tag: 'Code systems',
    permission: 'CODE_SYSTEMS:READ',
    resourceType: 'code_system',
    params: SystemParam,
    successStatus: 200,
    response: CodeSystem,
    errorStatuses: READ_ERRORS,
    handler: async ({ trx, practiceId, params }) => ({
      body: codeSystemOf(await readCodeSystem(trx, practiceId, params.codeSystemId)),
    }),
  }),
  defineApiRoute({
    method: 'PUT',
    url: '/code-systems/:codeSystemId',
    operationId: 'replaceCodeSystem',
    summary: "Replace a practice's own code system",
    description:
      'Full replacement. `name` cannot change (it makes the url). A published system answers 422 `business_rule`.',
    tag: 'Code systems',
    permission: 'CODE_SYSTEMS:UPDATE',
    resourceType: 'code_system',
    params: SystemParam,
    body: CodeSystemRequest,
    successStatus: 200,
    response: CodeSystem,
    errorStatuses: WRITE_ERRORS,
    fieldRules: ({ trx, practiceId, params, body }) =>
      replaceRuleErrors(trx, practiceId, params.codeSystemId, body),
    handler: async ({ trx, practiceId, params, body, now }) => ({
      body: codeSystemOf(await replaceCodeSystem(trx, practiceId, params.codeSystemId, body, now)),
    }),
  }),
  defineApiRoute({
    method: 'GET',
    url: '/code-systems/:codeSystemId/concepts',
    operationId: 'listCodeConcepts',
    summary: 'Look codes up in a code system',
    description:
      '`code` finds one code exactly; `search` matches part of the wording or of the code, ignoring case. Ordered by code.',
    tag: 'Code systems',
    permission: 'CODE_SYSTEMS:READ',
    resourceType: 'code_system',
    params: SystemParam,
    querystring: Type.Object(
      {
        code: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
        search: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
        ...PagingQuery,
      },
      { additionalProperties: false },
    ),
    successStatus: 200,
    response: CodeConceptList,
    errorStatuses: READ_ERRORS,
    handler: async ({ trx, deps, practiceId, params, query }) => {
      const system = await readCodeSystem(trx, practiceId, params.codeSystemId);
      const limit = query.limit ?? 50;
      const filters = { system: system.id, code: query.code, search: query.search };
      const after = query.cursor ? deps.cursors.decode('code-concepts', filters, query.cursor) : undefined;
      const rows = await listConcepts(
        trx,
        practiceId,
        system,
        filters,
        after as [string, string] | undefined,
        limit,
      );
      return {
        body: pageOf(
          rows,
          limit,
          conceptOf,
          (r) => [r.code, r.id],
          (p) => deps.cursors.encode('code-concepts', filters, p),
        ),
      };
    },
  }),
  defineApiRoute({
    method: 'GET',
    url: '/code-systems/:codeSystemId/modifiers',
    operationId: 'listCodeSystemModifiers',
    summary: "The modifiers of a code system's codes",
    description:
      "Tariff modifiers a line of this system can carry in `modifiers`, each with the percentage it adds to or takes off the line's total; ordered by code, paged like every list (`limit`, `cursor`). A system without modifiers answers an empty list. An unknown query parameter is 400 naming it; a cursor not issued by this list is 400 `invalid_cursor`.",
    tag: 'Code systems',
    permission: 'CODE_SYSTEMS:READ',
    resourceType: 'code_system',
    params: SystemParam,
    querystring: Type.Object({ ...PagingQuery }, { additionalProperties: false }),
    successStatus: 200,
    response: ModifierList,
    errorStatuses: [400, 401, 403, 404, 429, 500, 503],
    handler: async ({ trx, deps, practiceId, params, query }) => {
      const system = await readCodeSystem(trx, practiceId, params.codeSystemId);
      const limit = query.limit ?? 50;
      const filters = { system: system.id };
      const after = query.cursor
        ? String(deps.cursors.decode('code-system-modifiers', filters, query.cursor)[0])
        : undefined;
      // A system has a handful of modifiers: read in code order, paged after the cursor's code.
      const rows = (await listModifiers(trx, system.url))
        .sort((a, b) => (a.code < b.code ? -1 : a.code > b.code ? 1 : 0))
        .filter((r) => after === undefined || r.code > after);
      return {
        body: pageOf(
          rows.slice(0, limit + 1),
          limit,
          (r) => ({
            object: 'modifier' as const,
            system: r.system,
            code: r.code,
            display: r.display,
            percentBasisPoints: r.percent_basis_points,
          }),
          (r) => [r.code],
          (p) => deps.cursors.encode('code-system-modifiers', filters, p),
        ),
      };
    },
  }),
  defineApiRoute({
    method: 'POST',
    url: '/code-systems/:codeSystemId/concepts',
    operationId: 'addCodeConcept',
    summary: "Add a code to a practice's own code system",
    description:
      'A published system answers 422 `business_rule`; a code already in the system answers 409 `duplicate`.',
    tag: 'Code systems',
    permission: 'CODE_SYSTEMS:UPDATE',
    creates: true,
    resourceType: 'code_concept',
    params: SystemParam,
    body: CodeConceptRequest,
    successStatus: 201,
    response: CodeConcept,
    errorStatuses: WRITE_ERRORS,
    handler: async ({ trx, practiceId, auth, params, body, now }) => {
      const row = await addConcept(trx, practiceId, auth.practice.currency, params.codeSystemId, body, now);
      return {
        body: conceptOf(row),
        location: `/api/v1/code-systems/${params.codeSystemId}/concepts/${row.id}`,
        resource: { id: row.id },
      };
    },
  }),
  defineApiRoute({
    method: 'GET',
    url: '/code-systems/:codeSystemId/concepts/:conceptId',
    operationId: 'getCodeConcept',
    summary: 'Read one code of a code system',
    description: 'The address `POST /code-systems/{codeSystemId}/concepts` answers in `Location`.',
    tag: 'Code systems',
    permission: 'CODE_SYSTEMS:READ',
    resourceType: 'code_concept',
    params: ConceptParams,
    successStatus: 200,
    response: CodeConcept,
    errorStatuses: [401, 403, 404, 429, 500, 503],
    handler: async ({ trx, practiceId, params }) => ({
      body: conceptOf(await readConcept(trx, practiceId, params.codeSystemId, params.conceptId)),
      resource: { id: params.conceptId },
    }),
  }),
  defineApiRoute({
    method: 'DELETE',
    url: '/code-systems/:codeSystemId/concepts/:conceptId',
    operationId: 'deleteCodeConcept',
    summary: "Delete a code from a practice's own code system",
    description:
      "A code still on a patient's record (a visit's diagnoses or procedures, an invoice line or its diagnoses) or on a saved price answers 422 `business_rule`.",
    tag: 'Code systems',
    permission: 'CODE_SYSTEMS:UPDATE',
    resourceType: 'code_concept',
    params: ConceptParams,
    successStatus: 200,
    response: DeletedCodeConcept,
    errorStatuses: [401, 403, 404, 422, 429, 500, 503],
    handler: async ({ trx, practiceId, params }) => ({
      body: await deleteConcept(trx, practiceId, params.codeSystemId, params.conceptId),
      resource: { id: params.conceptId },
    }),
  }),
];
