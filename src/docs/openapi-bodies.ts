// Owns how the OpenAPI document states a body that may be left out: routes declared with an optional
// body carry `x-body-optional` in their schema, and the document says `requestBody.required: false`
// for them (the generator would say true for any declared body). The server takes no body, or a JSON
// null, as `{}` there; where the body is required it refuses null with 400.

import { BODY_OPTIONAL } from '../platform/http/schema.ts';

type Json = Record<string, unknown>;

/** Marks the optional request bodies of a built document (in place), removing the route marker. */
export function declareOptionalBodies<T>(document: T): T {
  const paths = ((document as Json).paths ?? {}) as Record<string, Record<string, Json>>;
  for (const item of Object.values(paths)) {
    for (const operation of Object.values(item)) {
      if (!operation || typeof operation !== 'object' || !(BODY_OPTIONAL in operation)) continue;
      delete operation[BODY_OPTIONAL];
      const body = operation.requestBody as Json | undefined;
      if (body) body.required = false;
    }
  }
  return document;
}
