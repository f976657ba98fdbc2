// Declares the events list of the public API: every event of the practice, oldest first, in the order
// a reader can rely on (see store.ts), the same body as its webhook deliveries; and one event by id.
import { Type } from 'typebox';
import { defineApiRoute } from '../api/api-route.ts';
import { pageOf } from '../platform/http/cursor.ts';
import { OffsetDateTime } from '../platform/http/date-time.ts';
import { AppError } from '../platform/http/errors.ts';
import { Enum, IdParam, PagingQuery } from '../platform/http/schema.ts';
import { EVENT_TYPES, Event, EventList, eventBody } from './schemas.ts';
import { EVENT_RETENTION_DAYS, eventRow, listEventRows, retainedSince } from './service.ts';

const READ_ERRORS = [400, 401, 403, 404, 429, 500, 503];

export const eventRoutes = [
  defineApiRoute({
    method: 'GET',
    url: '/events',
    operationId: 'listEvents',
    summary: 'List events, oldest first',
    description: `Every event the service emitted for the practice in the last ${EVENT_RETENTION_DAYS} days, each with the body its webhook deliveries carry, oldest first. To catch up after downtime, page to the end, keep the \`id\` of the last event received and send it as \`after\` next time: an event is listed only once no event that could come before it is still being written, so none is ever skipped. \`type\` (repeatable) keeps those types; \`createdSince\` keeps events recorded at or after that time.`,
    tag: 'Events',
    permission: 'EVENTS:READ',
    resourceType: 'event',
    querystring: Type.Object(
      {
        type: Type.Optional(
          Type.Array(Enum(EVENT_TYPES), {
            minItems: 1,
            maxItems: EVENT_TYPES.length,
            uniqueItems: true,
            description: 'Event types to keep; repeat the parameter for several.',
          }),
        ),
        createdSince: Type.Optional(OffsetDateTime()),
        after: Type.Optional(
          Type.String({
            minLength: 1,
            maxLength: 100,
            description: 'Id of the last event received: the list starts after it.',
          }),
        ),
        ...PagingQuery,
      },
      { additionalProperties: false },
    ),
    successStatus: 200,
    response: EventList,
    errorStatuses: [400, 401, 403, 429, 500, 503],
    handler: async ({ trx, deps, practiceId, query, now }) => {
      const limit = query.limit ?? 50;
      const types = query.type ? [...query.type].sort() : undefined;
      const filters = { type: types, createdSince: query.createdSince, after: query.after };
      let from = query.cursor ? deps.cursors.decode('events', filters, query.cursor) : undefined;
      if (from && (typeof from[0] !== 'string' || typeof from[1] !== 'string')) {
        throw new AppError('invalid_cursor', 'The cursor is not valid for this list.');
      }
      if (!from && query.after) {
        const last = await eventRow(trx, practiceId, query.after, retainedSince(now));
        if (!last) {
          const kept = `the last ${EVENT_RETENTION_DAYS} days`;
          throw new AppError('invalid_request', `after names no event of ${kept}.`, {
            errors: [{ field: 'after', code: 'invalid', message: `names no event of ${kept}` }],
          });
        }
        from = [last.stamp.toISOString(), last.seq];
      }
      const rows = await listEventRows(
        trx,
        practiceId,
        {
          ...(types ? { types } : {}),
          ...(query.createdSince ? { createdSince: new Date(query.createdSince) } : {}),
          retainedSince: retainedSince(now),
        },
        from ? { stamp: new Date(from[0] as string), seq: from[1] as string } : undefined,
        limit,
      );
      return {
        body: pageOf(
          rows,
          limit,
          (row) => eventBody(row, deps.config.publicBaseUrl),
          (row) => [row.stamp.toISOString(), row.seq],
          (position) => deps.cursors.encode('events', filters, position),
        ),
      };
    },
  }),
  defineApiRoute({
    method: 'GET',
    url: '/events/:eventId',
    operationId: 'getEvent',
    summary: 'Read an event',
    description: `One event of the last ${EVENT_RETENTION_DAYS} days, the same body as its webhook deliveries.`,
    tag: 'Events',
    permission: 'EVENTS:READ',
    resourceType: 'event',
    params: IdParam('eventId', 'Event id (`evt_...`), the `webhook-id` of its deliveries.'),
    successStatus: 200,
    response: Event,
    errorStatuses: READ_ERRORS,
    handler: async ({ trx, deps, practiceId, params, now }) => {
      const row = await eventRow(trx, practiceId, params.eventId, retainedSince(now));
      if (!row) throw new AppError('not_found', 'No such event.');
      return { body: eventBody(row, deps.config.publicBaseUrl), resource: { id: row.id } };
    },
  }),
];
