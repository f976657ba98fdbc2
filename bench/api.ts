// Owns the bench's own HTTP calls to the service (set-up and checks, not the measured load): JSON in
// and out with fetch, and a helper that runs many calls with bounded concurrency.
import { randomBytes } from 'node:crypto';

export interface Answer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: the bench reads arbitrary JSON answers
  body: any;
  text: string;
}

export function idempotencyKey(): string {
  return `bench-${randomBytes(12).toString('hex')}`;
}

/** Set-up calls shed with 503 are retried after their Retry-After, as an integrator's client does. */
const SHED_RETRIES = 20;

export async function call(
  baseUrl: string,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; idempotent?: boolean } = {},
): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  // One key for every retry, so a retried create is never made twice.
  if (options.idempotent) headers['idempotency-key'] = idempotencyKey();
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  let response: Response;
  for (let attempt = 0; ; attempt++) {
    response = await fetch(`${baseUrl}${path}`, {
      method,
      headers,
      ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
    });
    const retryAfter = Number(response.headers.get('retry-after') ?? Number.NaN);
    if (response.status !== 503 || !(retryAfter >= 0) || attempt >= SHED_RETRIES) break;
    await response.arrayBuffer();
    await new Promise((resolve) => setTimeout(resolve, Math.max(retryAfter, 0.1) * 1000));
  }
  const text = await response.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status: response.status, body, text };
}

/** Like call(), but throws unless the answer has the expected status. */
export async function expect(
  status: number,
  baseUrl: string,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; idempotent?: boolean } = {},
): Promise<Answer> {
  const answer = await call(baseUrl, method, path, options);
  if (answer.status !== status) {
    throw new Error(
      `${method} ${path} answered ${answer.status}, expected ${status}: ${answer.text.slice(0, 500)}`,
    );
  }
  return answer;
}

/** Runs fn for every item, at most `concurrency` at a time; answers the results in order. */
export async function mapConcurrent<T, R>(
  items: T[],
  concurrency: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index]!, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, lane));
  return results;
}
