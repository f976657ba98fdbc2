// Patients and their coverages (memberships of insurance plans).
import type { Http, RequestOptions } from '../http.ts';
import { PageList } from '../paging.ts';
import type {
  Coverage,
  CoverageRequest,
  EraseRequest,
  FindPatientsQuery,
  ListPage,
  Patient,
  PatientPatch,
  PatientRecord,
  PatientRequest,
  PatientRetention,
  RetentionRequest,
} from '../types.ts';

export class Patients {
  readonly #http: Http;
  constructor(http: Http) {
    this.#http = http;
  }

  /** Registers a patient (201). A second patient with the same externalId is a 409 `duplicate`. */
  create(body: PatientRequest, options?: RequestOptions): Promise<Patient> {
    return this.#http.call('post', '/api/v1/patients', { body, creates: true }, options);
  }

  get(patientId: string, options?: RequestOptions): Promise<Patient> {
    return this.#http.call(
      'get',
      '/api/v1/patients/{patientId}',
      { params: { patientId }, creates: false },
      options,
    );
  }

  /** Patients carrying the practice's own number (`externalSystem` and `externalId`). */
  find(query: FindPatientsQuery, options?: RequestOptions): PageList<Patient> {
    return new PageList(
      async () =>
        (await this.#http.call(
          'get',
          '/api/v1/patients',
          { query, creates: false },
          options,
        )) as ListPage<Patient>,
    );
  }

  /**
   * Everything the service holds about the patient, for an access request (needs PATIENTS:EXPORT):
   * the patient, coverages, visits, invoices with lines, claims, payments, refunds, notifications and
   * the audit events naming them. The server streams it; this method reads it whole.
   */
  record(patientId: string, options?: RequestOptions): Promise<PatientRecord> {
    return this.#http.call(
      'get',
      '/api/v1/patients/{patientId}/record',
      { params: { patientId }, creates: false },
      options,
    );
  }

  /**
   * De-identifies the patient (needs PATIENTS:UPDATE): refused with 422 `business_rule` while an
   * invoice is open, a claim awaits the insurer, or the records are inside retention and no
   * `lawfulGround` is given. Answers the patient with `erased: true`; sent with an Idempotency-Key, so
   * a retry after a lost answer is answered the same.
   */
  erase(patientId: string, body: EraseRequest, options?: RequestOptions): Promise<Patient> {
    return this.#http.call(
      'post',
      '/api/v1/patients/{patientId}/erase',
      { params: { patientId }, body, creates: true },
      options,
    );
  }

  /** Where the patient's retention stands: last activity, the day it ends (null: kept for life), dormant. */
  retention(patientId: string, options?: RequestOptions): Promise<PatientRetention> {
    return this.#http.call(
      'get',
      '/api/v1/patients/{patientId}/retention',
      { params: { patientId }, creates: false },
      options,
    );
  }

  /** Keeps the patient's records for their lifetime (`lifelong: true`), or returns them to the practice's rule. */
  setRetention(
    patientId: string,
    body: RetentionRequest,
    options?: RequestOptions,
  ): Promise<PatientRetention> {
    return this.#http.call(
      'put',
      '/api/v1/patients/{patientId}/retention',
      { params: { patientId }, body, creates: false },
      options,
    );
  }

  /** A JSON merge patch of the patient's fields: fields sent replace, null clears. */
  update(patientId: string, body: PatientPatch, options?: RequestOptions): Promise<Patient> {
    return this.#http.call(
      'patch',
      '/api/v1/patients/{patientId}',
      { params: { patientId }, body, creates: false },
      options,
    );
  }
}

export class Coverages {
  readonly #http: Http;
  constructor(http: Http) {
    this.#http = http;
  }

  create(patientId: string, body: CoverageRequest, options?: RequestOptions): Promise<Coverage> {
    return this.#http.call(
      'post',
      '/api/v1/patients/{patientId}/coverages',
      { params: { patientId }, body, creates: true },
      options,
    );
  }

  list(patientId: string, options?: RequestOptions): PageList<Coverage> {
    return new PageList(
      async () =>
        (await this.#http.call(
          'get',
          '/api/v1/patients/{patientId}/coverages',
          { params: { patientId }, creates: false },
          options,
        )) as ListPage<Coverage>,
    );
  }

  get(patientId: string, coverageId: string, options?: RequestOptions): Promise<Coverage> {
    return this.#http.call(
      'get',
      '/api/v1/patients/{patientId}/coverages/{coverageId}',
      { params: { patientId, coverageId }, creates: false },
      options,
    );
  }
}
