// Invoices, their lines, the rates known for a line, the payments received and the refunds given.
import type { Http, RequestOptions } from '../http.ts';
import { PageList } from '../paging.ts';
import type {
  CancelInvoiceRequest,
  Invoice,
  InvoicesQuery,
  LineItem,
  LineItemRequest,
  ListPage,
  Payment,
  PaymentRequest,
  Rate,
  Refund,
  RefundRequest,
} from '../types.ts';

export class Invoices {
  readonly #http: Http;
  readonly lineItems: LineItems;
  constructor(http: Http) {
    this.#http = http;
    this.lineItems = new LineItems(http);
  }

  get(invoiceId: string, options?: RequestOptions): Promise<Invoice> {
    return this.#http.call(
      'get',
      '/api/v1/invoices/{invoiceId}',
      { params: { invoiceId }, creates: false },
      options,
    );
  }

  /**
   * Oldest change first. To reconcile, iterate with `updatedSince` to the end, then next time pass
   * the `updatedAt` of the last invoice received: nothing is missed.
   */
  list(query: InvoicesQuery = {}, options?: RequestOptions): PageList<Invoice> {
    return new PageList(
      async (cursor) =>
        (await this.#http.call(
          'get',
          '/api/v1/invoices',
          { query: { ...query, ...(cursor ? { cursor } : {}) }, creates: false },
          options,
        )) as ListPage<Invoice>,
    );
  }

  /**
   * The patient's account of an issued invoice as PDF bytes (a tax invoice when the practice is VAT
   * registered), as the invoice stands now; a draft is a 422. Save it as `${invoice.number}.pdf`.
   */
  async document(invoiceId: string, options?: RequestOptions): Promise<Uint8Array> {
    const bytes: unknown = await this.#http.call(
      'get',
      '/api/v1/invoices/{invoiceId}/document',
      { params: { invoiceId }, creates: false, answer: 'bytes' },
      options,
    );
    return bytes as Uint8Array;
  }

  /** Issues a draft or amending invoice; anything else is a 422. */
  issue(invoiceId: string, options?: RequestOptions): Promise<Invoice> {
    return this.#http.call(
      'post',
      '/api/v1/invoices/{invoiceId}/issue',
      { params: { invoiceId }, body: {}, creates: false },
      options,
    );
  }

  /**
   * Reopens an issued invoice (paid in full included) so that its lines can change; its claim must be
   * settled first (none, rejected or reversed).
   */
  amend(invoiceId: string, options?: RequestOptions): Promise<Invoice> {
    return this.#http.call(
      'post',
      '/api/v1/invoices/{invoiceId}/amend',
      { params: { invoiceId }, body: {}, creates: false },
      options,
    );
  }

  /**
   * Cancels an invoice nothing was paid on (draft, issued, overdue, amending, or balanced for 0; no
   * open or accepted claim), with the reason; its visits can be billed again. Anything else is a 422.
   */
  cancel(invoiceId: string, body: CancelInvoiceRequest, options?: RequestOptions): Promise<Invoice> {
    return this.#http.call(
      'post',
      '/api/v1/invoices/{invoiceId}/cancel',
      { params: { invoiceId }, body, creates: true },
      options,
    );
  }

  /**
   * Records money received from the patient (needs PAYMENTS:CREATE): the invoice becomes
   * partially_paid, or balanced once fully paid. Only an issued, partially paid or overdue invoice
   * takes a payment, and never above its balance due (422). Sent with an Idempotency-Key, so a retry
   * replays the first answer instead of paying twice.
   */
  recordPayment(invoiceId: string, body: PaymentRequest, options?: RequestOptions): Promise<Payment> {
    return this.#http.call(
      'post',
      '/api/v1/invoices/{invoiceId}/payments',
      { params: { invoiceId }, body, creates: true },
      options,
    );
  }

  getPayment(invoiceId: string, paymentId: string, options?: RequestOptions): Promise<Payment> {
    return this.#http.call(
      'get',
      '/api/v1/invoices/{invoiceId}/payments/{paymentId}',
      { params: { invoiceId, paymentId }, creates: false },
      options,
    );
  }

  /**
   * Records money given back to the patient (needs REFUNDS:CREATE): never more than the patient
   * paid on the invoice net of earlier refunds (422). The invoice's amountPaid goes down and its
   * status follows. Sent with an Idempotency-Key, like every create.
   */
  recordRefund(invoiceId: string, body: RefundRequest, options?: RequestOptions): Promise<Refund> {
    return this.#http.call(
      'post',
      '/api/v1/invoices/{invoiceId}/refunds',
      { params: { invoiceId }, body, creates: true },
      options,
    );
  }

  getRefund(invoiceId: string, refundId: string, options?: RequestOptions): Promise<Refund> {
    return this.#http.call(
      'get',
      '/api/v1/invoices/{invoiceId}/refunds/{refundId}',
      { params: { invoiceId, refundId }, creates: false },
      options,
    );
  }

  /** The refunds given on the invoice, oldest first. */
  refunds(invoiceId: string, options?: RequestOptions): PageList<Refund> {
    return new PageList(
      async () =>
        (await this.#http.call(
          'get',
          '/api/v1/invoices/{invoiceId}/refunds',
          { params: { invoiceId }, creates: false },
          options,
        )) as ListPage<Refund>,
    );
  }

  /** The payments received on the invoice, patient and insurer alike. */
  payments(invoiceId: string, options?: RequestOptions): PageList<Payment> {
    return new PageList(
      async () =>
        (await this.#http.call(
          'get',
          '/api/v1/invoices/{invoiceId}/payments',
          { params: { invoiceId }, creates: false },
          options,
        )) as ListPage<Payment>,
    );
  }
}

export class LineItems {
  readonly #http: Http;
  constructor(http: Http) {
    this.#http = http;
  }

  /** Adds a line to a draft or amending invoice; answers the whole invoice. */
  add(invoiceId: string, body: LineItemRequest, options?: RequestOptions): Promise<Invoice> {
    return this.#http.call(
      'post',
      '/api/v1/invoices/{invoiceId}/line-items',
      { params: { invoiceId }, body, creates: true },
      options,
    );
  }

  get(invoiceId: string, lineItemId: string, options?: RequestOptions): Promise<LineItem> {
    return this.#http.call(
      'get',
      '/api/v1/invoices/{invoiceId}/line-items/{lineItemId}',
      { params: { invoiceId, lineItemId }, creates: false },
      options,
    );
  }

  /** Replaces a line whole; answers the whole invoice. */
  replace(
    invoiceId: string,
    lineItemId: string,
    body: LineItemRequest,
    options?: RequestOptions,
  ): Promise<Invoice> {
    return this.#http.call(
      'put',
      '/api/v1/invoices/{invoiceId}/line-items/{lineItemId}',
      { params: { invoiceId, lineItemId }, body, creates: false },
      options,
    );
  }

  delete(invoiceId: string, lineItemId: string, options?: RequestOptions): Promise<Invoice> {
    return this.#http.call(
      'delete',
      '/api/v1/invoices/{invoiceId}/line-items/{lineItemId}',
      { params: { invoiceId, lineItemId }, creates: false },
      options,
    );
  }

  /** The prices known for a line, the current one marked `current`. */
  rates(invoiceId: string, lineItemId: string, options?: RequestOptions): PageList<Rate> {
    return new PageList(
      async (cursor) =>
        (await this.#http.call(
          'get',
          '/api/v1/invoices/{invoiceId}/line-items/{lineItemId}/rates',
          { params: { invoiceId, lineItemId }, query: cursor ? { cursor } : {}, creates: false },
          options,
        )) as ListPage<Rate>,
    );
  }
}
