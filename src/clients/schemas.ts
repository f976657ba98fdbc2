// Owns the shapes of integration clients and their API keys as the operator API shows them.
import { Type } from 'typebox';
import { ALLOWED_IP_PATTERN } from '../auth/ip-allow-list.ts';
import { PERMISSIONS } from '../auth/permissions.ts';
import { OffsetDateTime } from '../platform/http/date-time.ts';
import { Enum, ListOf, Nullable, Text } from '../platform/http/schema.ts';

export const ClientRequest = Type.Object(
  {
    name: Text(200),
    permissions: Type.Array(Enum(PERMISSIONS), { maxItems: PERMISSIONS.length, uniqueItems: true }),
    allowedIps: Type.Optional(
      Type.Array(
        Type.String({
          minLength: 2,
          maxLength: 64,
          pattern: ALLOWED_IP_PATTERN,
          description: 'IPv4 or IPv6 address or CIDR range.',
        }),
        {
          maxItems: 100,
        },
      ),
    ),
    rateLimitPerMinute: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 10_000_000 }))),
  },
  { title: 'ClientRequest', additionalProperties: false },
);

export const Client = Type.Object(
  {
    object: Type.Literal('client'),
    id: Type.String(),
    practiceId: Type.String(),
    name: Type.String(),
    permissions: Type.Array(Type.String()),
    allowedIps: Type.Array(Type.String()),
    rateLimitPerMinute: Nullable(Type.Integer()),
    status: Enum(['active', 'suspended']),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  { title: 'Client' },
);

/** The longest grace an old key may be given when a new one replaces it: 30 days. */
export const MAX_GRACE_SECONDS = 30 * 24 * 3600;

export const KeyRequest = Type.Object(
  {
    expiresAt: Type.Optional(Nullable(OffsetDateTime())),
    expireOldKeyId: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        description:
          'A key of the same client this one replaces: it is set to expire after `graceSeconds` (an expiry it already has that comes sooner is kept), so the client can switch without downtime. An expired key is refused with the same 401 as a revoked one.',
      }),
    ),
    graceSeconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_GRACE_SECONDS,
        description:
          'How long the replaced key keeps working (with `expireOldKeyId`; default 86400, one day).',
      }),
    ),
  },
  { title: 'ApiKeyRequest', additionalProperties: false },
);

export const KeyExpiryRequest = Type.Object(
  {
    expiresAt: OffsetDateTime(
      'When the key stops working; now or earlier stops it at once. A later expiry it already has is shortened, never lengthened.',
    ),
  },
  { title: 'ApiKeyExpiryRequest', additionalProperties: false },
);

export const ApiKey = Type.Object(
  {
    object: Type.Literal('api_key'),
    id: Type.String(),
    clientId: Type.String(),
    practiceId: Type.String(),
    key: Type.Optional(
      Type.String({ description: 'The key itself: shown only in the answer that issues it.' }),
    ),
    expiresAt: Nullable(Type.String({ format: 'date-time' })),
    revokedAt: Nullable(Type.String({ format: 'date-time' })),
    createdAt: Type.String({ format: 'date-time' }),
    createdBy: Nullable(
      Type.String({
        description:
          'Who issued it, as the admin API knows the caller (`operator:` and a fingerprint of the admin token); null for keys issued before this was recorded.',
      }),
    ),
    lastUsedAt: Nullable(
      Type.String({
        format: 'date-time',
        description:
          'When a request last got in with it, to within a minute (it is written at most once a minute).',
      }),
    ),
    replacedKey: Type.Optional(
      Type.Object(
        { id: Type.String(), expiresAt: Nullable(Type.String({ format: 'date-time' })) },
        {
          description:
            'On the answer that issues a key with `expireOldKeyId`: the old key and when it expires.',
        },
      ),
    ),
  },
  { title: 'ApiKey' },
);

export const ClientList = ListOf(Client, 'ClientList');
export const ApiKeyList = ListOf(ApiKey, 'ApiKeyList');
