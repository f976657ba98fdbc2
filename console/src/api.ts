// Owns every call the console makes: the admin API (/admin/v1) with the operator's token, one function
// per operation. A refusal becomes an ApiError carrying the service's Problem detail. Every action
// (POST) carries an Idempotency-Key, so that retrying it never acts twice.
import type {
  ApiKey,
  Attempt,
  AuditEvent,
  Claim,
  Client,
  Dashboard,
  Endpoint,
  Invoice,
  InvoiceDetail,
  InvoiceSummary,
  Notification,
  OutboxMessage,
  Page,
  Practice,
  Recovery,
  Redelivery,
  ServiceMetrics,
} from './types.ts';

export interface AuditFilters {
  clientId?: string;
  method?: string;
  path?: string;
  status?: string;
  since?: string;
  until?: string;
}

export class ApiError extends Error {
  readonly status: number;
  readonly code: string | undefined;
  readonly fieldErrors: Array<{ field: string; message: string }>;

  constructor(
    status: number,
    message: string,
    code?: string,
    fieldErrors: Array<{ field: string; message: string }> = [],
  ) {
    super(message);
    this.status = status;
    this.code = code;
    this.fieldErrors = fieldErrors;
  }
}

type Query = Record<string, string | number | undefined>;

function queryString(query: Query | undefined): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query ?? {}))
    if (value !== undefined && value !== '') params.set(key, String(value));
  const text = params.toString();
  return text ? `?${text}` : '';
}

/** A fresh Idempotency-Key (getRandomValues, unlike randomUUID, works on a plain-http console too). */
export function newIdempotencyKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `console_${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/**
 * Whether a failure is final: a refusal (4xx) the service may have stored under the key and would
 * replay for 24 hours. Not so: a lost answer (no ApiError), `409 conflict` (the first attempt still
 * runs), 408 and 429 (send again later), or a 5xx: the service may have acted, so a retry keeps the key.
 */
export function isFinalRefusal(error: unknown): boolean {
  if (!(error instanceof ApiError) || error.status < 400 || error.status >= 500) return false;
  if (error.status === 409 && error.code === 'conflict') return false;
  return error.status !== 408 && error.status !== 429;
}

/**
 * The Idempotency-Key of one form's action: made when the form is first submitted, and kept while the
 * operator submits the same request again after a failure that may hide an act (its answer lost after
 * the service acted, a 409 conflict, a 5xx), so that the retry replays the first answer; a success, a
 * final refusal (failed: else the same request, its cause fixed, would replay that refusal) or another
 * request starts a new action with a new key.
 */
export class ActionKey {
  #key: string | undefined;
  #request = '';

  for(request: unknown): string {
    const text = JSON.stringify(request);
    if (this.#key === undefined || text !== this.#request) {
      this.#key = newIdempotencyKey();
      this.#request = text;
    }
    return this.#key;
  }

  done(): void {
    this.#key = undefined;
  }

  /** After the action failed with `error`: a final refusal ends the action, any other keeps its key. */
  failed(error: unknown): void {
    if (isFinalRefusal(error)) this.done();
  }
}

/** Waits before each retry of an action whose answer did not come or said to retry. */
const RETRY_DELAYS_MS = [300, 1000, 3000];

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

interface Problem {
  detail?: string;
  title?: string;
  code?: string;
  errors?: Array<{ field: string; message: string }>;
}

export class AdminApi {
  readonly #token: string;

  constructor(token: string) {
    this.#token = token;
  }

  /**
   * One call. A POST acts, so it carries one Idempotency-Key for the whole action (the caller's, else a
   * new one) and is retried with that key when its answer is lost on the way, when the service says the
   * first attempt is still running (409 conflict) or is briefly unavailable (503): the service then
   * replays the first answer instead of acting twice.
   */
  async #call<T>(
    method: string,
    path: string,
    options: { query?: Query; body?: unknown; idempotencyKey?: string } = {},
  ): Promise<T> {
    const key = method === 'POST' ? (options.idempotencyKey ?? newIdempotencyKey()) : undefined;
    for (let attempt = 0; ; attempt += 1) {
      const retry = key !== undefined && attempt < RETRY_DELAYS_MS.length;
      let response: Response;
      try {
        response = await fetch(`/admin/v1${path}${queryString(options.query)}`, {
          method,
          headers: {
            authorization: `Bearer ${this.#token}`,
            ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
            ...(key !== undefined ? { 'idempotency-key': key } : {}),
          },
          ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
        });
      } catch (error) {
        if (!retry) throw error;
        await sleep(RETRY_DELAYS_MS[attempt]!);
        continue;
      }
      const text = await response.text();
      const parsed: unknown = text ? JSON.parse(text) : undefined;
      if (response.ok) return parsed as T;
      const problem = (parsed ?? {}) as Problem;
      if (retry && ((response.status === 409 && problem.code === 'conflict') || response.status === 503)) {
        await sleep(RETRY_DELAYS_MS[attempt]!);
        continue;
      }
      throw new ApiError(
        response.status,
        problem.detail ?? problem.title ?? `The service answered ${response.status}.`,
        problem.code,
        problem.errors ?? [],
      );
    }
  }

  /** A document the service answers (a PDF) as a Blob, for the browser to save. */
  async #file(path: string): Promise<Blob> {
    const response = await fetch(`/admin/v1${path}`, { headers: { authorization: `Bearer ${this.#token}` } });
    if (response.ok) return response.blob();
    const problem = ((await response.json().catch(() => undefined)) ?? {}) as Problem;
    throw new ApiError(
      response.status,
      problem.detail ?? problem.title ?? `The service answered ${response.status}.`,
      problem.code,
      problem.errors ?? [],
    );
  }

  /** The issued invoice's account for the patient (PDF). */
  invoiceDocument(practiceId: string, invoiceId: string) {
    return this.#file(`${this.#invoice(practiceId, invoiceId)}/document`);
  }

  /** What the practice and its patients were told about one invoice, and what became of each e-mail. */
  notificationsAbout(practiceId: string, subjectId: string) {
    return this.#call<Page<Notification>>('GET', `${this.#practice(practiceId)}/notifications`, {
      query: { subjectId, limit: 100 },
    });
  }

  /** E-mails kept instead of sent, newest first. */
  outbox(practiceId: string, cursor?: string) {
    return this.#call<Page<OutboxMessage>>('GET', `${this.#practice(practiceId)}/outbox`, {
      query: { cursor, limit: 50 },
    });
  }

  /** An outbox message's attachment (the account as PDF). */
  outboxAttachment(practiceId: string, messageId: string) {
    return this.#file(`${this.#practice(practiceId)}/outbox/${encodeURIComponent(messageId)}/attachment`);
  }

  #practice(practiceId: string): string {
    return `/practices/${encodeURIComponent(practiceId)}`;
  }

  #invoice(practiceId: string, invoiceId: string): string {
    return `${this.#practice(practiceId)}/invoices/${encodeURIComponent(invoiceId)}`;
  }

  listPractices() {
    return this.#call<Page<Practice>>('GET', '/practices');
  }

  dashboard(practiceId: string, date?: string) {
    return this.#call<Dashboard>('GET', `${this.#practice(practiceId)}/dashboard`, { query: { date } });
  }

  /** The service under load: queue per lane, deepest backlogs, deliveries in flight, requests shed. */
  metrics() {
    return this.#call<ServiceMetrics>('GET', '/metrics');
  }

  listInvoices(
    practiceId: string,
    query: { status?: string; claimStatus?: string; q?: string; cursor?: string; limit?: number },
  ) {
    return this.#call<Page<InvoiceSummary>>('GET', `${this.#practice(practiceId)}/invoices`, { query });
  }

  invoice(practiceId: string, invoiceId: string) {
    return this.#call<InvoiceDetail>('GET', this.#invoice(practiceId, invoiceId));
  }

  /** Everything held about a patient, for an access request (POPIA s23); the read is audited. */
  patientRecord(practiceId: string, patientId: string) {
    return this.#call<unknown>(
      'GET',
      `/practices/${encodeURIComponent(practiceId)}/patients/${encodeURIComponent(patientId)}/record`,
    );
  }

  issueInvoice(practiceId: string, invoiceId: string) {
    return this.#call<Invoice>('POST', `${this.#invoice(practiceId, invoiceId)}/issue`);
  }

  amendInvoice(practiceId: string, invoiceId: string) {
    return this.#call<Invoice>('POST', `${this.#invoice(practiceId, invoiceId)}/amend`);
  }

  /**
   * Cancels an invoice through the admin route that calls the invoices service's cancellation (the
   * same rules as `POST /api/v1/invoices/{id}/cancel`).
   */
  cancelInvoice(practiceId: string, invoiceId: string, reason: string) {
    return this.#call<Invoice>('POST', `${this.#invoice(practiceId, invoiceId)}/cancel`, {
      body: { reason },
    });
  }

  /** Marks an invoice entered in error (it should never have existed): the same rules as cancelling. */
  markEnteredInError(practiceId: string, invoiceId: string, reason: string) {
    return this.#call<Invoice>('POST', `${this.#invoice(practiceId, invoiceId)}/entered-in-error`, {
      body: { reason },
    });
  }

  /** Writes off an invoice's balance; it moves money, so it carries an Idempotency-Key kept across retries. */
  writeOffInvoice(practiceId: string, invoiceId: string, reason: string, idempotencyKey: string) {
    return this.#call<Invoice>('POST', `${this.#invoice(practiceId, invoiceId)}/write-off`, {
      body: { reason },
      idempotencyKey,
    });
  }

  sendClaim(practiceId: string, invoiceId: string, coverageId?: string) {
    return this.#call<Claim>('POST', `${this.#invoice(practiceId, invoiceId)}/claim`, {
      body: coverageId ? { coverageId } : {},
    });
  }

  resubmitClaim(practiceId: string, invoiceId: string, coverageId?: string) {
    return this.#call<Claim>('POST', `${this.#invoice(practiceId, invoiceId)}/claim/resubmit`, {
      body: coverageId ? { coverageId } : {},
    });
  }

  reverseClaim(practiceId: string, invoiceId: string, reason: string) {
    return this.#call<Claim>('POST', `${this.#invoice(practiceId, invoiceId)}/claim/reverse`, {
      body: reason ? { reason } : {},
    });
  }

  addCoverage(practiceId: string, patientId: string, body: { planId: string; memberNumber: string }) {
    return this.#call<{ id: string; memberNumber: string }>(
      'POST',
      `${this.#practice(practiceId)}/patients/${encodeURIComponent(patientId)}/coverages`,
      { body },
    );
  }

  /** Records a payment; `idempotencyKey` is the form's action key, kept across the operator's retries. */
  recordPayment(
    practiceId: string,
    body: {
      invoiceId: string;
      amount: number;
      method: string;
      reference?: string;
      source: string;
      receivedAt?: string;
    },
    idempotencyKey: string,
  ) {
    return this.#call<unknown>('POST', `${this.#practice(practiceId)}/payments`, { body, idempotencyKey });
  }

  /** Records a refund; `idempotencyKey` is the form's action key, kept across the operator's retries. */
  recordRefund(
    practiceId: string,
    body: { invoiceId: string; amount: number; method: string; reference?: string; reason: string },
    idempotencyKey: string,
  ) {
    return this.#call<unknown>('POST', `${this.#practice(practiceId)}/refunds`, { body, idempotencyKey });
  }

  listEndpoints(practiceId: string) {
    return this.#call<Page<Endpoint>>('GET', `${this.#practice(practiceId)}/webhook-endpoints`);
  }

  createEndpoint(practiceId: string, url: string) {
    return this.#call<Endpoint>('POST', `${this.#practice(practiceId)}/webhook-endpoints`, { body: { url } });
  }

  setEndpointEnabled(practiceId: string, endpointId: string, enabled: boolean) {
    return this.#call<Endpoint>(
      'POST',
      `${this.#practice(practiceId)}/webhook-endpoints/${encodeURIComponent(endpointId)}/${enabled ? 'enable' : 'disable'}`,
    );
  }

  rotateSecret(practiceId: string, endpointId: string) {
    return this.#call<Endpoint>(
      'POST',
      `${this.#practice(practiceId)}/webhook-endpoints/${encodeURIComponent(endpointId)}/rotate-secret`,
    );
  }

  recoverDeliveries(practiceId: string, endpointId: string, since: string) {
    return this.#call<Recovery>(
      'POST',
      `${this.#practice(practiceId)}/webhook-endpoints/${encodeURIComponent(endpointId)}/recover`,
      { body: { since } },
    );
  }

  endpointAttempts(practiceId: string, endpointId: string, cursor?: string) {
    return this.#call<Page<Attempt>>(
      'GET',
      `${this.#practice(practiceId)}/webhook-endpoints/${encodeURIComponent(endpointId)}/deliveries`,
      { query: { cursor, limit: 20 } },
    );
  }

  redeliverEvent(practiceId: string, eventId: string, endpointId?: string) {
    return this.#call<Redelivery>(
      'POST',
      `${this.#practice(practiceId)}/events/${encodeURIComponent(eventId)}/redeliver`,
      { body: endpointId ? { endpointId } : {} },
    );
  }

  listClients(practiceId: string) {
    return this.#call<Page<Client>>('GET', `${this.#practice(practiceId)}/clients`);
  }

  createClient(practiceId: string, body: { name: string; permissions: string[] }) {
    return this.#call<Client>('POST', `${this.#practice(practiceId)}/clients`, { body });
  }

  setClientSuspended(clientId: string, suspended: boolean) {
    return this.#call<Client>(
      'POST',
      `/clients/${encodeURIComponent(clientId)}/${suspended ? 'suspend' : 'resume'}`,
    );
  }

  listKeys(clientId: string) {
    return this.#call<Page<ApiKey>>('GET', `/clients/${encodeURIComponent(clientId)}/keys`);
  }

  /** Issues a key; with `expireOldKeyId` the old key keeps working for `graceSeconds`, then stops. */
  issueKey(clientId: string, replacing: { expireOldKeyId: string; graceSeconds: number } | null = null) {
    return this.#call<ApiKey>('POST', `/clients/${encodeURIComponent(clientId)}/keys`, {
      body: replacing ?? {},
    });
  }

  revokeKey(keyId: string) {
    return this.#call<ApiKey>('POST', `/keys/${encodeURIComponent(keyId)}/revoke`);
  }

  /** The audit log, newest first, narrowed by the filters given (`since`/`until` as ISO date-times). */
  auditEvents(practiceId: string, filters: AuditFilters = {}, cursor?: string) {
    return this.#call<Page<AuditEvent>>('GET', `${this.#practice(practiceId)}/audit-events`, {
      query: { ...filters, cursor, limit: 25 },
    });
  }
}
