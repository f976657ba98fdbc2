// Owns the client object: one Http transport shared by resources named like the API's paths.
import { type ClientOptions, Http } from './http.ts';
import { Claims } from './resources/claims.ts';
import { CodeSystems } from './resources/code-systems.ts';
import { Encounters } from './resources/encounters.ts';
import { Events } from './resources/events.ts';
import { InsurancePlans } from './resources/insurance-plans.ts';
import { Invoices } from './resources/invoices.ts';
import { Coverages, Patients } from './resources/patients.ts';
import { Practitioners } from './resources/practitioners.ts';
import { Webhooks } from './webhooks.ts';

export class PracticeBilling {
  readonly patients: Patients;
  readonly coverages: Coverages;
  readonly insurancePlans: InsurancePlans;
  readonly practitioners: Practitioners;
  readonly encounters: Encounters;
  readonly invoices: Invoices;
  readonly claims: Claims;
  readonly codeSystems: CodeSystems;
  readonly events: Events;
  readonly webhooks: Webhooks;
  /**
   * The escape hatch: any operation of the OpenAPI document, by path and method, typed from it. `creates`
   * must say whether the operation takes an Idempotency-Key (a creating POST, an invoice's cancel, a
   * claim's send, resubmit or reverse): true sends a new key per call (or `idempotencyKey` from the
   * options) and lets the call be retried safely; the types refuse a wrong value.
   */
  readonly http: Http;

  constructor(options: ClientOptions) {
    this.http = new Http(options);
    this.patients = new Patients(this.http);
    this.coverages = new Coverages(this.http);
    this.insurancePlans = new InsurancePlans(this.http);
    this.practitioners = new Practitioners(this.http);
    this.encounters = new Encounters(this.http);
    this.invoices = new Invoices(this.http);
    this.claims = new Claims(this.http);
    this.codeSystems = new CodeSystems(this.http);
    this.events = new Events(this.http);
    this.webhooks = new Webhooks();
  }
}
