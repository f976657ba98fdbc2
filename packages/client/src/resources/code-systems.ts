// Code systems (published and the practice's own) and their codes.
import type { Http, RequestOptions } from '../http.ts';
import { PageList } from '../paging.ts';
import type {
  CodeConcept,
  CodeConceptRequest,
  CodeConceptsQuery,
  CodeSystem,
  CodeSystemRequest,
  CodeSystemsQuery,
  DeletedCodeConcept,
  ListPage,
  Modifier,
} from '../types.ts';

export class CodeSystems {
  readonly #http: Http;
  readonly concepts: CodeConcepts;
  constructor(http: Http) {
    this.#http = http;
    this.concepts = new CodeConcepts(http);
  }

  list(query: CodeSystemsQuery = {}, options?: RequestOptions): PageList<CodeSystem> {
    return new PageList(
      async (cursor) =>
        (await this.#http.call(
          'get',
          '/api/v1/code-systems',
          { query: { ...query, ...(cursor ? { cursor } : {}) }, creates: false },
          options,
        )) as ListPage<CodeSystem>,
    );
  }

  /** Creates a practice-owned code system. */
  create(body: CodeSystemRequest, options?: RequestOptions): Promise<CodeSystem> {
    return this.#http.call('post', '/api/v1/code-systems', { body, creates: true }, options);
  }

  get(codeSystemId: string, options?: RequestOptions): Promise<CodeSystem> {
    return this.#http.call(
      'get',
      '/api/v1/code-systems/{codeSystemId}',
      { params: { codeSystemId }, creates: false },
      options,
    );
  }

  /** The modifiers the system defines (for a procedure line's `modifiers`). */
  modifiers(codeSystemId: string, options?: RequestOptions): PageList<Modifier> {
    return new PageList(
      async () =>
        (await this.#http.call(
          'get',
          '/api/v1/code-systems/{codeSystemId}/modifiers',
          { params: { codeSystemId }, creates: false },
          options,
        )) as ListPage<Modifier>,
    );
  }

  /** Full replacement of a practice-owned system; its name cannot change. */
  replace(codeSystemId: string, body: CodeSystemRequest, options?: RequestOptions): Promise<CodeSystem> {
    return this.#http.call(
      'put',
      '/api/v1/code-systems/{codeSystemId}',
      { params: { codeSystemId }, body, creates: false },
      options,
    );
  }
}

export class CodeConcepts {
  readonly #http: Http;
  constructor(http: Http) {
    this.#http = http;
  }

  /** `code` finds one code exactly, `search` matches the wording. */
  list(codeSystemId: string, query: CodeConceptsQuery = {}, options?: RequestOptions): PageList<CodeConcept> {
    return new PageList(
      async (cursor) =>
        (await this.#http.call(
          'get',
          '/api/v1/code-systems/{codeSystemId}/concepts',
          { params: { codeSystemId }, query: { ...query, ...(cursor ? { cursor } : {}) }, creates: false },
          options,
        )) as ListPage<CodeConcept>,
    );
  }

  add(codeSystemId: string, body: CodeConceptRequest, options?: RequestOptions): Promise<CodeConcept> {
    return this.#http.call(
      'post',
      '/api/v1/code-systems/{codeSystemId}/concepts',
      { params: { codeSystemId }, body, creates: true },
      options,
    );
  }

  get(codeSystemId: string, conceptId: string, options?: RequestOptions): Promise<CodeConcept> {
    return this.#http.call(
      'get',
      '/api/v1/code-systems/{codeSystemId}/concepts/{conceptId}',
      { params: { codeSystemId, conceptId }, creates: false },
      options,
    );
  }

  delete(codeSystemId: string, conceptId: string, options?: RequestOptions): Promise<DeletedCodeConcept> {
    return this.#http.call(
      'delete',
      '/api/v1/code-systems/{codeSystemId}/concepts/{conceptId}',
      { params: { codeSystemId, conceptId }, creates: false },
      options,
    );
  }
}
