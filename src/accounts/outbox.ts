// Owns reading the mail outbox for the operator: the messages kept instead of sent (no SMTP_URL), and
// one message's attachment; 404 for a practice or a message that does not exist.
import { findOutboxMessage, listOutbox } from '../notifications/store.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { AppError } from '../platform/http/errors.ts';
import { getPractice } from '../practices/service.ts';

export async function outboxPage(
  trx: Trx,
  practiceId: string,
  before: { createdAt: string; id: string } | undefined,
  limit: number,
) {
  await getPractice(trx, practiceId);
  return listOutbox(trx, practiceId, before, limit);
}

/** The message's attachment: its file name and bytes. */
export async function outboxAttachment(trx: Trx, practiceId: string, messageId: string) {
  await getPractice(trx, practiceId);
  const message = await findOutboxMessage(trx, practiceId, messageId);
  if (!message) throw new AppError('not_found', 'Outbox message was not found.');
  if (!message.attachment || !message.attachment_name) {
    throw new AppError('not_found', 'This outbox message has no attachment.');
  }
  return { filename: message.attachment_name, bytes: Buffer.from(message.attachment) };
}
