// Declares the operator API's read of a practice's audit log.
import { Type } from 'typebox';
import { defineAdminRoute } from '../api/admin-route.ts';
import { pageOf } from '../platform/http/cursor.ts';
import { OffsetDateTime } from '../platform/http/date-time.ts';
import { AppError } from '../platform/http/errors.ts';
import { IdParam, PagingQuery } from '../platform/http/schema.ts';
import { AuditEventList } from './schemas.ts';
import * as admin from './service.ts';

const PracticeParam = IdParam('practiceId', 'Practice id (`org_...`).');

export const auditAdminRoutes = [
  defineAdminRoute({
    method: 'GET',
    url: '/practices/:practiceId/audit-events',
    operationId: 'adminListAuditEvents',
    cli: { command: 'audit list' },
    summary: "Read a practice's audit log, newest first",
    description:
      "Filters narrow it, each one that is given must hold: `clientId`, `method` (e.g. `POST`; `JOB` for the service's own work), `path` (part of the route template, e.g. `/claim/resubmit`), `status` (the HTTP status answered) and the time it happened (`since` inclusive, `until` exclusive). A cursor holds its filters: pass the same ones with it.",
    params: PracticeParam,
    querystring: Type.Object(
      {
        ...PagingQuery,
        clientId: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
        method: Type.Optional(Type.String({ minLength: 1, maxLength: 10, pattern: '^[A-Za-z]+$' })),
        path: Type.Optional(Type.String({ minLength: 1, maxLength: 300 })),
        status: Type.Optional(Type.Integer({ minimum: 0, maximum: 599 })),
        since: Type.Optional(OffsetDateTime()),
        until: Type.Optional(OffsetDateTime()),
      },
      { additionalProperties: false },
    ),
    successStatus: 200,
    response: AuditEventList,
    handler: async ({ trx, deps, params, query }) => {
      const limit = query.limit ?? 50;
      const { limit: _limit, cursor: _cursor, ...narrowed } = query;
      const filters = { practiceId: params.practiceId, ...narrowed };
      const position = query.cursor ? deps.cursors.decode('audit-events', filters, query.cursor) : undefined;
      const beforeId = position === undefined ? undefined : Number(position[0]);
      if (beforeId !== undefined && !Number.isSafeInteger(beforeId)) {
        throw new AppError('invalid_cursor', 'The cursor is not valid for this list.');
      }
      const rows = await admin.listAuditEvents(
        trx,
        params.practiceId,
        {
          ...narrowed,
          since: narrowed.since ? new Date(narrowed.since) : undefined,
          until: narrowed.until ? new Date(narrowed.until) : undefined,
        },
        limit,
        beforeId,
      );
      return {
        body: pageOf(
          rows,
          limit,
          admin.auditEventOf,
          (row) => [String(row.id)],
          (p) => deps.cursors.encode('audit-events', filters, p),
        ),
      };
    },
  }),
];
