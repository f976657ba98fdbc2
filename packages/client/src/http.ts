// Owns one call to the service: the URL from a path template of the OpenAPI document, the headers
// (key, Idempotency-Key on creates, X-Service-Performer), the time-out, the retries and turning the
// answer into a typed result or a ProblemError. Uses fetch only, so it runs in Node and browsers.
import { ConnectionError, problemFrom } from './errors.ts';
import { DEFAULT_RETRY, parseRetryAfter, type RetryPolicy, retryableAnswer, retryDelayMs } from './retry.ts';
import type {
  BodyOf,
  CreatesOf,
  Method,
  OperationAt,
  Path,
  PathParamsOf,
  QueryOf,
  ResultOf,
} from './types.ts';

export interface ClientOptions {
  /** The integration client's API key, `pbk_...`. */
  apiKey: string;
  /** The service's address, such as `https://billing.example.org` (a trailing `/api/v1` is accepted). */
  baseUrl: string;
  /** Attempts after the first for a retryable failure (default 3; 0 turns retries off). */
  maxRetries?: number;
  /** First backoff delay in milliseconds (default 500). */
  retryBaseDelayMs?: number;
  /** Longest backoff between attempts in milliseconds, when the service names no wait (default 60 000). */
  retryMaxDelayMs?: number;
  /**
   * Longest `Retry-After` waited out, in milliseconds (default 60 000): a 429 or 503 asking for up to
   * this long is retried after it; one asking for longer is thrown at once as a ProblemError with
   * `retryAfterSeconds`.
   */
  maxRetryAfterMs?: number;
  /** Time-out of one attempt in milliseconds (default 60 000). */
  timeoutMs?: number;
  /** Practitioner acting, sent as `X-Service-Performer` on every call (recorded in the audit trail). */
  performer?: string;
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch;
  /** Random numbers in [0, 1) for the retry jitter (default Math.random). */
  random?: () => number;
}

export interface RequestOptions {
  /** For creating operations: the Idempotency-Key to send (default: a new random key per call). */
  idempotencyKey?: string;
  /** Practitioner acting on this call, sent as `X-Service-Performer`. */
  performer?: string;
  /** Cancels the call, its retries and the waits between them. */
  signal?: AbortSignal;
  maxRetries?: number;
  timeoutMs?: number;
}

type ParamsInit<O> = [PathParamsOf<O>] extends [never] ? { params?: undefined } : { params: PathParamsOf<O> };
type QueryInit<O> = [QueryOf<O>] extends [never] ? { query?: undefined } : { query?: QueryOf<O> };
type BodyInit<O> = [BodyOf<O>] extends [never] ? { body?: undefined } : { body: BodyOf<O> };

/** What a call sends; `creates` must say whether the operation takes an Idempotency-Key. */
export type CallInit<O> = ParamsInit<O> &
  QueryInit<O> &
  BodyInit<O> & {
    creates: CreatesOf<O>;
    /** 'bytes': the success is a document (a PDF), answered as its bytes instead of parsed JSON. */
    answer?: 'bytes';
  };

/** Methods that may be sent again after a lost answer; a creating POST may too, with its key. */
const REPEATABLE = new Set<Method>(['get', 'put', 'patch', 'delete']);

export function newIdempotencyKey(): string {
  return `sdk_${globalThis.crypto.randomUUID()}`;
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function appendQuery(url: URL, query: object | undefined): void {
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value === undefined || value === null) continue;
    for (const one of Array.isArray(value) ? value : [value]) url.searchParams.append(name, String(one));
  }
}

export class Http {
  readonly #apiKey: string;
  readonly #baseUrl: string;
  readonly #fetch: typeof fetch;
  readonly #retry: RetryPolicy;
  readonly #timeoutMs: number;
  readonly #performer: string | undefined;

  constructor(options: ClientOptions) {
    if (!options.apiKey) throw new TypeError('PracticeBilling needs an apiKey');
    if (!options.baseUrl) throw new TypeError('PracticeBilling needs a baseUrl');
    this.#apiKey = options.apiKey;
    this.#baseUrl = options.baseUrl.replace(/\/+$/, '').replace(/\/api\/v1$/, '');
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.#retry = {
      maxRetries: options.maxRetries ?? DEFAULT_RETRY.maxRetries,
      baseDelayMs: options.retryBaseDelayMs ?? DEFAULT_RETRY.baseDelayMs,
      maxDelayMs: options.retryMaxDelayMs ?? DEFAULT_RETRY.maxDelayMs,
      maxRetryAfterMs: options.maxRetryAfterMs ?? DEFAULT_RETRY.maxRetryAfterMs,
      random: options.random ?? DEFAULT_RETRY.random,
    };
    this.#timeoutMs = options.timeoutMs ?? 60_000;
    this.#performer = options.performer;
  }

  /** Calls the operation at `path` and `method` of the OpenAPI document and answers its success body. */
  async call<P extends Path, M extends Method>(
    method: M,
    path: P,
    init: CallInit<OperationAt<P, M>>,
    options: RequestOptions = {},
  ): Promise<ResultOf<OperationAt<P, M>>> {
    const params = (init.params ?? {}) as Record<string, string>;
    const url = new URL(
      this.#baseUrl +
        String(path).replace(/\{(\w+)\}/g, (_, name: string) => {
          const value = params[name];
          if (value === undefined || value === '') throw new TypeError(`${name} is required`);
          return encodeURIComponent(value);
        }),
    );
    appendQuery(url, init.query as object | undefined);
    const bytes = init.answer === 'bytes';
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.#apiKey}`,
      accept: bytes ? '*/*' : 'application/json',
    };
    const body = init.body === undefined ? undefined : JSON.stringify(init.body);
    if (body !== undefined) headers['content-type'] = 'application/json';
    // One key for every attempt of this call, so a retry replays instead of creating twice.
    if (init.creates) headers['idempotency-key'] = options.idempotencyKey ?? newIdempotencyKey();
    const performer = options.performer ?? this.#performer;
    if (performer) headers['x-service-performer'] = performer;
    const repeatable = init.creates || REPEATABLE.has(method);
    // What a gateway's 502 or 504 may be sent again for: a read, or a request the service replays.
    const replayable = init.creates || method === 'get';
    const maxRetries = options.maxRetries ?? this.#retry.maxRetries;
    const timeoutMs = options.timeoutMs ?? this.#timeoutMs;

    for (let attempt = 0; ; attempt++) {
      let status: number;
      let answerHeaders: Headers;
      let text: string;
      let raw: Uint8Array | undefined;
      try {
        const timeout = AbortSignal.timeout(timeoutMs);
        const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
        const response = await this.#fetch(url, {
          method: method.toUpperCase(),
          headers,
          ...(body !== undefined ? { body } : {}),
          signal,
        });
        status = response.status;
        answerHeaders = response.headers;
        if (bytes && status >= 200 && status < 300) raw = new Uint8Array(await response.arrayBuffer());
        text = raw ? '' : await response.text();
      } catch (error) {
        if (options.signal?.aborted) throw options.signal.reason;
        const delay = repeatable && attempt < maxRetries ? retryDelayMs(this.#retry, attempt) : undefined;
        if (delay === undefined) {
          throw new ConnectionError(`${method.toUpperCase()} ${url.pathname}: no answer from the service`, {
            cause: error,
          });
        }
        await sleep(delay, options.signal);
        continue;
      }
      if (raw) return raw as ResultOf<OperationAt<P, M>>;
      let parsed: unknown;
      try {
        parsed = text === '' ? undefined : JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      if (status >= 200 && status < 300) return parsed as ResultOf<OperationAt<P, M>>;
      const retryAfter = parseRetryAfter(answerHeaders.get('retry-after'));
      const problem = problemFrom(status, answerHeaders, parsed, retryAfter);
      if (retryableAnswer(status, problem.code, replayable) && attempt < maxRetries) {
        const delay = retryDelayMs(this.#retry, attempt, retryAfter);
        if (delay !== undefined) {
          await sleep(delay, options.signal);
          continue;
        }
      }
      throw problem;
    }
  }
}
