// Owns which admin operations take an Idempotency-Key: every POST (each creates or acts), required on
// those that move money. Kept apart, importing types only, so the CLI reads it without loading a route.
import type { KeyUse } from '../idempotency/keyed-request.ts';

/** Whether an admin operation requires an Idempotency-Key, accepts one, or ignores it (reads, PUT, DELETE). */
export function adminKeyUse(route: { method: string; movesMoney?: boolean | undefined }): KeyUse {
  if (route.method !== 'POST') return 'none';
  return route.movesMoney ? 'required' : 'optional';
}
