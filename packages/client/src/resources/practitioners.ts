// The practice's practitioners, to find the id an encounter names.
import type { Http, RequestOptions } from '../http.ts';
import { PageList } from '../paging.ts';
import type { ListPage, Practitioner, PractitionersQuery } from '../types.ts';

export class Practitioners {
  readonly #http: Http;
  constructor(http: Http) {
    this.#http = http;
  }

  /** `active` keeps the active (or inactive) ones only. */
  list(query: PractitionersQuery = {}, options?: RequestOptions): PageList<Practitioner> {
    return new PageList(
      async (cursor) =>
        (await this.#http.call(
          'get',
          '/api/v1/practitioners',
          { query: { ...query, ...(cursor ? { cursor } : {}) }, creates: false },
          options,
        )) as ListPage<Practitioner>,
    );
  }

  get(practitionerId: string, options?: RequestOptions): Promise<Practitioner> {
    return this.#http.call(
      'get',
      '/api/v1/practitioners/{practitionerId}',
      { params: { practitionerId }, creates: false },
      options,
    );
  }
}
