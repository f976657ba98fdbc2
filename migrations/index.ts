// The ordered list of migrations. Forward-only: a shipped migration is never edited.
import type { Migration } from 'kysely/migration';
import * as m0001 from './0001_foundation.ts';
import * as m0002 from './0002_catalogue_and_encounters.ts';
import * as m0003 from './0003_billing.ts';
import * as m0004 from './0004_claims_and_jobs.ts';
import * as m0005 from './0005_webhooks.ts';
import * as m0006 from './0006_key_lookup.ts';
import * as m0007 from './0007_change_feed.ts';
import * as m0008 from './0008_events_feed.ts';
import * as m0009 from './0009_invoice_lifecycle.ts';
import * as m0011 from './0011_idempotency_answers.ts';
import * as m0012 from './0012_key_change_signals.ts';
import * as m0013 from './0013_change_feed_horizon.ts';
import * as m0014 from './0014_operator_idempotency_keys.ts';
import * as m0015 from './0015_job_leases.ts';
import * as m0016 from './0016_rate_limits.ts';
import * as m0017 from './0017_job_lanes.ts';
import * as m0018 from './0018_event_detail_and_key_usage.ts';
import * as m0019 from './0019_unpriced_lines.ts';
import * as m0020 from './0020_refunds.ts';
import * as m0021 from './0021_practice_references.ts';
import * as m0022 from './0022_key_change_signals_from_the_application.ts';
import * as m0023 from './0023_job_backlog.ts';
import * as m0024 from './0024_practice_job_backlog.ts';
import * as m0025 from './0025_restorable_by_owner.ts';
import * as m0026 from './0026_migration_table_readable.ts';
import * as m0027 from './0027_deployment_roles.ts';
import * as m0030 from './0030_job_trace_context.ts';
import * as m0035 from './0035_patient_accounts.ts';
import * as m0040 from './0040_invoice_money_columns.ts';
import * as m0041 from './0041_claim_reversal_reason.ts';
import * as m0042 from './0042_invoice_paid_by_insurer.ts';
import * as m0045 from './0045_patient_retention.ts';
import * as m0046 from './0046_practice_offboarding.ts';
import * as m0047 from './0047_lifelong_retention.ts';
import * as m0050 from './0050_drop_practice_job_backlog.ts';
import * as m0055 from './0055_operator_idempotency_keys_apart.ts';

export const migrations: Record<string, Migration> = {
  '0001_foundation': m0001,
  '0002_catalogue_and_encounters': m0002,
  '0003_billing': m0003,
  '0004_claims_and_jobs': m0004,
  '0005_webhooks': m0005,
  '0006_key_lookup': m0006,
  '0007_change_feed': m0007,
  '0008_events_feed': m0008,
  '0009_invoice_lifecycle': m0009,
  '0011_idempotency_answers': m0011,
  '0012_key_change_signals': m0012,
  '0013_change_feed_horizon': m0013,
  '0014_operator_idempotency_keys': m0014,
  '0015_job_leases': m0015,
  '0016_rate_limits': m0016,
  '0017_job_lanes': m0017,
  '0018_event_detail_and_key_usage': m0018,
  '0019_unpriced_lines': m0019,
  '0020_refunds': m0020,
  '0021_practice_references': m0021,
  '0022_key_change_signals_from_the_application': m0022,
  '0023_job_backlog': m0023,
  '0024_practice_job_backlog': m0024,
  '0025_restorable_by_owner': m0025,
  '0026_migration_table_readable': m0026,
  '0027_deployment_roles': m0027,
  '0030_job_trace_context': m0030,
  '0035_patient_accounts': m0035,
  '0040_invoice_money_columns': m0040,
  '0041_claim_reversal_reason': m0041,
  '0042_invoice_paid_by_insurer': m0042,
  '0045_patient_retention': m0045,
  '0046_practice_offboarding': m0046,
  '0047_lifelong_retention': m0047,
  '0050_drop_practice_job_backlog': m0050,
  '0055_operator_idempotency_keys_apart': m0055,
};
