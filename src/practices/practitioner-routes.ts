// Declares the public reads of the practice's practitioners, so an integrator can find the
// `practitionerId` a visit needs and the `X-Service-Performer` it may send.
import { Type } from 'typebox';
import { defineApiRoute } from '../api/api-route.ts';
import { pageOf } from '../platform/http/cursor.ts';
import { AppError, notFound } from '../platform/http/errors.ts';
import { IdParam, PagingQuery } from '../platform/http/schema.ts';
import { PublicPractitioner as Practitioner, PublicPractitionerList as PractitionerList } from './schemas.ts';
import { findPractitioner, listPractitionerRows, practitionerOf } from './service.ts';

/** The public form: the operator-side record without the practice id and creation time. */
function publicPractitioner(row: Parameters<typeof practitionerOf>[0]) {
  const { practiceId: _practice, createdAt: _created, ...rest } = practitionerOf(row);
  return rest;
}

export const practitionerRoutes = [
  defineApiRoute({
    method: 'GET',
    url: '/practitioners',
    operationId: 'listPractitioners',
    summary: "List the practice's practitioners",
    description:
      'Oldest first. A visit names one as `practitionerId`; `X-Service-Performer` names the one acting. `defaultSystems` are the code systems a coding without `system` is looked up in. `active` filters by whether the practitioner still works at the practice.',
    tag: 'Practitioners',
    permission: 'PRACTITIONERS:READ',
    resourceType: 'practitioner',
    querystring: Type.Object(
      {
        active: Type.Optional(Type.Boolean({ description: 'Only active (true) or inactive (false) ones.' })),
        ...PagingQuery,
      },
      { additionalProperties: false },
    ),
    successStatus: 200,
    response: PractitionerList,
    errorStatuses: [400, 401, 403, 429, 500, 503],
    handler: async ({ trx, deps, practiceId, query }) => {
      const limit = query.limit ?? 50;
      const filters = { active: query.active ?? null };
      const position = query.cursor ? deps.cursors.decode('practitioners', filters, query.cursor) : undefined;
      if (position && (typeof position[0] !== 'string' || typeof position[1] !== 'string')) {
        throw new AppError('invalid_cursor', 'The cursor is not valid for this list.');
      }
      const after = position ? { createdAt: position[0] as string, id: position[1] as string } : undefined;
      const rows = await listPractitionerRows(trx, practiceId, { active: query.active }, after, limit);
      return {
        body: pageOf(
          rows,
          limit,
          publicPractitioner,
          (r) => [r.created_at.toISOString(), r.id],
          (p) => deps.cursors.encode('practitioners', filters, p),
        ),
      };
    },
  }),
  defineApiRoute({
    method: 'GET',
    url: '/practitioners/:practitionerId',
    operationId: 'getPractitioner',
    summary: 'Read a practitioner',
    tag: 'Practitioners',
    permission: 'PRACTITIONERS:READ',
    resourceType: 'practitioner',
    params: IdParam('practitionerId', 'Practitioner id (`prt_...`).'),
    successStatus: 200,
    response: Practitioner,
    errorStatuses: [401, 403, 404, 429, 500, 503],
    handler: async ({ trx, practiceId, params }) => {
      const row = await findPractitioner(trx, practiceId, params.practitionerId);
      if (!row) throw notFound('Practitioner');
      return { body: publicPractitioner(row) };
    },
  }),
];
