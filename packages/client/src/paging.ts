// Owns auto-paging: a list call gives a PageList, which walks the pages by sending each page's
// `nextCursor` back with the same filters until `hasMore` is false.
import type { ListPage } from './types.ts';

export class PageList<T> implements AsyncIterable<T> {
  readonly #fetchPage: (cursor: string | undefined) => Promise<ListPage<T>>;

  constructor(fetchPage: (cursor: string | undefined) => Promise<ListPage<T>>) {
    this.#fetchPage = fetchPage;
  }

  /** One page: the first, or the one after `cursor` (a `nextCursor` of this list). */
  page(cursor?: string): Promise<ListPage<T>> {
    return this.#fetchPage(cursor);
  }

  /** Every page in order, fetched as it is reached. */
  async *pages(): AsyncGenerator<ListPage<T>, void, undefined> {
    let cursor: string | undefined;
    for (;;) {
      const page = await this.#fetchPage(cursor);
      yield page;
      if (!page.hasMore || page.nextCursor === null) return;
      cursor = page.nextCursor;
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    for await (const page of this.pages()) yield* page.data;
  }

  /** Every record of every page, at most `max` (default all). */
  async toArray(max = Number.POSITIVE_INFINITY): Promise<T[]> {
    const all: T[] = [];
    if (max <= 0) return all;
    for await (const item of this) {
      all.push(item);
      if (all.length >= max) break;
    }
    return all;
  }
}
