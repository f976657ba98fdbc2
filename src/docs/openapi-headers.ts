// Owns the response headers the OpenAPI document declares. Route schemas describe bodies; the
// headers every answer carries (request id, rate limit), those of creating operations (Location,
// Idempotent-Replayed) and those of particular refusals (Retry-After, Allow, WWW-Authenticate) are
// the HTTP platform's, so they are declared here once, for every operation, after the document is
// built from the routes.

type Json = Record<string, unknown>;

const HEADERS: Record<string, Json> = {
  RequestId: {
    description: 'Id of this request; quote it when reporting a problem. Equals `requestId` in a Problem.',
    schema: { type: 'string' },
  },
  RateLimitLimit: {
    description:
      "Requests allowed in the current window (the client's allowance, or the source address's without a valid key).",
    schema: { type: 'string' },
  },
  RateLimitRemaining: { description: 'Requests left in the current window.', schema: { type: 'string' } },
  RateLimitReset: {
    description: 'When the window resets, in seconds since the Unix epoch.',
    schema: { type: 'string' },
  },
  Location: {
    description: 'Absolute address of the created record (on a 202: where to follow the work accepted).',
    schema: { type: 'string' },
  },
  IdempotentReplayed: {
    description: '`true` when this answer is the replay of an earlier request with the same Idempotency-Key.',
    schema: { type: 'string', enum: ['true'] },
  },
  RetryAfter: { description: 'Seconds to wait before retrying.', schema: { type: 'string' } },
  Allow: { description: 'The methods this path accepts.', schema: { type: 'string' } },
  WwwAuthenticate: { description: '`Bearer`: send an API key.', schema: { type: 'string' } },
};

const ref = (name: string) => ({ $ref: `#/components/headers/${name}` });

const EVERY_ANSWER = {
  'X-Request-Id': ref('RequestId'),
  'X-RateLimit-Limit': ref('RateLimitLimit'),
  'X-RateLimit-Remaining': ref('RateLimitRemaining'),
  'X-RateLimit-Reset': ref('RateLimitReset'),
};

function headersFor(status: string, operation: Json, publicApi: boolean): Json {
  const headers: Json = publicApi ? { ...EVERY_ANSWER } : { 'X-Request-Id': ref('RequestId') };
  const parameters = (operation.parameters as Json[] | undefined) ?? [];
  const idempotent = parameters.some((p) => p.in === 'header' && p.name === 'idempotency-key');
  if (status === '201' || (status === '202' && publicApi)) headers.Location = ref('Location');
  if (idempotent && status.startsWith('2')) headers['Idempotent-Replayed'] = ref('IdempotentReplayed');
  // A 409 of an operation taking an Idempotency-Key may be the key still running, which says when to retry.
  if (status === '429' || status === '503' || (status === '409' && idempotent))
    headers['Retry-After'] = ref('RetryAfter');
  if (status === '405') headers.Allow = ref('Allow');
  if (status === '401') headers['WWW-Authenticate'] = ref('WwwAuthenticate');
  return headers;
}

/** Adds the platform's response headers to every operation of a built document (in place). */
export function declareResponseHeaders<T>(document: T): T {
  const doc = document as Json;
  const used = new Set<string>();
  for (const [path, item] of Object.entries((doc.paths ?? {}) as Record<string, Json>)) {
    for (const operation of Object.values(item) as Json[]) {
      const responses = operation?.responses as Record<string, Json> | undefined;
      if (!responses) continue;
      for (const [status, response] of Object.entries(responses)) {
        const declared = headersFor(status, operation, path.startsWith('/api/v1/'));
        for (const header of Object.values(declared))
          used.add(
            String((header as Json).$ref)
              .split('/')
              .pop()!,
          );
        response.headers = { ...declared, ...((response.headers as Json | undefined) ?? {}) };
      }
    }
  }
  // Only the headers some answer carries: a component nothing refers to is a lint warning.
  const components = (doc.components ?? {}) as Json;
  components.headers = {
    ...((components.headers as Json | undefined) ?? {}),
    ...Object.fromEntries(Object.entries(HEADERS).filter(([name]) => used.has(name))),
  };
  doc.components = components;
  return document;
}
