-- Distributes the tables of a migrated practice-billing database over a Citus cluster
-- (docs/scale-out.md, "Distributing with Citus"). Run it once, as a superuser, on the coordinator,
-- against the database the service's migrations have built, with the workers already added
-- (citus_add_node) and the coordinator in the metadata (citus_set_coordinator_host), so that the
-- reference tables have a copy on the coordinator too:
--
--   psql "$MIGRATION_DATABASE_URL" -v ON_ERROR_STOP=1 -f scripts/citus-distribute.sql
--
-- Every table of the migrated schema is named below exactly once (test/unit/citus-distribute.test.ts
-- fails otherwise, so a new table cannot be forgotten): distributed by practice_id, a reference table,
-- or kept on the coordinator. Not run by the service and not part of its migrations: on plain
-- PostgreSQL and the embedded database nothing of it applies.
\set ON_ERROR_STOP on

CREATE EXTENSION IF NOT EXISTS citus;

BEGIN;

-- The coordinator opens connections to the workers as the role a statement runs under, and the
-- service switches to these two roles in every transaction (SET LOCAL ROLE). Created NOLOGIN by the
-- migrations, they cannot be connected as, and every request would fail. They get LOGIN, and no
-- password: the workers' pg_hba.conf must let them in from the coordinator's address alone (or give
-- them passwords and record those with the coordinator in pg_dist_authinfo).
ALTER ROLE practice_billing_app LOGIN;
ALTER ROLE practice_billing_operator LOGIN;

-- The transaction frame sets the practice with SET LOCAL app.practice_id; this carries it to the
-- workers' connections of the same transaction, where row-level security reads it.
DO $$ BEGIN
  EXECUTE format('ALTER DATABASE %I SET citus.propagate_set_commands = %L', current_database(), 'local');
END $$;

-- Reference tables: global, small, read in joins with every practice's rows; a copy on every node,
-- every write goes to all of them. practices, clients and api_keys are here so that the API-key
-- look-up (api_key_for_request, by key id alone) reads one local copy instead of asking every shard.
SELECT create_reference_table('practices');
SELECT create_reference_table('clients');
SELECT create_reference_table('api_keys');
SELECT create_reference_table('service_settings');
SELECT create_reference_table('code_systems');
SELECT create_reference_table('code_concepts');
SELECT create_reference_table('tariff_modifiers');
SELECT create_reference_table('governing_bodies');
SELECT create_reference_table('governing_body_rates');
SELECT create_reference_table('insurance_schemes');
SELECT create_reference_table('insurance_scheme_rates');
SELECT create_reference_table('insurance_plans');
SELECT create_reference_table('insurance_plan_rates');
SELECT create_reference_table('sandbox_insurer_messages');

-- Tenant tables: distributed by practice_id, all colocated with patients, so that one practice's
-- rows of every table sit on the same node and a request's statements (all within one practice) run
-- on that node alone. Every primary and unique key and every foreign key between them includes
-- practice_id. In the order of their foreign keys: a referenced table before the tables referring to it.
SELECT create_distributed_table('patients', 'practice_id');
SELECT create_distributed_table('practitioners', 'practice_id', colocate_with => 'patients');
SELECT create_distributed_table('coverages', 'practice_id', colocate_with => 'patients');
SELECT create_distributed_table('encounters', 'practice_id', colocate_with => 'patients');
SELECT create_distributed_table('encounter_diagnoses', 'practice_id', colocate_with => 'patients');
SELECT create_distributed_table('encounter_procedures', 'practice_id', colocate_with => 'patients');
SELECT create_distributed_table('practice_code_systems', 'practice_id', colocate_with => 'patients');
SELECT create_distributed_table('practice_code_concepts', 'practice_id', colocate_with => 'patients');
SELECT create_distributed_table('practice_prices', 'practice_id', colocate_with => 'patients');
SELECT create_distributed_table('invoices', 'practice_id', colocate_with => 'patients');
SELECT create_distributed_table('invoice_lines', 'practice_id', colocate_with => 'patients');
SELECT create_distributed_table('invoice_encounters', 'practice_id', colocate_with => 'patients');
SELECT create_distributed_table('invoice_clocks', 'practice_id', colocate_with => 'patients');
SELECT create_distributed_table('payments', 'practice_id', colocate_with => 'patients');
SELECT create_distributed_table('refunds', 'practice_id', colocate_with => 'patients');
SELECT create_distributed_table('claims', 'practice_id', colocate_with => 'patients');
SELECT create_distributed_table('claim_items', 'practice_id', colocate_with => 'patients');
SELECT create_distributed_table('notifications', 'practice_id', colocate_with => 'patients');
SELECT create_distributed_table('mail_outbox', 'practice_id', colocate_with => 'patients');
SELECT create_distributed_table('events', 'practice_id', colocate_with => 'patients');
SELECT create_distributed_table('webhook_endpoints', 'practice_id', colocate_with => 'patients');
SELECT create_distributed_table('webhook_deliveries', 'practice_id', colocate_with => 'patients');
SELECT create_distributed_table('webhook_attempts', 'practice_id', colocate_with => 'patients');
SELECT create_distributed_table('jobs', 'practice_id', colocate_with => 'patients');
SELECT create_distributed_table('audit_events', 'practice_id', colocate_with => 'patients');

-- Kept on the coordinator. idempotency_keys holds the operator's keys with no practice (practice_id
-- NULL, which a distribution column cannot hold); its foreign keys point at reference tables, so it
-- joins the metadata as a Citus local table and is written in the same transactions as the tenant rows.
SELECT citus_add_local_table_to_metadata('idempotency_keys');
-- stays local: rate_limits (UNLOGGED request counts, one upsert per request outside any transaction, never joined)
-- stays local: change_feed_samples (the coordinator's own transaction-id horizon; docs/scale-out.md)

COMMIT;
