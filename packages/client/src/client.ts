// Owns the client object: one Http transport shared by resources named like the API's paths.
import { type ClientOptions, Http } from './http.ts';
import { Claims } from './resources/claims.ts';
import { CodeSystems } from './resources/code-systems.ts';
import { Encounters } from './resources/encounters.ts';
import { Events } from './resources/events.ts';
import { InsurancePlans } from './resources/insurance-plans.ts';
import { Invoices } from './resources/invoices.ts';
import { Coverages, Patients } from './resources/patients.ts';
import { Webhooks } from './webhooks.ts';

export class PracticeBilling {
  readonly patients: Patients;
  readonly coverages: Coverages;
  readonly insurancePlans: InsurancePlans;
  readonly encounters: Encounters;
  readonly invoices: Invoices;
  readonly claims: Claims;
  readonly codeSystems: CodeSystems;
  readonly events: Events;
  readonly webhooks: Webhooks;
  /** Any operation of the OpenAPI document, by path and method, typed: for what has no resource method. */
  readonly http: Http;

  constructor(options: ClientOptions) {
    this.http = new Http(options);
    this.patients = new Patients(this.http);
    this.coverages = new Coverages(this.http);
    this.insurancePlans = new InsurancePlans(this.http);
    this.encounters = new Encounters(this.http);
    this.invoices = new Invoices(this.http);
    this.claims = new Claims(this.http);
    this.codeSystems = new CodeSystems(this.http);
    this.events = new Events(this.http);
    this.webhooks = new Webhooks();
  }
}
