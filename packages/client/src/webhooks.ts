// Owns webhook verification: the Standard Webhooks signature (HMAC-SHA256 of `<webhook-id>.<webhook-
// timestamp>.<body>` with the secret's base64-decoded bytes, `v1,<base64>` entries space-separated)
// over the exact bytes received, a timestamp within five minutes, answering the event typed. A parsed
// body is refused: parsing and serialising again changes the bytes, and the signature would no longer
// be checked against what was sent. The HMAC and the constant-time comparison are the runtime's own
// (`node:crypto`, reached through `process.getBuiltinModule`, in Node 20.16 and later, Bun and Deno),
// so the package has no dependency; verifying is a server's job, and a browser has no such module.
import type { Event } from './types.ts';

/** How far a delivery's timestamp may be from now, either way. */
const TOLERANCE_SECONDS = 5 * 60;

interface NodeCrypto {
  createHmac(algorithm: 'sha256', key: Uint8Array): { update(data: string): { digest(): Uint8Array } };
  timingSafeEqual(a: Uint8Array, b: Uint8Array): boolean;
}

function nodeCrypto(): NodeCrypto {
  const runtime = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
  const crypto = runtime?.getBuiltinModule?.('node:crypto') as NodeCrypto | undefined;
  if (!crypto) {
    throw new Error(
      'webhooks.verify needs node:crypto (Node 20.16 or later, Bun or Deno): verify deliveries on a server',
    );
  }
  return crypto;
}

function base64Bytes(text: string): Uint8Array {
  const binary = atob(text);
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

/**
 * A webhook body: the same body as an item of the events list, discriminated on `type` (a
 * `claim.status_changed` carries `data.claim`, a `payment.created` carries `data.payment`).
 */
export type WebhookEvent = Event;

/** Headers as Node gives them (`req.headers`), as a fetch `Headers`, or as a plain record. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
}

function plainHeaders(headers: WebhookHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  if (typeof Headers !== 'undefined' && headers instanceof Headers) {
    headers.forEach((value, name) => {
      out[name.toLowerCase()] = value;
    });
    return out;
  }
  for (const [name, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (value === undefined) continue;
    out[name.toLowerCase()] = Array.isArray(value) ? value.join(' ') : value;
  }
  return out;
}

function bodyText(rawBody: unknown): string {
  if (typeof rawBody === 'string') return rawBody;
  if (rawBody instanceof Uint8Array) return new TextDecoder('utf-8', { fatal: true }).decode(rawBody);
  if (rawBody instanceof ArrayBuffer) return new TextDecoder('utf-8', { fatal: true }).decode(rawBody);
  throw new TypeError(
    'webhooks.verify needs the raw request body (a string or bytes exactly as received), not a parsed object: ' +
      'read the body before any JSON parser touches it',
  );
}

/**
 * Checks a delivery's signature and timestamp (within 5 minutes) with the endpoint's secret
 * (`whsec_...`) and answers the event. Throws WebhookVerificationError when it does not verify.
 * During a secret rotation a delivery carries two signatures; either verifies.
 */
export function verifyWebhook(
  rawBody: string | Uint8Array | ArrayBuffer,
  headers: WebhookHeaders,
  secret: string,
): WebhookEvent {
  const text = bodyText(rawBody);
  const plain = plainHeaders(headers);
  const id = plain['webhook-id'];
  const timestamp = plain['webhook-timestamp'];
  const signatures = plain['webhook-signature'];
  if (!id || !timestamp || !signatures) {
    throw new WebhookVerificationError(
      'Missing required headers (webhook-id, webhook-timestamp, webhook-signature)',
    );
  }
  const sentAt = /^\d+$/.test(timestamp) ? Number(timestamp) : Number.NaN;
  if (!Number.isSafeInteger(sentAt)) throw new WebhookVerificationError('Invalid signature headers');
  const now = Math.floor(Date.now() / 1000);
  if (sentAt < now - TOLERANCE_SECONDS) throw new WebhookVerificationError('Message timestamp too old');
  if (sentAt > now + TOLERANCE_SECONDS) throw new WebhookVerificationError('Message timestamp too new');

  const crypto = nodeCrypto();
  let key: Uint8Array;
  try {
    key = base64Bytes(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret);
  } catch (error) {
    throw new WebhookVerificationError('The secret is not a whsec_ secret (base64 after the prefix)', {
      cause: error,
    });
  }
  const expected = crypto.createHmac('sha256', key).update(`${id}.${timestamp}.${text}`).digest();
  const matches = signatures.split(' ').some((entry) => {
    const [version, signature] = entry.split(',', 2);
    if (version !== 'v1' || !signature) return false;
    let given: Uint8Array;
    try {
      given = base64Bytes(signature);
    } catch {
      return false;
    }
    return given.length === expected.length && crypto.timingSafeEqual(given, expected);
  });
  if (!matches) throw new WebhookVerificationError('No matching signature found');
  try {
    return JSON.parse(text) as WebhookEvent;
  } catch (error) {
    throw new WebhookVerificationError('The body is not JSON', { cause: error });
  }
}

export class Webhooks {
  /** See verifyWebhook. */
  verify(rawBody: string | Uint8Array | ArrayBuffer, headers: WebhookHeaders, secret: string): WebhookEvent {
    return verifyWebhook(rawBody, headers, secret);
  }
}
