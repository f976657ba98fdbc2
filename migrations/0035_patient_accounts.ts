// The patient's account (Medical Schemes Act s59(1), regulation 5 of GN R1262): what a practice's
// account must show that the service did not hold (the practice's PCNS, group and VAT numbers, its
// address, phone, e-mail and bank details; a dependant's main member), each notification's e-mail
// outcome, the outbox that keeps what would have been e-mailed when no SMTP server is configured, and
// the job queue's 'mail' lane that sends them (src/jobs/lanes.ts). Forward-only.
import type { Kysely } from 'kysely';
import { APP_ROLE, enableTenantSecurity, runScript } from './security.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runScript(
    db,
    `
    ALTER TABLE practices
      ADD COLUMN practice_number text CHECK (practice_number ~ '^[0-9]{7}$'),
      ADD COLUMN group_practice_number text CHECK (length(group_practice_number) BETWEEN 1 AND 20),
      ADD COLUMN vat_number text CHECK (vat_number ~ '^4[0-9]{9}$'),
      ADD COLUMN address jsonb,
      ADD COLUMN phone text CHECK (length(phone) BETWEEN 1 AND 40),
      ADD COLUMN email text CHECK (length(email) BETWEEN 3 AND 254),
      ADD COLUMN bank_details jsonb;

    ALTER TABLE coverages
      ADD COLUMN member_surname text CHECK (length(member_surname) BETWEEN 1 AND 100),
      ADD COLUMN member_initials text CHECK (length(member_initials) BETWEEN 1 AND 10);

    ALTER TABLE notifications
      ADD COLUMN delivery text NOT NULL DEFAULT 'none'
        CHECK (delivery IN ('none', 'queued', 'sent', 'failed', 'no_address')),
      ADD COLUMN delivery_detail text,
      ADD COLUMN delivery_updated_at timestamptz;
    GRANT UPDATE (delivery, delivery_detail, delivery_updated_at) ON notifications TO ${APP_ROLE};

    -- Written by jobs, like notifications: no reference to practices (migration 0021).
    CREATE TABLE mail_outbox (
      practice_id text NOT NULL,
      id text NOT NULL,
      notification_id text NOT NULL,
      recipient text NOT NULL,
      subject text NOT NULL,
      body text NOT NULL,
      attachment_name text,
      attachment bytea,
      created_at timestamptz NOT NULL,
      PRIMARY KEY (practice_id, id),
      UNIQUE (practice_id, notification_id)
    );
    ALTER TABLE jobs DROP CONSTRAINT jobs_lane_check;
    ALTER TABLE jobs ADD CONSTRAINT jobs_lane_check CHECK (lane IN ('claims', 'webhooks', 'mail'));

    CREATE INDEX mail_outbox_time ON mail_outbox (practice_id, created_at DESC, id DESC);
  `,
  );
  // DELETE: a patient's de-identification removes the copies of the e-mails sent to them.
  await enableTenantSecurity(db, 'mail_outbox', { privileges: 'SELECT, INSERT, DELETE' });
}
