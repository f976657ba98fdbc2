// Owns what the e-mails say. To a patient: little (the practice, the account's number, the amount due
// and the due date, and who to ask), never a diagnosis nor the patient's name; the attached PDF holds
// the rest. To the practice: the notice it was sent. Pure.
import { formatPrintedAmount } from '../invoices/money-format.ts';
import type { AccountParts } from './view.ts';

export interface MailText {
  subject: string;
  text: string;
}

/** The e-mail that carries an account; `corrected` when an amended invoice was issued again. */
export function accountMail(parts: AccountParts, corrected: boolean): MailText {
  const i = parts.invoice;
  const p = parts.practice;
  const noun = p.vatNumber ? 'tax invoice' : 'account';
  const contact = [p.phone, p.email].filter((x): x is string => x !== null);
  const lines = [
    corrected
      ? `${p.name} has corrected ${noun} ${i.number} and sends it again. It replaces the one sent before.`
      : `${p.name} sends you ${noun} ${i.number}.`,
    '',
    `Amount due: ${formatPrintedAmount(i.balanceDue, i.currency)}`,
    `Due date: ${i.dueDate ?? 'on receipt'}`,
    '',
    `The ${noun} is attached as ${i.number}.pdf, with the services and how to pay.`,
    ...(contact.length > 0 ? [`Questions about it: ${contact.join(' or ')}.`] : []),
  ];
  return {
    subject: `${corrected ? 'Corrected ' : ''}${noun === 'account' ? 'Account' : 'Tax invoice'} ${i.number} from ${p.name}`,
    text: `${lines.join('\n')}\n`,
  };
}

/** The e-mail that tells the practice what its notification says. */
export function practiceMail(practiceName: string, kind: string, message: string): MailText {
  const about = kind === 'webhook_endpoint_disabled' ? 'A webhook endpoint was turned off' : 'A notice';
  return { subject: `${about} (${practiceName})`, text: `${message}\n` };
}
