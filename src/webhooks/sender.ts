// Owns the HTTP side of a delivery: one POST of the exact bytes signed, to a public address only
// (checked when connecting), never following redirects, given up after 10 seconds, reading at most a
// small part of the receiver's answer. The HTTP client is loaded on the first delivery, not at start.
import type { Agent, request } from 'undici';
import { AddressRefused, guardedLookup, sendProblem } from './address-guard.ts';

export const DELIVERY_TIMEOUT_MS = 10_000;
const KEPT_RESPONSE_BYTES = 1024;

export interface SendResult {
  statusCode: number | null;
  durationMs: number;
  responseBody: string | null;
  error: string | null;
}

interface HttpClient {
  agent: Agent;
  request: typeof request;
}

export class WebhookSender {
  #client: Promise<HttpClient> | undefined;
  readonly #allowPrivate: boolean;

  constructor(allowPrivate: boolean) {
    this.#allowPrivate = allowPrivate;
  }

  #http(): Promise<HttpClient> {
    this.#client ??= import('undici').then((undici) => ({
      agent: new undici.Agent({
        connect: { lookup: guardedLookup(this.#allowPrivate), timeout: DELIVERY_TIMEOUT_MS },
        headersTimeout: DELIVERY_TIMEOUT_MS,
        bodyTimeout: DELIVERY_TIMEOUT_MS,
      }),
      request: undici.request,
    }));
    return this.#client;
  }

  async send(url: string, headers: Record<string, string>, body: string): Promise<SendResult> {
    const started = performance.now();
    try {
      const refused = sendProblem(url, this.#allowPrivate);
      if (refused) throw new AddressRefused(refused);
      const http = await this.#http();
      const response = await http.request(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'practice-billing-webhooks/1',
          ...headers,
        },
        body,
        dispatcher: http.agent,
        signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
      });
      const chunks: Buffer[] = [];
      let kept = 0;
      for await (const chunk of response.body) {
        const buffer = Buffer.from(chunk as Uint8Array);
        if (kept < KEPT_RESPONSE_BYTES) chunks.push(buffer.subarray(0, KEPT_RESPONSE_BYTES - kept));
        kept += buffer.length;
        if (kept >= KEPT_RESPONSE_BYTES) {
          response.body.destroy();
          break;
        }
      }
      return {
        statusCode: response.statusCode,
        durationMs: Math.round(performance.now() - started),
        responseBody: chunks.length > 0 ? Buffer.concat(chunks).toString('utf8') : null,
        error: null,
      };
    } catch (error) {
      return {
        statusCode: null,
        durationMs: Math.round(performance.now() - started),
        responseBody: null,
        error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
      };
    }
  }

  async close(): Promise<void> {
    const client = this.#client;
    if (client) await (await client).agent.close();
  }
}
