// Owns the webhook job's kind and payload: one delivery of one event to one endpoint, run in the
// webhooks lane so that slow receivers never hold up claim work.
import { Type } from 'typebox';
import { jobKind } from '../jobs/kind.ts';

export const DELIVER_JOB = jobKind('webhook.deliver', Type.Object({ deliveryId: Type.String() }), 'webhooks');
