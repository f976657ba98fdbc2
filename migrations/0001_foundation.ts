// Foundation: the roles the service runs as, practices and their operators' records (practitioners,
// clients, keys), the audit log, idempotency keys and patients. Forward-only.
import { randomBytes } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { enableTenantSecurity, ensureServiceRoles, runScript } from './security.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await ensureServiceRoles(db);

  await runScript(
    db,
    `
    CREATE TABLE service_settings (
      name text PRIMARY KEY,
      value text NOT NULL
    );
    GRANT SELECT ON service_settings TO practice_billing_app, practice_billing_operator;

    CREATE TABLE practices (
      id text PRIMARY KEY,
      name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
      currency char(3) NOT NULL DEFAULT 'ZAR' CHECK (currency ~ '^[A-Z]{3}$'),
      timezone text NOT NULL DEFAULT 'Africa/Johannesburg',
      integrations_enabled boolean NOT NULL DEFAULT true,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE practitioners (
      practice_id text NOT NULL REFERENCES practices (id),
      id text NOT NULL,
      name text NOT NULL,
      registration_number text,
      default_condition_system text,
      default_procedure_system text,
      active boolean NOT NULL DEFAULT true,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (practice_id, id)
    );

    CREATE TABLE clients (
      practice_id text NOT NULL REFERENCES practices (id),
      id text NOT NULL,
      name text NOT NULL,
      permissions text[] NOT NULL DEFAULT '{}',
      allowed_ips text[] NOT NULL DEFAULT '{}',
      rate_limit_per_minute integer CHECK (rate_limit_per_minute > 0),
      suspended_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (practice_id, id)
    );
    CREATE INDEX clients_id ON clients (id);

    CREATE TABLE api_keys (
      practice_id text NOT NULL,
      id text NOT NULL,
      client_id text NOT NULL,
      secret_hash bytea NOT NULL,
      expires_at timestamptz,
      revoked_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (practice_id, id),
      FOREIGN KEY (practice_id, client_id) REFERENCES clients (practice_id, id)
    );
    CREATE INDEX api_keys_id ON api_keys (id);

    CREATE TABLE audit_events (
      practice_id text NOT NULL REFERENCES practices (id),
      id bigint GENERATED ALWAYS AS IDENTITY,
      occurred_at timestamptz NOT NULL DEFAULT clock_timestamp(),
      actor text NOT NULL,
      client_id text,
      key_id text,
      performer_id text,
      source_ip text,
      method text NOT NULL,
      route text NOT NULL,
      status integer NOT NULL,
      outcome text NOT NULL,
      reason text,
      resource_type text,
      resource_id text,
      patient_id text,
      request_id text NOT NULL,
      idempotency_key text,
      PRIMARY KEY (practice_id, id)
    );
    CREATE INDEX audit_events_time ON audit_events (practice_id, occurred_at DESC, id DESC);

    CREATE TABLE idempotency_keys (
      practice_id text NOT NULL REFERENCES practices (id),
      client_id text NOT NULL,
      key text NOT NULL,
      fingerprint text NOT NULL,
      state text NOT NULL CHECK (state IN ('running', 'done')),
      lease_token text NOT NULL,
      locked_until timestamptz NOT NULL,
      response_status integer,
      response_headers jsonb,
      response_body text,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      PRIMARY KEY (practice_id, client_id, key),
      FOREIGN KEY (practice_id, client_id) REFERENCES clients (practice_id, id)
    );
    CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);

    CREATE TABLE patients (
      practice_id text NOT NULL REFERENCES practices (id),
      id text NOT NULL,
      active boolean NOT NULL DEFAULT true,
      prefix text,
      given_names jsonb NOT NULL,
      last_name text NOT NULL,
      gender text,
      birth_date date NOT NULL,
      identifiers jsonb NOT NULL DEFAULT '[]',
      external_system text,
      external_value text,
      contact_points jsonb NOT NULL DEFAULT '[]',
      addresses jsonb NOT NULL DEFAULT '[]',
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (practice_id, id),
      CHECK ((external_system IS NULL) = (external_value IS NULL))
    );
    CREATE UNIQUE INDEX patients_external_id ON patients (practice_id, external_system, external_value)
      WHERE external_system IS NOT NULL;
  `,
  );

  await sql`INSERT INTO service_settings (name, value) VALUES ('cursor_secret', ${randomBytes(32).toString('hex')})`.execute(
    db,
  );

  // The audit log is append-only for everyone, the owner included.
  await runScript(
    db,
    `
    CREATE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION 'audit_events is append-only';
    END $$;
    CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE ON audit_events
      FOR EACH ROW EXECUTE FUNCTION audit_events_append_only();
  `,
  );

  await enableTenantSecurity(db, 'practices', { column: 'id', privileges: 'SELECT, UPDATE' });
  await enableTenantSecurity(db, 'practitioners', { privileges: 'SELECT' });
  await enableTenantSecurity(db, 'clients', { privileges: 'SELECT' });
  await enableTenantSecurity(db, 'api_keys', { privileges: 'SELECT' });
  await enableTenantSecurity(db, 'audit_events', { privileges: 'SELECT, INSERT' });
  await enableTenantSecurity(db, 'idempotency_keys', { privileges: 'SELECT, INSERT, UPDATE, DELETE' });
  await enableTenantSecurity(db, 'patients', { privileges: 'SELECT, INSERT, UPDATE' });
}
