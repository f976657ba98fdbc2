// Owns the e-mail job (src/notifications/job-kinds.ts): it reads the notification and what its message
// needs in one transaction, draws the account and sends it outside any transaction, then records the
// outcome on the notification with the job's end in another. A patient with no e-mail address, or one
// that is not an address (the issue records that itself and queues no job; the address may have gone
// since), is recorded as such and never retried; a mail server's final refusal (5xx)
// fails the message at once, anything else is retried with back-off up to MAIL_ATTEMPTS; a failed
// account raises invoice.delivery_failed, which names the invoice only. Without an SMTP server the
// message is kept in the outbox instead. A notification already settled is not sent again.

import type { Selectable } from 'kysely';
import { recordAccountUndelivered } from '../invoices/service.ts';
import { checkedPayload } from '../jobs/kind.ts';
import { finishJob, type JobRow, rescheduleJob } from '../jobs/queue.ts';
import { MAIL_JOB } from '../notifications/job-kinds.ts';
import { fromDomain, type MailTransport, type OutgoingMail } from '../notifications/mailer.ts';
import { findNotification, insertOutboxMessage, recordDelivery } from '../notifications/store.ts';
import { patientMailAddress } from '../patients/email.ts';
import { readPatient } from '../patients/service.ts';
import type { Database } from '../platform/db/database.ts';
import type { NotificationsTable } from '../platform/db/tables.ts';
import { inPractice, type Trx } from '../platform/db/transaction.ts';
import { newId } from '../platform/ids.ts';
import { getPractice } from '../practices/service.ts';
import { renderAccountPdf } from './document.ts';
import { accountMail, practiceMail } from './message.ts';
import { gatherAccount } from './service.ts';
import { accountViewOf } from './view.ts';

export const MAIL_ATTEMPTS = 6;
/** Delay after the Nth failed try (N from 1). */
export const MAIL_RETRY_DELAYS_MS = [60_000, 5 * 60_000, 30 * 60_000, 2 * 3600_000, 6 * 3600_000];

export interface MailContext {
  db: Database;
  /** Undefined: no SMTP_URL, messages go to the outbox. */
  transport: MailTransport | undefined;
  mailFrom: string;
  now: () => Date;
}

type Notification = Selectable<NotificationsTable>;

type Plan =
  | { kind: 'settled' }
  | { kind: 'undeliverable'; notification: Notification; delivery: 'no_address' | 'failed'; detail: string }
  | { kind: 'send'; notification: Notification; mail: () => Promise<OutgoingMail> };

async function planPatientMail(
  trx: Trx,
  notification: Notification,
  messageId: string,
  corrected: boolean,
): Promise<Plan> {
  const patient = await readPatient(trx, notification.practice_id, notification.patient_id!);
  const address = patientMailAddress(patient.contact_points);
  if (!('to' in address)) return { kind: 'undeliverable', notification, ...address };
  const { to } = address;
  const { parts, record } = await gatherAccount(trx, notification.practice_id, notification.subject_id);
  const view = accountViewOf(parts);
  const text = accountMail(parts, corrected);
  const issuedAt = record.invoice.issued_at ?? notification.created_at;
  return {
    kind: 'send',
    notification,
    mail: async () => ({
      to,
      ...text,
      messageId,
      attachment: {
        filename: `${parts.invoice.number}.pdf`,
        contentType: 'application/pdf',
        content: await renderAccountPdf(view, issuedAt),
      },
    }),
  };
}

async function planPracticeMail(trx: Trx, notification: Notification, messageId: string): Promise<Plan> {
  const practice = await getPractice(trx, notification.practice_id);
  if (!practice.email) {
    return {
      kind: 'undeliverable',
      notification,
      delivery: 'no_address',
      detail: 'the practice has no e-mail address',
    };
  }
  const text = practiceMail(practice.name, notification.kind, notification.message);
  const to = practice.email;
  return { kind: 'send', notification, mail: async () => ({ to, ...text, messageId, attachment: null }) };
}

async function planMail(ctx: MailContext, trx: Trx, job: JobRow): Promise<Plan> {
  const { notificationId, corrected } = checkedPayload(MAIL_JOB, job.payload);
  const notification = await findNotification(trx, job.practice_id, notificationId);
  if (notification?.delivery !== 'queued') return { kind: 'settled' };
  const messageId = `<${notification.id}.${notification.practice_id}@${fromDomain(ctx.mailFrom)}>`;
  if (notification.recipient === 'practice') return planPracticeMail(trx, notification, messageId);
  return planPatientMail(trx, notification, messageId, corrected === true);
}

/** Records the final outcome and ends the job; a failed account raises invoice.delivery_failed. */
async function settle(
  trx: Trx,
  job: JobRow,
  notification: Notification,
  delivery: 'sent' | 'failed' | 'no_address',
  detail: string,
  now: Date,
): Promise<void> {
  await recordDelivery(trx, notification.practice_id, notification.id, delivery, detail, now);
  if (delivery === 'failed' && notification.subject_type === 'invoice') {
    await recordAccountUndelivered(trx, notification.practice_id, notification.subject_id, now);
  }
  await finishJob(trx, job, now);
}

export async function runMailJob(ctx: MailContext, job: JobRow): Promise<void> {
  const practiceId = job.practice_id;
  const plan = await inPractice(ctx.db, practiceId, (trx) => planMail(ctx, trx, job));
  if (plan.kind === 'settled') {
    await inPractice(ctx.db, practiceId, (trx) => finishJob(trx, job, ctx.now()));
    return;
  }
  if (plan.kind === 'undeliverable') {
    const { notification, delivery, detail } = plan;
    await inPractice(ctx.db, practiceId, (trx) =>
      settle(trx, job, notification, delivery, detail, ctx.now()),
    );
    return;
  }
  const mail = await plan.mail();
  if (!ctx.transport) {
    await inPractice(ctx.db, practiceId, async (trx) => {
      const now = ctx.now();
      await insertOutboxMessage(trx, {
        practice_id: practiceId,
        id: newId('mail'),
        notification_id: plan.notification.id,
        recipient: mail.to,
        subject: mail.subject,
        body: mail.text,
        attachment_name: mail.attachment?.filename ?? null,
        attachment: mail.attachment?.content ?? null,
        created_at: now,
      });
      await settle(trx, job, plan.notification, 'sent', 'kept in the outbox: no SMTP_URL is configured', now);
    });
    return;
  }
  const outcome = await ctx.transport.send(mail);
  await inPractice(ctx.db, practiceId, async (trx) => {
    const now = ctx.now();
    if (outcome.kind === 'sent') return settle(trx, job, plan.notification, 'sent', outcome.response, now);
    if (outcome.permanent || job.attempts >= MAIL_ATTEMPTS) {
      return settle(trx, job, plan.notification, 'failed', outcome.reason, now);
    }
    const delayMs = MAIL_RETRY_DELAYS_MS[Math.min(job.attempts, MAIL_RETRY_DELAYS_MS.length) - 1]!;
    const detail = `try ${job.attempts} of ${MAIL_ATTEMPTS} failed (${outcome.reason}); trying again in ${Math.round(delayMs / 60_000)} min`;
    await recordDelivery(trx, practiceId, plan.notification.id, 'queued', detail, now);
    await rescheduleJob(trx, job, delayMs, outcome.reason);
  });
}
