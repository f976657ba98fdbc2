// Declares the operator's dashboard of one practice for one day; the figures are read in
// dashboard-reads.ts.
import { Type } from 'typebox';
import { defineAdminRoute } from '../api/admin-route.ts';
import { dateIn } from '../platform/clock.ts';
import { CalendarDate } from '../platform/http/schema.ts';
import { getPractice } from '../practices/service.ts';
import { Dashboard, dashboardOf } from './service.ts';

export const dashboardAdminRoutes = [
  defineAdminRoute({
    method: 'GET',
    url: '/practices/:practiceId/dashboard',
    operationId: 'adminGetDashboard',
    cli: { command: 'dashboard get' },
    summary: "A practice's day at a glance: claims by status, money claimed and paid, failing webhooks",
    params: Type.Object(
      { practiceId: Type.String({ minLength: 1, maxLength: 100 }) },
      { additionalProperties: false },
    ),
    querystring: Type.Object(
      { date: Type.Optional(CalendarDate) },
      {
        additionalProperties: false,
        description: "date: the day to show; default today in the practice's zone.",
      },
    ),
    successStatus: 200,
    response: Dashboard,
    handler: async ({ trx, params, query, now }) => {
      const practice = await getPractice(trx, params.practiceId);
      return {
        body: await dashboardOf(trx, params.practiceId, query.date ?? dateIn(practice.timezone, now)),
      };
    },
  }),
];
