// An invoice's insurance claim: send, read, resubmit, reverse. Sending answers at once (202) with
// `outcome` queued; the insurer's answer is read later or learned from `claim.status_changed`.
import type { Http, RequestOptions } from '../http.ts';
import type { Claim, ClaimRequest, ClaimReversalRequest } from '../types.ts';

export class Claims {
  readonly #http: Http;
  constructor(http: Http) {
    this.#http = http;
  }

  send(invoiceId: string, body: ClaimRequest = {}, options?: RequestOptions): Promise<Claim> {
    return this.#http.call(
      'post',
      '/api/v1/invoices/{invoiceId}/claim',
      { params: { invoiceId }, body, creates: true },
      options,
    );
  }

  get(invoiceId: string, options?: RequestOptions): Promise<Claim> {
    return this.#http.call(
      'get',
      '/api/v1/invoices/{invoiceId}/claim',
      { params: { invoiceId }, creates: false },
      options,
    );
  }

  resubmit(invoiceId: string, body: ClaimRequest = {}, options?: RequestOptions): Promise<Claim> {
    return this.#http.call(
      'post',
      '/api/v1/invoices/{invoiceId}/claim/resubmit',
      { params: { invoiceId }, body, creates: true },
      options,
    );
  }

  reverse(invoiceId: string, body: ClaimReversalRequest = {}, options?: RequestOptions): Promise<Claim> {
    return this.#http.call(
      'post',
      '/api/v1/invoices/{invoiceId}/claim/reverse',
      { params: { invoiceId }, body, creates: true },
      options,
    );
  }
}
