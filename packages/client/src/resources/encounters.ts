// Encounters (visits), and billing one into an invoice.
import type { Http, RequestOptions } from '../http.ts';
import { PageList } from '../paging.ts';
import type {
  BillRequest,
  BillResult,
  Encounter,
  EncounterRequest,
  EncountersQuery,
  ListPage,
} from '../types.ts';

export class Encounters {
  readonly #http: Http;
  constructor(http: Http) {
    this.#http = http;
  }

  create(body: EncounterRequest, options?: RequestOptions): Promise<Encounter> {
    return this.#http.call('post', '/api/v1/encounters', { body, creates: true }, options);
  }

  get(encounterId: string, options?: RequestOptions): Promise<Encounter> {
    return this.#http.call(
      'get',
      '/api/v1/encounters/{encounterId}',
      { params: { encounterId }, creates: false },
      options,
    );
  }

  /** Newest start first; iterate it to walk every page. */
  list(query: EncountersQuery = {}, options?: RequestOptions): PageList<Encounter> {
    return new PageList(
      async (cursor) =>
        (await this.#http.call(
          'get',
          '/api/v1/encounters',
          { query: { ...query, ...(cursor ? { cursor } : {}) }, creates: false },
          options,
        )) as ListPage<Encounter>,
    );
  }

  /** Turns the visit into an invoice; optionally issues it and queues its claim in the same call. */
  bill(encounterId: string, body: BillRequest = {}, options?: RequestOptions): Promise<BillResult> {
    return this.#http.call(
      'post',
      '/api/v1/encounters/{encounterId}/bill',
      { params: { encounterId }, body, creates: true },
      options,
    );
  }
}
