// Declares the operator API's read of a practice's audit log.
import { Type } from 'typebox';
import { defineAdminRoute } from '../api/admin-route.ts';
import { pageOf } from '../platform/http/cursor.ts';
import { AppError } from '../platform/http/errors.ts';
import { IdParam, PagingQuery } from '../platform/http/schema.ts';
import * as admin from './events.ts';
import { AuditEventList } from './schemas.ts';

const PracticeParam = IdParam('practiceId', 'Practice id (`org_...`).');

export const auditAdminRoutes = [
  defineAdminRoute({
    method: 'GET',
    url: '/practices/:practiceId/audit-events',
    operationId: 'adminListAuditEvents',
    cli: { command: 'audit list' },
    summary: "Read a practice's audit log, newest first",
    params: PracticeParam,
    querystring: Type.Object(PagingQuery, { additionalProperties: false }),
    successStatus: 200,
    response: AuditEventList,
    handler: async ({ trx, deps, params, query }) => {
      const limit = query.limit ?? 50;
      const filters = { practiceId: params.practiceId };
      const position = query.cursor ? deps.cursors.decode('audit-events', filters, query.cursor) : undefined;
      const beforeId = position === undefined ? undefined : Number(position[0]);
      if (beforeId !== undefined && !Number.isSafeInteger(beforeId)) {
        throw new AppError('invalid_cursor', 'The cursor is not valid for this list.');
      }
      const rows = await admin.listAuditEvents(trx, params.practiceId, limit, beforeId);
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
