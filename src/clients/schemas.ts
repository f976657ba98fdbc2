// Owns the shapes of integration clients and their API keys as the operator API shows them.
import { Type } from 'typebox';
import { PERMISSIONS } from '../auth/permissions.ts';
import { Enum, ListOf, Nullable, Text } from '../platform/http/schema.ts';

export const ClientRequest = Type.Object(
  {
    name: Text(200),
    permissions: Type.Array(Enum(PERMISSIONS), { maxItems: PERMISSIONS.length, uniqueItems: true }),
    allowedIps: Type.Optional(
      Type.Array(
        Type.String({ minLength: 2, maxLength: 64, description: 'IPv4 or IPv6 address or CIDR range.' }),
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

export const KeyRequest = Type.Object(
  { expiresAt: Type.Optional(Nullable(Type.String({ format: 'date-time' }))) },
  { title: 'ApiKeyRequest', additionalProperties: false },
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
  },
  { title: 'ApiKey' },
);

export const ClientList = ListOf(Client, 'ClientList');
export const ApiKeyList = ListOf(ApiKey, 'ApiKeyList');
