// Owns the shapes of the operator (admin) API: practices, practitioners, clients, keys, audit events.
import { Type } from 'typebox';
import { PERMISSIONS } from '../auth/permissions.ts';
import { Enum, ListOf, Nullable } from '../platform/http/schema.ts';

const Text = (max: number) => Type.String({ minLength: 1, maxLength: max });

export const PracticeRequest = Type.Object(
  {
    name: Text(200),
    currency: Type.Optional(
      Type.String({ pattern: '^[A-Z]{3}$', default: 'ZAR', description: 'ISO 4217; default ZAR.' }),
    ),
    timezone: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        default: 'Africa/Johannesburg',
        description: 'IANA time zone.',
      }),
    ),
  },
  { title: 'PracticeRequest', additionalProperties: false },
);

export const Practice = Type.Object(
  {
    object: Type.Literal('practice'),
    id: Type.String(),
    name: Type.String(),
    currency: Type.String(),
    timezone: Type.String(),
    integrationsEnabled: Type.Boolean(),
    createdAt: Type.String({ format: 'date-time' }),
  },
  { title: 'Practice' },
);

export const IntegrationsRequest = Type.Object({ enabled: Type.Boolean() }, { additionalProperties: false });

export const PractitionerRequest = Type.Object(
  {
    name: Text(200),
    registrationNumber: Type.Optional(Nullable(Text(50))),
    defaultSystems: Type.Optional(
      Type.Object(
        {
          condition: Type.Optional(Nullable(Text(255))),
          procedure: Type.Optional(Nullable(Text(255))),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { title: 'PractitionerRequest', additionalProperties: false },
);

export const Practitioner = Type.Object(
  {
    object: Type.Literal('practitioner'),
    id: Type.String(),
    practiceId: Type.String(),
    name: Type.String(),
    registrationNumber: Nullable(Type.String()),
    defaultSystems: Type.Object({ condition: Type.String(), procedure: Type.String() }),
    active: Type.Boolean(),
    createdAt: Type.String({ format: 'date-time' }),
  },
  { title: 'PractitionerRecord', description: "The operator's record of a practitioner." },
);

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

export const AuditEvent = Type.Object(
  {
    object: Type.Literal('audit_event'),
    id: Type.String(),
    occurredAt: Type.String({ format: 'date-time' }),
    actor: Type.String(),
    clientId: Nullable(Type.String()),
    keyId: Nullable(Type.String()),
    performerId: Nullable(Type.String()),
    sourceIp: Nullable(Type.String()),
    method: Type.String(),
    route: Type.String(),
    status: Type.Integer(),
    outcome: Type.String(),
    reason: Nullable(Type.String()),
    resourceType: Nullable(Type.String()),
    resourceId: Nullable(Type.String()),
    patientId: Nullable(Type.String()),
    requestId: Type.String(),
    idempotencyKey: Nullable(Type.String()),
  },
  { title: 'AuditEvent' },
);

export const PracticeList = ListOf(Practice, 'PracticeList');
export const PractitionerList = ListOf(Practitioner, 'PractitionerRecordList');
export const ClientList = ListOf(Client, 'ClientList');
export const ApiKeyList = ListOf(ApiKey, 'ApiKeyList');
export const AuditEventList = ListOf(AuditEvent, 'AuditEventList');
