// Owns webhook verification: the Standard Webhooks signature over the exact bytes received, checked
// with the `standardwebhooks` library, answering the event typed. A parsed body is refused: parsing
// and serialising again changes the bytes, and the signature would no longer be checked against
// what was sent.
import { Webhook } from 'standardwebhooks';
import type { Event } from './types.ts';

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
 */
export function verifyWebhook(
  rawBody: string | Uint8Array | ArrayBuffer,
  headers: WebhookHeaders,
  secret: string,
): WebhookEvent {
  const text = bodyText(rawBody);
  let event: unknown;
  try {
    event = new Webhook(secret).verify(text, plainHeaders(headers));
  } catch (error) {
    throw new WebhookVerificationError(
      error instanceof Error ? error.message : 'the signature does not verify',
      {
        cause: error,
      },
    );
  }
  return event as WebhookEvent;
}

export class Webhooks {
  /** See verifyWebhook. */
  verify(rawBody: string | Uint8Array | ArrayBuffer, headers: WebhookHeaders, secret: string): WebhookEvent {
    return verifyWebhook(rawBody, headers, secret);
  }
}
