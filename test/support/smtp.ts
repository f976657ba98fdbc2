// A real SMTP server for tests (the smtp-server package) on a free local port: it keeps every message
// it accepts, raw, or refuses every recipient with a 5xx answer. Each message's PDF attachment can be
// read back.
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  from: string;
  to: string[];
  raw: string;
}

export interface TestSmtp {
  url: string;
  received: ReceivedMail[];
  close(): Promise<void>;
}

export async function startSmtp(options: { refuse?: boolean } = {}): Promise<TestSmtp> {
  const received: ReceivedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onRcptTo(_address, _session, callback) {
      if (!options.refuse) return callback();
      const error = new Error('5.1.1 mailbox unavailable') as Error & { responseCode: number };
      error.responseCode = 550;
      return callback(error);
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString('utf8'),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as AddressInfo;
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A header of a raw message (unfolded). */
export function headerOf(raw: string, name: string): string | undefined {
  const head = raw.split(/\r?\n\r?\n/)[0] ?? '';
  const unfolded = head.replace(/\r?\n[ \t]+/g, ' ');
  const line = unfolded.split(/\r?\n/).find((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`));
  return line?.slice(name.length + 1).trim();
}

/** The parts of a multipart message: each one's headers (lower-cased names) and body. */
function partsOf(raw: string): Array<{ headers: string; original: string; body: string }> {
  const boundary = /boundary="?([^";\r\n]+)"?/i.exec(raw)?.[1];
  if (!boundary) return [];
  return raw
    .split(`--${boundary}`)
    .slice(1, -1)
    .map((part) => {
      const [headers = '', ...rest] = part.replace(/^\r?\n/, '').split(/\r?\n\r?\n/);
      const original = headers.replace(/\r?\n[ \t]+/g, ' ');
      return { headers: original.toLowerCase(), original, body: rest.join('\n\n') };
    });
}

/** The message's text part, decoded (quoted-printable or plain). */
export function textOf(raw: string): string {
  const part = partsOf(raw).find((p) => p.headers.includes('text/plain'));
  const body =
    part?.body ??
    raw
      .split(/\r?\n\r?\n/)
      .slice(1)
      .join('\n\n');
  if (part?.headers.includes('quoted-printable')) {
    return body
      .replace(/=\r?\n/g, '')
      .replace(/=([0-9A-F]{2})/g, (_m, h: string) => String.fromCharCode(Number.parseInt(h, 16)));
  }
  if (part?.headers.includes('base64'))
    return Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8');
  return body;
}

/** The attachments: each one's file name and bytes (base64 parts). */
export function attachmentsOf(raw: string): Array<{ filename: string; contentType: string; bytes: Buffer }> {
  return partsOf(raw)
    .filter((p) => p.headers.includes('attachment'))
    .map((p) => ({
      filename: /filename="?([^";\r\n]+)"?/.exec(p.original)?.[1] ?? '',
      contentType: /content-type:\s*([^;\s]+)/.exec(p.headers)?.[1] ?? '',
      bytes: Buffer.from(p.body.replace(/\s+/g, ''), 'base64'),
    }));
}
