// The typed mirror of the schema that migrations/ creates. Kysely uses it to type every query.
import type { ColumnType, Generated } from 'kysely';

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
  identifiers: Json<Array<{ type: string; value: string }>>;
  external_system: string | null;
  external_value: string | null;
  contact_points: Json<Array<{ system: string; value: string; use: string | null; rank: number | null }>>;
  addresses: Json<
    Array<{
      type: string | null;
      use: string | null;
      lines: string[];
      city: string | null;
      district: string | null;
      state: string | null;
      postalCode: string | null;
      country: string | null;
    }>
  >;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
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
}
