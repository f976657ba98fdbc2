// Owns the e-mail job's kind and payload: one notification sent by e-mail (a patient's account, or a
// notice to the practice), in the webhooks lane beside the other messages that leave the service, so
// that a slow mail server never holds up claim work.
import { Type } from 'typebox';
import { jobKind } from '../jobs/kind.ts';

export const MAIL_JOB = jobKind(
  'notification.mail',
  Type.Object({
    notificationId: Type.String(),
    /** The invoice was issued before and amended: the message is its corrected account. */
    corrected: Type.Optional(Type.Boolean()),
  }),
  'webhooks',
);
