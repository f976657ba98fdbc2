// The events list: every event the service emitted (the bodies webhooks carry), oldest first, to
// catch up after downtime by passing the id of the last event received as `after`.
import type { Http, RequestOptions } from '../http.ts';
import { PageList } from '../paging.ts';
import type { Event, EventsQuery, ListPage } from '../types.ts';

export class Events {
  readonly #http: Http;
  constructor(http: Http) {
    this.#http = http;
  }

  /** Oldest first; `after` starts after the event with that id, `type` keeps those types. */
  list(query: EventsQuery = {}, options?: RequestOptions): PageList<Event> {
    return new PageList(
      async (cursor) =>
        (await this.#http.call(
          'get',
          '/api/v1/events',
          { query: { ...query, ...(cursor ? { cursor } : {}) }, creates: false },
          options,
        )) as ListPage<Event>,
    );
  }

  get(eventId: string, options?: RequestOptions): Promise<Event> {
    return this.#http.call(
      'get',
      '/api/v1/events/{eventId}',
      { params: { eventId }, creates: false },
      options,
    );
  }
}
