// Billing: practice billing settings, invoices with their lines and visits, per-practice invoice
// numbering and change clock, payments, patient notifications and the event outbox. Forward-only.
import type { Kysely } from 'kysely';
import { enableTenantSecurity, runScript } from './security.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runScript(
    db,
    `
    ALTER TABLE practices
      ADD COLUMN vat_rate_basis_points integer NOT NULL DEFAULT 0 CHECK (vat_rate_basis_points BETWEEN 0 AND 10000),
      ADD COLUMN payment_terms_days integer NOT NULL DEFAULT 30 CHECK (payment_terms_days BETWEEN 0 AND 365),
      ADD COLUMN invoice_number_prefix text NOT NULL DEFAULT 'INV-' CHECK (length(invoice_number_prefix) <= 20);

    -- One row per practice, locked by every invoice change: it hands out gap-free invoice numbers and a
    -- change time that grows in commit order, so paging by updatedAt never misses a later commit.
    CREATE TABLE invoice_clocks (
      practice_id text PRIMARY KEY REFERENCES practices (id),
      last_number bigint NOT NULL DEFAULT 0,
      last_change timestamptz NOT NULL DEFAULT '-infinity'
    );

    CREATE TABLE invoices (
      practice_id text NOT NULL,
      id text NOT NULL,
      number text NOT NULL,
      status text NOT NULL CHECK (status IN ('draft', 'issued', 'amending', 'balanced', 'cancelled',
        'entered_in_error', 'partially_paid', 'overdue', 'written_off')),
      claim_status text,
      patient_id text NOT NULL,
      practitioner_id text,
      coverage_id text,
      pricing_coverage_id text,
      place_of_service_code text,
      recipient_name text,
      date date NOT NULL,
      due_date date,
      currency char(3) NOT NULL,
      total_net bigint NOT NULL DEFAULT 0,
      total_gross bigint NOT NULL DEFAULT 0,
      amount_paid bigint NOT NULL DEFAULT 0,
      balance_due bigint GENERATED ALWAYS AS (total_gross - amount_paid) STORED,
      issued_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL,
      PRIMARY KEY (practice_id, id),
      UNIQUE (practice_id, number),
      FOREIGN KEY (practice_id, patient_id) REFERENCES patients (practice_id, id),
      FOREIGN KEY (practice_id, coverage_id) REFERENCES coverages (practice_id, id),
      FOREIGN KEY (practice_id, pricing_coverage_id) REFERENCES coverages (practice_id, id)
    );
    CREATE INDEX invoices_changes ON invoices (practice_id, updated_at, id);
    CREATE INDEX invoices_patient ON invoices (practice_id, patient_id, updated_at, id);
    CREATE INDEX invoices_status ON invoices (practice_id, status, due_date);

    CREATE TABLE invoice_encounters (
      practice_id text NOT NULL,
      invoice_id text NOT NULL,
      encounter_id text NOT NULL,
      live boolean NOT NULL DEFAULT true,
      PRIMARY KEY (practice_id, invoice_id, encounter_id),
      FOREIGN KEY (practice_id, invoice_id) REFERENCES invoices (practice_id, id),
      FOREIGN KEY (practice_id, encounter_id) REFERENCES encounters (practice_id, id)
    );
    -- An encounter is on at most one invoice that is not cancelled.
    CREATE UNIQUE INDEX invoice_encounters_live ON invoice_encounters (practice_id, encounter_id) WHERE live;

    CREATE TABLE invoice_lines (
      practice_id text NOT NULL,
      id text NOT NULL,
      invoice_id text NOT NULL,
      position integer NOT NULL,
      service_date date NOT NULL,
      service_date_end date,
      system text,
      code text NOT NULL,
      description text NOT NULL,
      modifiers text[] NOT NULL DEFAULT '{}',
      quantity numeric(9, 4) NOT NULL CHECK (quantity > 0 AND quantity <= 10000),
      unit_price bigint NOT NULL CHECK (unit_price BETWEEN 0 AND 1000000000),
      subtotal bigint NOT NULL,
      total bigint NOT NULL,
      pricing_source text,
      diagnoses jsonb NOT NULL DEFAULT '[]',
      procedure_id text,
      PRIMARY KEY (practice_id, id),
      FOREIGN KEY (practice_id, invoice_id) REFERENCES invoices (practice_id, id)
    );
    CREATE INDEX invoice_lines_invoice ON invoice_lines (practice_id, invoice_id, position);
    CREATE INDEX invoice_lines_code ON invoice_lines (practice_id, system, code);

    CREATE TABLE payments (
      practice_id text NOT NULL,
      id text NOT NULL,
      invoice_id text NOT NULL,
      amount bigint NOT NULL CHECK (amount > 0),
      currency char(3) NOT NULL,
      method text NOT NULL,
      source text NOT NULL CHECK (source IN ('patient', 'insurer')),
      reference text,
      received_at timestamptz NOT NULL,
      PRIMARY KEY (practice_id, id),
      FOREIGN KEY (practice_id, invoice_id) REFERENCES invoices (practice_id, id)
    );
    CREATE INDEX payments_invoice ON payments (practice_id, invoice_id, received_at, id);

    CREATE TABLE notifications (
      practice_id text NOT NULL REFERENCES practices (id),
      id text NOT NULL,
      recipient text NOT NULL CHECK (recipient IN ('patient', 'practice')),
      patient_id text,
      kind text NOT NULL,
      subject_type text NOT NULL,
      subject_id text NOT NULL,
      message text NOT NULL,
      created_at timestamptz NOT NULL,
      PRIMARY KEY (practice_id, id)
    );
    CREATE INDEX notifications_time ON notifications (practice_id, created_at DESC, id DESC);

    -- The outbox: every event is written in the transaction of the change it reports.
    CREATE TABLE events (
      practice_id text NOT NULL REFERENCES practices (id),
      id text NOT NULL,
      seq bigint GENERATED ALWAYS AS IDENTITY,
      type text NOT NULL,
      object_type text NOT NULL,
      object_id text NOT NULL,
      occurred_at timestamptz NOT NULL,
      PRIMARY KEY (practice_id, id)
    );
    CREATE INDEX events_seq ON events (seq);
  `,
  );
  await enableTenantSecurity(db, 'invoice_clocks', { privileges: 'SELECT, INSERT, UPDATE' });
  await enableTenantSecurity(db, 'invoices', { privileges: 'SELECT, INSERT, UPDATE' });
  await enableTenantSecurity(db, 'invoice_encounters', { privileges: 'SELECT, INSERT, UPDATE' });
  await enableTenantSecurity(db, 'invoice_lines', { privileges: 'SELECT, INSERT, UPDATE, DELETE' });
  await enableTenantSecurity(db, 'payments', { privileges: 'SELECT, INSERT' });
  await enableTenantSecurity(db, 'notifications', { privileges: 'SELECT, INSERT' });
  await enableTenantSecurity(db, 'events', { privileges: 'SELECT, INSERT' });
}
