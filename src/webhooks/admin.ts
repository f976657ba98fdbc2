// The operator's side of webhooks: endpoints (create with the secret shown once, list, read, update,
// disable, enable, rotate the secret, delete; the answers that carry a secret are kept for an
// Idempotency-Key's replay only sealed), the attempt log per endpoint and per event, manual
// redelivery of one event, and recovery of everything that failed (or still retries) since a time.
import { type Static, Type } from 'typebox';
import { defineAdminRoute } from '../api/admin-route.ts';
import { EVENT_TYPES } from '../events/schemas.ts';
import { pageOf, wholeList } from '../platform/http/cursor.ts';
import { OffsetDateTime } from '../platform/http/date-time.ts';
import { AppError, notFound } from '../platform/http/errors.ts';
import { Enum, ListOf, Nullable, PagingQuery } from '../platform/http/schema.ts';
import { getPractice } from '../practices/service.ts';
import { WEBHOOK_URL_PATTERN } from './address-guard.ts';
import {
  createEndpoint,
  deleteEndpoint,
  endpointOf,
  findEndpoint,
  rotateSecret,
  setEndpointEnabled,
  updateEndpoint,
} from './endpoints.ts';
import { queueDeliveries } from './outbox.ts';
import {
  type AttemptRow,
  cancelPendingDeliveries,
  endpointAttempts,
  endpointsTakingEvent,
  eventAttempts,
  findEvent,
  listEndpoints,
  undeliveredEventsSince,
} from './service.ts';

const Id = Type.String({ minLength: 1, maxLength: 100 });
const PracticeParam = Type.Object({ practiceId: Id }, { additionalProperties: false });
const EndpointParams = Type.Object({ practiceId: Id, endpointId: Id }, { additionalProperties: false });
const EventParams = Type.Object({ practiceId: Id, eventId: Id }, { additionalProperties: false });

const EndpointRequest = Type.Object(
  {
    url: Type.String({
      minLength: 1,
      maxLength: 2000,
      pattern: WEBHOOK_URL_PATTERN,
      description:
        'https URL reaching a public address (http and private addresses only with WEBHOOK_ALLOW_PRIVATE).',
    }),
    eventTypes: Type.Optional(
      Type.Array(Enum(EVENT_TYPES), {
        uniqueItems: true,
        description: 'Event types to send; none or empty = all.',
      }),
    ),
  },
  { title: 'WebhookEndpointRequest', additionalProperties: false },
);

const Endpoint = Type.Object(
  {
    object: Type.Literal('webhook_endpoint'),
    id: Type.String(),
    practiceId: Type.String(),
    url: Type.String(),
    eventTypes: Type.Array(Type.String()),
    enabled: Type.Boolean(),
    disabledReason: Nullable(Type.String()),
    lastSuccessAt: Nullable(Type.String({ format: 'date-time' })),
    failingSince: Nullable(Type.String({ format: 'date-time' })),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
    secret: Type.Optional(
      Type.String({ description: 'The signing secret (`whsec_...`): shown only when created or rotated.' }),
    ),
  },
  { title: 'WebhookEndpoint' },
);

export const Attempt = Type.Object(
  {
    object: Type.Literal('webhook_attempt'),
    id: Type.String(),
    deliveryId: Type.String(),
    endpointId: Type.String(),
    eventId: Type.String(),
    eventType: Type.String(),
    attemptNumber: Type.Integer(),
    attemptedAt: Type.String({ format: 'date-time' }),
    statusCode: Nullable(Type.Integer()),
    durationMs: Type.Integer(),
    responseBody: Nullable(Type.String({ description: 'The first 1 KB of what the receiver answered.' })),
    error: Nullable(Type.String()),
    nextAttemptAt: Nullable(Type.String({ format: 'date-time' })),
  },
  { title: 'WebhookAttempt' },
);
export type Attempt = Static<typeof Attempt>;

export function attemptOf(row: AttemptRow): Attempt {
  return {
    object: 'webhook_attempt',
    id: row.id,
    deliveryId: row.delivery_id,
    endpointId: row.endpoint_id,
    eventId: row.event_id,
    eventType: row.type,
    attemptNumber: row.attempt_number,
    attemptedAt: new Date(row.attempted_at).toISOString(),
    statusCode: row.status_code,
    durationMs: row.duration_ms,
    responseBody: row.response_body,
    error: row.error,
    nextAttemptAt: row.next_attempt_at ? new Date(row.next_attempt_at).toISOString() : null,
  };
}

const DeliveryResult = Type.Object({
  object: Type.Literal('redelivery'),
  queued: Type.Integer({ description: 'How many deliveries were queued.' }),
  deliveryIds: Type.Array(Type.String()),
});

const RecoveryResult = Type.Object({
  ...DeliveryResult.properties,
  failed: Type.Integer({ description: 'Of those queued, events whose earlier delivery failed for good.' }),
  retrying: Type.Integer({
    description: 'Of those queued, events whose earlier delivery still waited for an automatic retry.',
  }),
});

export const webhookAdminRoutes = [
  defineAdminRoute({
    method: 'POST',
    url: '/practices/:practiceId/webhook-endpoints',
    operationId: 'adminCreateWebhookEndpoint',
    cli: { command: 'webhooks create', flags: { url: 'webhook-url' } },
    summary: 'Register a webhook endpoint',
    description:
      'The answer carries `secret` (`whsec_...`) this once; it is stored encrypted, as is the answer an Idempotency-Key replays (24 hours). Deliveries are signed with Standard Webhooks.',
    params: PracticeParam,
    body: EndpointRequest,
    answerHoldsSecret: true,
    successStatus: 201,
    response: Endpoint,
    handler: async ({ trx, deps, params, body, now }) => {
      await getPractice(trx, params.practiceId);
      const { row, secret } = await createEndpoint(
        trx,
        deps.secrets,
        deps.config.webhookAllowPrivate,
        params.practiceId,
        body,
        now,
      );
      return {
        body: endpointOf(row, secret),
        location: `/admin/v1/practices/${params.practiceId}/webhook-endpoints/${row.id}`,
        audit: { practiceId: params.practiceId, resourceType: 'webhook_endpoint', resourceId: row.id },
      };
    },
  }),
  defineAdminRoute({
    method: 'GET',
    url: '/practices/:practiceId/webhook-endpoints',
    operationId: 'adminListWebhookEndpoints',
    cli: { command: 'webhooks list' },
    summary: "List a practice's webhook endpoints",
    params: PracticeParam,
    successStatus: 200,
    response: ListOf(Endpoint, 'WebhookEndpointList'),
    handler: async ({ trx, params }) => {
      await getPractice(trx, params.practiceId);
      const rows = await listEndpoints(trx, params.practiceId);
      return {
        body: wholeList(rows.map((r) => endpointOf(r))),
      };
    },
  }),
  defineAdminRoute({
    method: 'GET',
    url: '/practices/:practiceId/webhook-endpoints/:endpointId',
    operationId: 'adminGetWebhookEndpoint',
    cli: { command: 'webhooks get' },
    summary: 'Read a webhook endpoint',
    params: EndpointParams,
    successStatus: 200,
    response: Endpoint,
    handler: async ({ trx, params }) => ({
      body: endpointOf(await findEndpoint(trx, params.practiceId, params.endpointId)),
    }),
  }),
  defineAdminRoute({
    method: 'PUT',
    url: '/practices/:practiceId/webhook-endpoints/:endpointId',
    operationId: 'adminUpdateWebhookEndpoint',
    cli: { command: 'webhooks update', flags: { url: 'webhook-url' } },
    summary: "Replace a webhook endpoint's url and event types",
    params: EndpointParams,
    body: EndpointRequest,
    successStatus: 200,
    response: Endpoint,
    handler: async ({ trx, deps, params, body, now }) => {
      const row = await updateEndpoint(
        trx,
        deps.config.webhookAllowPrivate,
        params.practiceId,
        params.endpointId,
        body,
        now,
      );
      return {
        body: endpointOf(row),
        audit: { practiceId: params.practiceId, resourceType: 'webhook_endpoint', resourceId: row.id },
      };
    },
  }),
  ...(['disable', 'enable'] as const).map((action) =>
    defineAdminRoute({
      method: 'POST',
      url: `/practices/:practiceId/webhook-endpoints/:endpointId/${action}`,
      operationId: action === 'disable' ? 'adminDisableWebhookEndpoint' : 'adminEnableWebhookEndpoint',
      cli: { command: `webhooks ${action}` },
      summary: action === 'disable' ? 'Stop deliveries to an endpoint' : 'Resume deliveries to an endpoint',
      params: EndpointParams,
      successStatus: 200,
      response: Endpoint,
      handler: async ({ trx, params, now }) => {
        const row = await setEndpointEnabled(
          trx,
          params.practiceId,
          params.endpointId,
          action === 'enable',
          'Disabled by the operator.',
          now,
        );
        return {
          body: endpointOf(row),
          audit: { practiceId: params.practiceId, resourceType: 'webhook_endpoint', resourceId: row.id },
        };
      },
    }),
  ),
  defineAdminRoute({
    method: 'POST',
    url: '/practices/:practiceId/webhook-endpoints/:endpointId/rotate-secret',
    operationId: 'adminRotateWebhookSecret',
    cli: { command: 'webhooks rotate-secret' },
    summary: "Rotate an endpoint's signing secret",
    description:
      'Answers the new secret once (stored encrypted, as is the answer an Idempotency-Key replays for 24 hours). During the overlap (WEBHOOK_SECRET_OVERLAP_SECONDS, default 24 h) each delivery carries both signatures, space-separated, so the receiver can switch without losing any.',
    params: EndpointParams,
    answerHoldsSecret: true,
    successStatus: 200,
    response: Endpoint,
    handler: async ({ trx, deps, params, now }) => {
      const { row, secret } = await rotateSecret(
        trx,
        deps.secrets,
        params.practiceId,
        params.endpointId,
        deps.config.webhookSecretOverlapSeconds,
        now,
      );
      return {
        body: endpointOf(row, secret),
        audit: { practiceId: params.practiceId, resourceType: 'webhook_endpoint', resourceId: row.id },
      };
    },
  }),
  defineAdminRoute({
    method: 'DELETE',
    url: '/practices/:practiceId/webhook-endpoints/:endpointId',
    operationId: 'adminDeleteWebhookEndpoint',
    cli: { command: 'webhooks delete' },
    summary: 'Delete a webhook endpoint and its delivery log',
    params: EndpointParams,
    successStatus: 200,
    response: Type.Object({
      object: Type.Literal('webhook_endpoint'),
      id: Type.String(),
      deleted: Type.Literal(true),
    }),
    handler: async ({ trx, params }) => {
      await deleteEndpoint(trx, params.practiceId, params.endpointId);
      return {
        body: { object: 'webhook_endpoint' as const, id: params.endpointId, deleted: true as const },
        audit: {
          practiceId: params.practiceId,
          resourceType: 'webhook_endpoint',
          resourceId: params.endpointId,
        },
      };
    },
  }),
  defineAdminRoute({
    method: 'GET',
    url: '/practices/:practiceId/webhook-endpoints/:endpointId/deliveries',
    operationId: 'adminListEndpointAttempts',
    cli: { command: 'webhooks attempts' },
    summary: "An endpoint's delivery attempts, newest first",
    params: EndpointParams,
    querystring: Type.Object(PagingQuery, { additionalProperties: false }),
    successStatus: 200,
    response: ListOf(Attempt, 'WebhookAttemptList'),
    handler: async ({ trx, deps, params, query }) => {
      await findEndpoint(trx, params.practiceId, params.endpointId);
      const limit = query.limit ?? 50;
      const filters = { endpointId: params.endpointId };
      const position = query.cursor
        ? deps.cursors.decode('webhook-attempts', filters, query.cursor)
        : undefined;
      const rows = await endpointAttempts(trx, params.practiceId, params.endpointId, position, limit);
      return {
        body: pageOf(
          rows,
          limit,
          attemptOf,
          (r) => [new Date(r.attempted_at).toISOString(), r.id],
          (p) => deps.cursors.encode('webhook-attempts', filters, p),
        ),
      };
    },
  }),
  defineAdminRoute({
    method: 'GET',
    url: '/practices/:practiceId/events/:eventId/deliveries',
    operationId: 'adminListEventAttempts',
    cli: { command: 'events attempts' },
    summary: "An event's delivery attempts to every endpoint, oldest first",
    params: EventParams,
    successStatus: 200,
    response: ListOf(Attempt, 'WebhookEventAttemptList'),
    handler: async ({ trx, params }) => {
      if (!(await findEvent(trx, params.practiceId, params.eventId))) throw notFound('Event');
      const rows = await eventAttempts(trx, params.practiceId, params.eventId);
      return {
        body: wholeList(rows.map(attemptOf)),
      };
    },
  }),
  defineAdminRoute({
    method: 'POST',
    url: '/practices/:practiceId/events/:eventId/redeliver',
    operationId: 'adminRedeliverEvent',
    cli: { command: 'events redeliver' },
    summary: 'Deliver one event again',
    description:
      'Queues a new delivery (attempt 1 now) to each enabled endpoint that takes the event type, or only to `endpointId`.',
    params: EventParams,
    body: Type.Object({ endpointId: Type.Optional(Id) }, { additionalProperties: false }),
    bodyOptional: true,
    successStatus: 202,
    response: DeliveryResult,
    handler: async ({ trx, params, body, now }) => {
      const event = await findEvent(trx, params.practiceId, params.eventId);
      if (!event) throw notFound('Event');
      const endpoints = await endpointsTakingEvent(trx, params.practiceId, event.type, {
        endpointId: body.endpointId,
      });
      if (body.endpointId && endpoints.length === 0) throw notFound('Webhook endpoint');
      const disabled = endpoints.find((e) => !e.enabled);
      if (body.endpointId && disabled)
        throw new AppError('business_rule', 'The endpoint is disabled; enable it first.');
      const ids = await queueDeliveries(
        trx,
        params.practiceId,
        endpoints.filter((e) => e.enabled).map((e) => ({ endpointId: e.id, eventId: event.id })),
        now,
      );
      return {
        body: { object: 'redelivery' as const, queued: ids.length, deliveryIds: ids },
        audit: { practiceId: params.practiceId, resourceType: 'event', resourceId: event.id },
      };
    },
  }),
  defineAdminRoute({
    method: 'POST',
    url: '/practices/:practiceId/webhook-endpoints/:endpointId/recover',
    operationId: 'adminRecoverFailedDeliveries',
    cli: { command: 'webhooks recover' },
    summary: 'Deliver again everything that failed since a time',
    description:
      'Queues a new delivery for every event whose delivery to this endpoint since `since` failed for good (its retries used up, or cancelled when the endpoint was turned off) and, unless `includeRetrying` is false, every event whose delivery failed and still waits for an automatic retry; none of them delivered since. The answer counts each kind (`failed`, `retrying`). The automatic retry still waiting for such an event is cancelled: the new delivery takes its place, so the receiver gets the event once more, not twice. Enable the endpoint first.',
    params: EndpointParams,
    body: Type.Object(
      {
        since: OffsetDateTime(),
        includeRetrying: Type.Optional(
          Type.Boolean({
            description:
              'Also recover deliveries that failed and still wait for an automatic retry (default true); false recovers only those whose retries are used up.',
          }),
        ),
      },
      { additionalProperties: false },
    ),
    successStatus: 202,
    response: RecoveryResult,
    handler: async ({ trx, params, body, now }) => {
      // Locked, so that it is still there and still enabled when its deliveries are queued.
      const endpoint = await findEndpoint(trx, params.practiceId, params.endpointId, true);
      if (!endpoint.enabled)
        throw new AppError(
          'business_rule',
          'The endpoint is disabled; enable it before recovering deliveries.',
        );
      const undelivered = await undeliveredEventsSince(
        trx,
        params.practiceId,
        endpoint.id,
        new Date(body.since),
        body.includeRetrying ?? true,
      );
      // A retry still waiting is replaced by the new delivery, not doubled by it.
      const replaced = undelivered.filter((u) => u.retrying).map((u) => u.eventId);
      await cancelPendingDeliveries(trx, params.practiceId, endpoint.id, replaced, now);
      const ids = await queueDeliveries(
        trx,
        params.practiceId,
        undelivered.map(({ eventId }) => ({ endpointId: endpoint.id, eventId })),
        now,
      );
      const retrying = undelivered.filter((u) => u.retrying).length;
      return {
        body: {
          object: 'redelivery' as const,
          queued: ids.length,
          deliveryIds: ids,
          failed: undelivered.length - retrying,
          retrying,
        },
        audit: { practiceId: params.practiceId, resourceType: 'webhook_endpoint', resourceId: endpoint.id },
      };
    },
  }),
];
