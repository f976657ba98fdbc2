// Invoices, their lines, the rates known for a line and the payments received.
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
  Rate,
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

  /** Issues a draft or amending invoice; anything else is a 422. */
  issue(invoiceId: string, options?: RequestOptions): Promise<Invoice> {
    return this.#http.call(
      'post',
      '/api/v1/invoices/{invoiceId}/issue',
      { params: { invoiceId }, body: {}, creates: false },
      options,
    );
  }

  /** Reopens an issued invoice so that its lines can change. */
  amend(invoiceId: string, options?: RequestOptions): Promise<Invoice> {
    return this.#http.call(
      'post',
      '/api/v1/invoices/{invoiceId}/amend',
      { params: { invoiceId }, body: {}, creates: false },
      options,
    );
  }

  /**
   * Cancels an invoice nothing was paid on (draft, issued, overdue or amending, no open or accepted
   * claim), with the reason; its visits can be billed again. Anything else is a 422.
   */
  cancel(invoiceId: string, body: CancelInvoiceRequest, options?: RequestOptions): Promise<Invoice> {
    return this.#http.call(
      'post',
      '/api/v1/invoices/{invoiceId}/cancel',
      { params: { invoiceId }, body, creates: false },
      options,
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
