// Insurance plans, to find the plan a coverage names.
import type { Http, RequestOptions } from '../http.ts';
import { PageList } from '../paging.ts';
import type { InsurancePlan, InsurancePlansQuery, ListPage } from '../types.ts';

export class InsurancePlans {
  readonly #http: Http;
  constructor(http: Http) {
    this.#http = http;
  }

  /** `name` matches part of a plan's name or aliases. */
  list(query: InsurancePlansQuery = {}, options?: RequestOptions): PageList<InsurancePlan> {
    return new PageList(
      async (cursor) =>
        (await this.#http.call(
          'get',
          '/api/v1/insurance-plans',
          { query: { ...query, ...(cursor ? { cursor } : {}) }, creates: false },
          options,
        )) as ListPage<InsurancePlan>,
    );
  }
}
