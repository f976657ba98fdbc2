// Claims with their per-line items, the job queue that carries background work (claim submissions
// and reversals, remittances, webhook deliveries), and the sandbox insurer's own record of what it
// was sent. Forward-only.
import type { Kysely } from 'kysely';
import { enableTenantSecurity, OPERATOR_ROLE, runScript } from './security.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runScript(
    db,
    `
    CREATE TABLE jobs (
      practice_id text NOT NULL REFERENCES practices (id),
      id text NOT NULL,
      kind text NOT NULL,
      payload jsonb NOT NULL DEFAULT '{}',
      state text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'done', 'failed')),
      run_at timestamptz NOT NULL,
      attempts integer NOT NULL DEFAULT 0,
      locked_by text,
      locked_until timestamptz,
      last_error text,
      created_at timestamptz NOT NULL,
      finished_at timestamptz,
      PRIMARY KEY (practice_id, id)
    );
    CREATE INDEX jobs_due ON jobs (run_at, id) WHERE state = 'queued';

    CREATE TABLE claims (
      practice_id text NOT NULL,
      id text NOT NULL,
      invoice_id text NOT NULL,
      status text NOT NULL CHECK (status IN ('submitting', 'accepted', 'rejected', 'partially_accepted',
        'reversed', 'reversal_failed', 'reversing')),
      message text,
      authorization_reference text,
      submitted_at timestamptz,
      currency char(3) NOT NULL,
      coverage_id text NOT NULL,
      place_of_service_code text,
      submission_id text NOT NULL,
      submission_started_at timestamptz NOT NULL,
      resubmit_after_reversal boolean NOT NULL DEFAULT false,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      PRIMARY KEY (practice_id, id),
      UNIQUE (practice_id, invoice_id),
      FOREIGN KEY (practice_id, invoice_id) REFERENCES invoices (practice_id, id),
      FOREIGN KEY (practice_id, coverage_id) REFERENCES coverages (practice_id, id)
    );

    CREATE TABLE claim_items (
      practice_id text NOT NULL,
      claim_id text NOT NULL,
      line_number integer NOT NULL,
      line_item_id text,
      decision text NOT NULL CHECK (decision IN ('approved', 'approved_with_warning', 'denied')),
      submitted bigint,
      benefit bigint,
      rejections jsonb NOT NULL DEFAULT '[]',
      warnings jsonb NOT NULL DEFAULT '[]',
      PRIMARY KEY (practice_id, claim_id, line_number),
      FOREIGN KEY (practice_id, claim_id) REFERENCES claims (practice_id, id)
    );

    -- The sandbox insurer's memory: what it answered to each submission id, so a retried
    -- submission is answered the same and never adjudicated twice.
    CREATE TABLE sandbox_insurer_messages (
      message_id text PRIMARY KEY,
      kind text NOT NULL,
      answer jsonb NOT NULL,
      received_at timestamptz NOT NULL DEFAULT now()
    );
    GRANT SELECT, INSERT ON sandbox_insurer_messages TO ${OPERATOR_ROLE};
  `,
  );
  await enableTenantSecurity(db, 'jobs', { privileges: 'SELECT, INSERT, UPDATE' });
  await enableTenantSecurity(db, 'claims', { privileges: 'SELECT, INSERT, UPDATE' });
  await enableTenantSecurity(db, 'claim_items', { privileges: 'SELECT, INSERT, DELETE' });
}
