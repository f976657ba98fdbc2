// Webhook endpoints (secrets stored encrypted), one delivery per event and endpoint, and the log of
// every delivery attempt. Forward-only.
import type { Kysely } from 'kysely';
import { enableTenantSecurity, runScript } from './security.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runScript(
    db,
    `
    CREATE TABLE webhook_endpoints (
      practice_id text NOT NULL REFERENCES practices (id),
      id text NOT NULL,
      url text NOT NULL,
      event_types text[] NOT NULL DEFAULT '{}',
      enabled boolean NOT NULL DEFAULT true,
      disabled_reason text,
      secret_encrypted text NOT NULL,
      previous_secret_encrypted text,
      previous_secret_expires_at timestamptz,
      last_success_at timestamptz,
      failing_since timestamptz,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      PRIMARY KEY (practice_id, id)
    );

    CREATE TABLE webhook_deliveries (
      practice_id text NOT NULL,
      id text NOT NULL,
      endpoint_id text NOT NULL,
      event_id text NOT NULL,
      state text NOT NULL CHECK (state IN ('pending', 'delivered', 'failed', 'cancelled')),
      attempts integer NOT NULL DEFAULT 0,
      next_attempt_at timestamptz,
      last_status integer,
      created_at timestamptz NOT NULL,
      finished_at timestamptz,
      PRIMARY KEY (practice_id, id),
      FOREIGN KEY (practice_id, endpoint_id) REFERENCES webhook_endpoints (practice_id, id) ON DELETE CASCADE,
      FOREIGN KEY (practice_id, event_id) REFERENCES events (practice_id, id)
    );
    CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (practice_id, endpoint_id, created_at);
    CREATE INDEX webhook_deliveries_event ON webhook_deliveries (practice_id, event_id);

    CREATE TABLE webhook_attempts (
      practice_id text NOT NULL,
      id text NOT NULL,
      delivery_id text NOT NULL,
      endpoint_id text NOT NULL,
      event_id text NOT NULL,
      attempt_number integer NOT NULL,
      attempted_at timestamptz NOT NULL,
      status_code integer,
      duration_ms integer NOT NULL,
      response_body text,
      error text,
      next_attempt_at timestamptz,
      PRIMARY KEY (practice_id, id),
      FOREIGN KEY (practice_id, delivery_id) REFERENCES webhook_deliveries (practice_id, id) ON DELETE CASCADE
    );
    CREATE INDEX webhook_attempts_endpoint ON webhook_attempts (practice_id, endpoint_id, attempted_at DESC, id DESC);
    CREATE INDEX webhook_attempts_event ON webhook_attempts (practice_id, event_id, attempted_at, id);
  `,
  );
  await enableTenantSecurity(db, 'webhook_endpoints', { privileges: 'SELECT, UPDATE' });
  await enableTenantSecurity(db, 'webhook_deliveries', { privileges: 'SELECT, INSERT, UPDATE' });
  await enableTenantSecurity(db, 'webhook_attempts', { privileges: 'SELECT, INSERT' });
}
