// The typed mirror of the schema that migrations/ creates. Kysely uses it to type every query.
import type { ColumnType, Generated } from 'kysely';
import type {
  ClaimNote,
  LineDiagnosis,
  PatientAddress,
  PatientContactPoint,
  PatientIdentifier,
} from './column-types.ts';

type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
type UpdatedAt = ColumnType<Date, Date | string | undefined, Date | string>;
/** jsonb columns: written as JSON text, read back parsed. */
type Json<T> = ColumnType<T, string, string>;

export interface ServiceSettingsTable {
  name: string;
  value: string;
}

export interface PracticesTable {
  id: string;
  name: string;
  currency: Generated<string>;
  timezone: Generated<string>;
  integrations_enabled: Generated<boolean>;
  vat_rate_basis_points: Generated<number>;
  payment_terms_days: Generated<number>;
  invoice_number_prefix: Generated<string>;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface PractitionersTable {
  practice_id: string;
  id: string;
  name: string;
  registration_number: string | null;
  default_condition_system: string | null;
  default_procedure_system: string | null;
  active: Generated<boolean>;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface ClientsTable {
  practice_id: string;
  id: string;
  name: string;
  permissions: string[];
  allowed_ips: string[];
  rate_limit_per_minute: number | null;
  suspended_at: Date | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface ApiKeysTable {
  practice_id: string;
  id: string;
  client_id: string;
  secret_hash: Buffer;
  expires_at: Date | null;
  revoked_at: Date | null;
  created_at: CreatedAt;
}

export interface AuditEventsTable {
  practice_id: string;
  id: Generated<string>;
  occurred_at: CreatedAt;
  actor: string;
  client_id: string | null;
  key_id: string | null;
  performer_id: string | null;
  source_ip: string | null;
  method: string;
  route: string;
  status: number;
  outcome: string;
  reason: string | null;
  resource_type: string | null;
  resource_id: string | null;
  patient_id: string | null;
  request_id: string;
  idempotency_key: string | null;
}

export interface IdempotencyKeysTable {
  practice_id: string;
  client_id: string;
  key: string;
  fingerprint: string;
  state: 'running' | 'done';
  lease_token: string;
  locked_until: Date;
  response_status: number | null;
  response_headers: Json<Record<string, string>> | null;
  response_body: string | null;
  created_at: CreatedAt;
  expires_at: Date;
}

export interface PatientsTable {
  practice_id: string;
  id: string;
  active: Generated<boolean>;
  prefix: string | null;
  given_names: Json<string[]>;
  last_name: string;
  gender: string | null;
  birth_date: string;
  identifiers: Json<PatientIdentifier[]>;
  external_system: string | null;
  external_value: string | null;
  contact_points: Json<PatientContactPoint[]>;
  addresses: Json<PatientAddress[]>;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface CodeSystemsTable {
  id: string;
  url: string;
  name: string;
  title: string | null;
  description: string | null;
  usage: string[];
  status: Generated<'active' | 'retired'>;
  updated_at: UpdatedAt;
}

export interface CodeConceptsTable {
  id: string;
  code_system_id: string;
  code: string;
  display: string;
  definition: string | null;
  usage: Generated<string[]>;
  default_price: number | null;
  currency: string | null;
  active: Generated<boolean>;
  updated_at: UpdatedAt;
}

export interface TariffModifiersTable {
  system: string;
  code: string;
  display: string;
  percent_basis_points: number;
}

export interface GoverningBodiesTable {
  id: string;
  name: string;
}

export interface RateRow {
  system: string;
  code: string;
  amount: number;
  currency: Generated<string>;
}

export interface GoverningBodyRatesTable extends RateRow {
  governing_body_id: string;
}

export interface InsuranceSchemesTable {
  id: string;
  name: string;
}

export interface InsuranceSchemeRatesTable extends RateRow {
  scheme_id: string;
}

export interface InsurancePlansTable {
  id: string;
  scheme_id: string;
  name: string;
  aliases: string[];
  option_code: string | null;
  active: boolean;
}

export interface InsurancePlanRatesTable extends RateRow {
  plan_id: string;
}

export interface PracticeCodeSystemsTable {
  practice_id: string;
  id: string;
  url: string;
  name: string;
  title: string | null;
  description: string | null;
  usage: string[];
  status: Generated<'active' | 'retired'>;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface PracticeCodeConceptsTable {
  practice_id: string;
  id: string;
  code_system_id: string;
  code: string;
  display: string;
  definition: string | null;
  usage: string[];
  default_price: number | null;
  currency: string | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface CoveragesTable {
  practice_id: string;
  id: string;
  patient_id: string;
  plan_id: string;
  member_number: string;
  dependent_code: string | null;
  start_date: string | null;
  end_date: string | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface PracticePricesTable {
  practice_id: string;
  id: string;
  system: string;
  code: string;
  practitioner_id: string | null;
  amount: number;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface EncountersTable {
  practice_id: string;
  id: string;
  status: string;
  class: string;
  patient_id: string;
  practitioner_id: string | null;
  start_at: Date;
  end_at: Date | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface EncounterDiagnosesTable {
  practice_id: string;
  id: string;
  encounter_id: string;
  position: number;
  system: string;
  code: string;
  display: string;
}

export interface EncounterProceduresTable {
  practice_id: string;
  id: string;
  encounter_id: string;
  position: number;
  status: string;
  system: string;
  code: string;
  display: string;
  diagnosis_codes: string[];
  note: string | null;
}

export interface InvoiceClocksTable {
  practice_id: string;
  last_number: Generated<number>;
  last_change: Generated<Date>;
}

export interface InvoicesTable {
  practice_id: string;
  id: string;
  number: string;
  status: string;
  claim_status: string | null;
  patient_id: string;
  practitioner_id: string | null;
  coverage_id: string | null;
  pricing_coverage_id: string | null;
  place_of_service_code: string | null;
  recipient_name: string | null;
  date: string;
  due_date: string | null;
  currency: string;
  total_net: Generated<number>;
  total_gross: Generated<number>;
  amount_paid: Generated<number>;
  balance_due: ColumnType<number, never, never>;
  issued_at: Date | null;
  closed_reason: Generated<string | null>;
  closed_at: Generated<Date | null>;
  created_at: CreatedAt;
  updated_at: Date;
}

export interface InvoiceEncountersTable {
  practice_id: string;
  invoice_id: string;
  encounter_id: string;
  live: Generated<boolean>;
}

export interface InvoiceLinesTable {
  practice_id: string;
  id: string;
  invoice_id: string;
  position: number;
  service_date: string;
  service_date_end: string | null;
  system: string | null;
  code: string;
  description: string;
  modifiers: string[];
  quantity: number;
  unit_price: number;
  subtotal: number;
  total: number;
  pricing_source: string | null;
  diagnoses: Json<LineDiagnosis[]>;
  procedure_id: string | null;
}

export interface PaymentsTable {
  practice_id: string;
  id: string;
  invoice_id: string;
  amount: number;
  currency: string;
  method: string;
  source: 'patient' | 'insurer';
  reference: string | null;
  received_at: Date;
}

export interface NotificationsTable {
  practice_id: string;
  id: string;
  recipient: 'patient' | 'practice';
  patient_id: string | null;
  kind: string;
  subject_type: string;
  subject_id: string;
  message: string;
  created_at: Date;
}

export interface EventsTable {
  practice_id: string;
  id: string;
  seq: Generated<number>;
  type: string;
  object_type: string;
  object_id: string;
  occurred_at: Date;
  /** The change feed's stamp: events are listed by (stamp, seq). */
  stamp: Date;
}

export interface JobsTable {
  practice_id: string;
  id: string;
  kind: string;
  payload: Json<Record<string, unknown>>;
  state: Generated<'queued' | 'done' | 'failed'>;
  run_at: Date;
  attempts: Generated<number>;
  locked_by: string | null;
  locked_until: Date | null;
  last_error: string | null;
  created_at: Date;
  finished_at: Date | null;
}

export interface ClaimsTable {
  practice_id: string;
  id: string;
  invoice_id: string;
  status: string;
  message: string | null;
  authorization_reference: string | null;
  submitted_at: Date | null;
  currency: string;
  coverage_id: string;
  place_of_service_code: string | null;
  submission_id: string;
  submission_started_at: Date;
  resubmit_after_reversal: Generated<boolean>;
  created_at: Date;
  updated_at: Date;
}

export interface ClaimItemsTable {
  practice_id: string;
  claim_id: string;
  line_number: number;
  line_item_id: string | null;
  decision: 'approved' | 'approved_with_warning' | 'denied';
  submitted: number | null;
  benefit: number | null;
  rejections: Json<ClaimNote[]>;
  warnings: Json<ClaimNote[]>;
}

export interface SandboxInsurerMessagesTable {
  message_id: string;
  kind: string;
  answer: Json<unknown>;
  received_at: Generated<Date>;
}

export interface WebhookEndpointsTable {
  practice_id: string;
  id: string;
  url: string;
  event_types: string[];
  enabled: Generated<boolean>;
  disabled_reason: string | null;
  secret_encrypted: string;
  previous_secret_encrypted: string | null;
  previous_secret_expires_at: Date | null;
  last_success_at: Date | null;
  failing_since: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface WebhookDeliveriesTable {
  practice_id: string;
  id: string;
  endpoint_id: string;
  event_id: string;
  state: 'pending' | 'delivered' | 'failed' | 'cancelled';
  attempts: Generated<number>;
  next_attempt_at: Date | null;
  last_status: number | null;
  created_at: Date;
  finished_at: Date | null;
}

export interface WebhookAttemptsTable {
  practice_id: string;
  id: string;
  delivery_id: string;
  endpoint_id: string;
  event_id: string;
  attempt_number: number;
  attempted_at: Date;
  status_code: number | null;
  duration_ms: number;
  response_body: string | null;
  error: string | null;
  next_attempt_at: Date | null;
}

export interface Tables {
  service_settings: ServiceSettingsTable;
  practices: PracticesTable;
  practitioners: PractitionersTable;
  clients: ClientsTable;
  api_keys: ApiKeysTable;
  audit_events: AuditEventsTable;
  idempotency_keys: IdempotencyKeysTable;
  patients: PatientsTable;
  code_systems: CodeSystemsTable;
  code_concepts: CodeConceptsTable;
  tariff_modifiers: TariffModifiersTable;
  governing_bodies: GoverningBodiesTable;
  governing_body_rates: GoverningBodyRatesTable;
  insurance_schemes: InsuranceSchemesTable;
  insurance_scheme_rates: InsuranceSchemeRatesTable;
  insurance_plans: InsurancePlansTable;
  insurance_plan_rates: InsurancePlanRatesTable;
  practice_code_systems: PracticeCodeSystemsTable;
  practice_code_concepts: PracticeCodeConceptsTable;
  coverages: CoveragesTable;
  practice_prices: PracticePricesTable;
  encounters: EncountersTable;
  encounter_diagnoses: EncounterDiagnosesTable;
  encounter_procedures: EncounterProceduresTable;
  invoice_clocks: InvoiceClocksTable;
  invoices: InvoicesTable;
  invoice_encounters: InvoiceEncountersTable;
  invoice_lines: InvoiceLinesTable;
  payments: PaymentsTable;
  notifications: NotificationsTable;
  events: EventsTable;
  jobs: JobsTable;
  claims: ClaimsTable;
  claim_items: ClaimItemsTable;
  sandbox_insurer_messages: SandboxInsurerMessagesTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
}
