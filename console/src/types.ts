// The shapes the console reads, taken from the service's own schemas (type-only: nothing of the
// server is bundled), so a change to an admin answer fails the console's type check.
import type { Static } from 'typebox';
import type { AuditEvent as AuditEventSchema } from '../../src/audit/schemas.ts';
import type { Dashboard as DashboardSchema } from '../../src/back-office/dashboard-reads.ts';
import type { InvoiceDetail as DetailSchema, InvoiceSummary } from '../../src/back-office/invoice-reads.ts';
import type { ClaimStatus } from '../../src/claims/schemas.ts';
import type { ApiKey as ApiKeySchema, Client as ClientSchema } from '../../src/clients/schemas.ts';
import type { InvoiceStatus } from '../../src/invoices/schemas.ts';
import type { Practice as PracticeSchema } from '../../src/practices/schemas.ts';
import type { ServiceMetrics as ServiceMetricsSchema } from '../../src/service-metrics.ts';
import type { Attempt as AttemptType } from '../../src/webhooks/admin.ts';
import type { EndpointView } from '../../src/webhooks/endpoints.ts';

export type { ClaimStatus, InvoiceStatus, InvoiceSummary };
export type Practice = Static<typeof PracticeSchema>;
export type Client = Static<typeof ClientSchema>;
export type ApiKey = Static<typeof ApiKeySchema>;
export type AuditEvent = Static<typeof AuditEventSchema>;
export type Dashboard = Static<typeof DashboardSchema>;
export type ServiceMetrics = Static<typeof ServiceMetricsSchema>;
export type InvoiceDetail = Static<typeof DetailSchema>;
export type Invoice = InvoiceDetail['invoice'];
export type Claim = NonNullable<InvoiceDetail['claim']>;
export type Attempt = AttemptType;
export type Endpoint = EndpointView;

export interface Page<T> {
  object: 'list';
  data: T[];
  hasMore: boolean;
  nextCursor: string | null;
}

export interface Redelivery {
  object: 'redelivery';
  queued: number;
  deliveryIds: string[];
}

/** A recovery's answer: of those queued, how many had failed for good and how many were still retrying. */
export interface Recovery extends Redelivery {
  failed: number;
  retrying: number;
}

export const INVOICE_STATUS_LIST = [
  'draft',
  'issued',
  'amending',
  'partially_paid',
  'balanced',
  'overdue',
  'cancelled',
  'written_off',
  'entered_in_error',
] as const satisfies readonly InvoiceStatus[];

export const CLAIM_STATUS_LIST = [
  'submitting',
  'accepted',
  'partially_accepted',
  'rejected',
  'reversing',
  'reversed',
  'reversal_failed',
] as const satisfies readonly ClaimStatus[];

/** What the service told a patient or the practice, and what became of its e-mail. */
export interface Notification {
  object: 'notification';
  id: string;
  recipient: 'patient' | 'practice';
  patientId: string | null;
  kind: string;
  subjectType: string;
  subjectId: string;
  message: string;
  delivery: 'none' | 'queued' | 'sent' | 'failed' | 'no_address';
  deliveryDetail: string | null;
  deliveryUpdatedAt: string | null;
  createdAt: string;
}

/** An e-mail kept instead of sent (no SMTP server configured). */
export interface OutboxMessage {
  object: 'outbox_message';
  id: string;
  notificationId: string;
  to: string;
  subject: string;
  text: string;
  attachment: { filename: string; size: number } | null;
  createdAt: string;
}
