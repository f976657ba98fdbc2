// Owns the e-mail job's kind and payload: one notification sent by e-mail (a patient's account, or a
// notice to the practice), in a lane of its own, so that a slow or absent mail server never holds up
// claim work or webhook deliveries, nor counts in their backlogs.
import { Type } from 'typebox';
import { jobKind } from '../jobs/kind.ts';

export const MAIL_JOB = jobKind(
  'notification.mail',
  Type.Object({
    notificationId: Type.String(),
    /** The invoice was issued before and amended: the message is its corrected account. */
    corrected: Type.Optional(Type.Boolean()),
  }),
  'mail',
);
