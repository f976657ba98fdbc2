// The package's entry: the client, its errors, its types, paging and webhook verification.
export { PracticeBilling } from './client.ts';
export { ConnectionError, type FieldError, ProblemError } from './errors.ts';
export type { CallInit, ClientOptions, Http, RequestOptions } from './http.ts';
export { newIdempotencyKey } from './http.ts';
export { PageList } from './paging.ts';
export type * from './types.ts';
export {
  verifyWebhook,
  type WebhookEvent,
  type WebhookHeaders,
  Webhooks,
  WebhookVerificationError,
} from './webhooks.ts';
