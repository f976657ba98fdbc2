// Owns sending one e-mail through the configured SMTP server (nodemailer; SMTP_URL, STARTTLS where the
// server offers it) and saying what became of it: sent with the server's answer, or failed with the
// reason and whether trying again could help (a 5xx answer is the server's final word; a refused
// connection, a time-out or a 4xx is not). Nothing here logs: an address is patient data.
import nodemailer, { type Transporter } from 'nodemailer';

export interface OutgoingMail {
  to: string;
  subject: string;
  text: string;
  /** The same on every try, so a server (or the recipient's) that saw it can drop a second copy. */
  messageId: string;
  attachment: { filename: string; contentType: string; content: Buffer } | null;
}

export type MailOutcome =
  | { kind: 'sent'; response: string }
  | { kind: 'failed'; reason: string; permanent: boolean };

export interface MailTransport {
  send(mail: OutgoingMail): Promise<MailOutcome>;
  close(): void;
}

interface SmtpError {
  responseCode?: number;
  code?: string;
  response?: string;
  message?: string;
}

/** Why a send failed, in words an operator can act on, without the recipient's address. */
export function failureOf(error: unknown): { reason: string; permanent: boolean } {
  const e = (typeof error === 'object' && error !== null ? error : {}) as SmtpError;
  const code = typeof e.responseCode === 'number' ? e.responseCode : undefined;
  const answer = (e.response ?? '').replace(/\s+/g, ' ').trim().slice(0, 300);
  if (code !== undefined) {
    return {
      reason: `the mail server answered ${answer || code}`,
      permanent: code >= 500 && code < 600,
    };
  }
  const what = e.code ? `${e.code}: ` : '';
  return {
    reason: `the mail server could not be reached (${what}${e.message ?? 'unknown error'})`,
    permanent: false,
  };
}

export class SmtpTransport implements MailTransport {
  readonly #transporter: Transporter;
  readonly #from: string;

  constructor(smtpUrl: string, from: string) {
    this.#from = from;
    this.#transporter = nodemailer.createTransport({
      url: smtpUrl,
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 30_000,
      logger: false,
      debug: false,
    });
  }

  async send(mail: OutgoingMail): Promise<MailOutcome> {
    try {
      const info = await this.#transporter.sendMail({
        from: this.#from,
        to: mail.to,
        subject: mail.subject,
        text: mail.text,
        messageId: mail.messageId,
        ...(mail.attachment ? { attachments: [mail.attachment] } : {}),
      });
      return { kind: 'sent', response: String(info.response ?? '').slice(0, 300) };
    } catch (error) {
      return { kind: 'failed', ...failureOf(error) };
    }
  }

  close(): void {
    this.#transporter.close();
  }
}

/** The domain of a From (`Name <a@b>` or `a@b`), for Message-IDs. */
export function fromDomain(from: string): string {
  return /@([^@\s<>]+)>?\s*$/.exec(from)?.[1] ?? 'localhost';
}
