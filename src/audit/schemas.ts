// Owns the shape of an audit event as the operator API shows it.
import { Type } from 'typebox';
import { ListOf, Nullable } from '../platform/http/schema.ts';

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

export const AuditEventList = ListOf(AuditEvent, 'AuditEventList');
