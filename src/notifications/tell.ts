// Owns telling someone: a notification recorded in the transaction of the change it reports, and the
// e-mail job that sends it, queued in that same transaction so that it exists exactly when the change
// committed and runs only after (src/jobs/queue.ts). Nothing here can fail the change for the sake of
// the e-mail: a message known at once to have nowhere to go is recorded so and queues no job; what the
// mail server says is the job's to find out.
import type { Insertable } from 'kysely';
import { enqueueJob } from '../jobs/queue.ts';
import type { NotificationsTable } from '../platform/db/tables.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { MAIL_JOB } from './job-kinds.ts';
import { insertNotification } from './store.ts';

/**
 * Records the notification as queued for e-mail and queues its job; or, `undeliverable`, records why
 * no message can go (src/patients/email.ts) and queues nothing.
 */
export async function tellByMail(
  trx: Trx,
  notification: Omit<Insertable<NotificationsTable>, 'delivery'>,
  options: {
    corrected?: boolean;
    undeliverable?: { delivery: 'no_address' | 'failed'; detail: string } | undefined;
  } = {},
): Promise<void> {
  const { undeliverable } = options;
  if (undeliverable) {
    await insertNotification(trx, {
      ...notification,
      delivery: undeliverable.delivery,
      delivery_detail: undeliverable.detail,
      delivery_updated_at: notification.created_at,
    });
    return;
  }
  await insertNotification(trx, { ...notification, delivery: 'queued' });
  await enqueueJob(
    trx,
    notification.practice_id,
    MAIL_JOB,
    { notificationId: notification.id, ...(options.corrected ? { corrected: true } : {}) },
    notification.created_at,
  );
}
