// The published catalogue (code systems and concepts, tariff modifiers, governing bodies, medical
// schemes, plans and their rates), practice-owned code systems and concepts, coverages, practice
// prices and favourites, and encounters with their diagnoses and procedures. Forward-only.
import type { Kysely } from 'kysely';
import { APP_ROLE, enableTenantSecurity, OPERATOR_ROLE, runScript } from './security.ts';

const PUBLISHED_TABLES = [
  'code_systems',
  'code_concepts',
  'tariff_modifiers',
  'governing_bodies',
  'governing_body_rates',
  'insurance_schemes',
  'insurance_scheme_rates',
  'insurance_plans',
  'insurance_plan_rates',
];

export async function up(db: Kysely<unknown>): Promise<void> {
  // Published data: the same for every practice, written only by the catalogue loader (as owner).
  await runScript(
    db,
    `
    CREATE TABLE code_systems (
      id text PRIMARY KEY,
      url text NOT NULL UNIQUE,
      name text NOT NULL,
      title text,
      description text,
      usage text[] NOT NULL,
      status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'retired')),
      updated_at timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE code_concepts (
      id text PRIMARY KEY,
      code_system_id text NOT NULL REFERENCES code_systems (id),
      code text NOT NULL,
      display text NOT NULL,
      definition text,
      usage text[] NOT NULL DEFAULT '{}',
      default_price bigint,
      currency char(3),
      active boolean NOT NULL DEFAULT true,
      updated_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (code_system_id, code)
    );
    CREATE INDEX code_concepts_display ON code_concepts (code_system_id, lower(display));

    CREATE TABLE tariff_modifiers (
      system text NOT NULL,
      code text NOT NULL,
      display text NOT NULL,
      percent_basis_points integer NOT NULL,
      PRIMARY KEY (system, code)
    );

    CREATE TABLE governing_bodies (
      id text PRIMARY KEY,
      name text NOT NULL
    );

    CREATE TABLE governing_body_rates (
      governing_body_id text NOT NULL REFERENCES governing_bodies (id),
      system text NOT NULL,
      code text NOT NULL,
      amount bigint NOT NULL CHECK (amount >= 0),
      currency char(3) NOT NULL DEFAULT 'ZAR',
      PRIMARY KEY (governing_body_id, system, code)
    );
    CREATE INDEX governing_body_rates_code ON governing_body_rates (system, code);

    CREATE TABLE insurance_schemes (
      id text PRIMARY KEY,
      name text NOT NULL
    );

    CREATE TABLE insurance_scheme_rates (
      scheme_id text NOT NULL REFERENCES insurance_schemes (id),
      system text NOT NULL,
      code text NOT NULL,
      amount bigint NOT NULL CHECK (amount >= 0),
      currency char(3) NOT NULL DEFAULT 'ZAR',
      PRIMARY KEY (scheme_id, system, code)
    );

    CREATE TABLE insurance_plans (
      id text PRIMARY KEY,
      scheme_id text NOT NULL REFERENCES insurance_schemes (id),
      name text NOT NULL,
      aliases text[] NOT NULL DEFAULT '{}',
      option_code text,
      active boolean NOT NULL DEFAULT true
    );
    CREATE INDEX insurance_plans_name ON insurance_plans (lower(name));

    CREATE TABLE insurance_plan_rates (
      plan_id text NOT NULL REFERENCES insurance_plans (id),
      system text NOT NULL,
      code text NOT NULL,
      amount bigint NOT NULL CHECK (amount >= 0),
      currency char(3) NOT NULL DEFAULT 'ZAR',
      PRIMARY KEY (plan_id, system, code)
    );
  `,
  );
  for (const table of PUBLISHED_TABLES) {
    await runScript(db, `GRANT SELECT ON ${table} TO ${APP_ROLE}, ${OPERATOR_ROLE};`);
  }

  // Practice-owned code systems and their concepts.
  await runScript(
    db,
    `
    CREATE TABLE practice_code_systems (
      practice_id text NOT NULL REFERENCES practices (id),
      id text NOT NULL,
      url text NOT NULL,
      name text NOT NULL,
      title text,
      description text,
      usage text[] NOT NULL,
      status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'retired')),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (practice_id, id),
      UNIQUE (practice_id, url)
    );

    CREATE TABLE practice_code_concepts (
      practice_id text NOT NULL,
      id text NOT NULL,
      code_system_id text NOT NULL,
      code text NOT NULL,
      display text NOT NULL,
      definition text,
      usage text[] NOT NULL DEFAULT '{}',
      default_price bigint,
      currency char(3),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (practice_id, id),
      UNIQUE (practice_id, code_system_id, code),
      FOREIGN KEY (practice_id, code_system_id) REFERENCES practice_code_systems (practice_id, id)
    );

    CREATE TABLE coverages (
      practice_id text NOT NULL,
      id text NOT NULL,
      patient_id text NOT NULL,
      plan_id text NOT NULL REFERENCES insurance_plans (id),
      member_number text NOT NULL,
      dependent_code text,
      start_date date,
      end_date date,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (practice_id, id),
      FOREIGN KEY (practice_id, patient_id) REFERENCES patients (practice_id, id),
      CHECK (end_date IS NULL OR start_date IS NULL OR end_date >= start_date)
    );
    CREATE INDEX coverages_patient ON coverages (practice_id, patient_id, created_at, id);

    CREATE TABLE practice_prices (
      practice_id text NOT NULL REFERENCES practices (id),
      id text NOT NULL,
      system text NOT NULL,
      code text NOT NULL,
      practitioner_id text,
      amount bigint NOT NULL CHECK (amount >= 0),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (practice_id, id),
      FOREIGN KEY (practice_id, practitioner_id) REFERENCES practitioners (practice_id, id),
      UNIQUE NULLS NOT DISTINCT (practice_id, system, code, practitioner_id)
    );

    CREATE TABLE encounters (
      practice_id text NOT NULL,
      id text NOT NULL,
      status text NOT NULL,
      class text NOT NULL,
      patient_id text NOT NULL,
      practitioner_id text,
      start_at timestamptz NOT NULL,
      end_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (practice_id, id),
      FOREIGN KEY (practice_id, patient_id) REFERENCES patients (practice_id, id),
      FOREIGN KEY (practice_id, practitioner_id) REFERENCES practitioners (practice_id, id)
    );
    CREATE INDEX encounters_patient ON encounters (practice_id, patient_id, start_at DESC, id DESC);
    CREATE INDEX encounters_start ON encounters (practice_id, start_at DESC, id DESC);

    CREATE TABLE encounter_diagnoses (
      practice_id text NOT NULL,
      id text NOT NULL,
      encounter_id text NOT NULL,
      position integer NOT NULL,
      system text NOT NULL,
      code text NOT NULL,
      display text NOT NULL,
      PRIMARY KEY (practice_id, id),
      UNIQUE (practice_id, encounter_id, position),
      FOREIGN KEY (practice_id, encounter_id) REFERENCES encounters (practice_id, id)
    );
    CREATE INDEX encounter_diagnoses_code ON encounter_diagnoses (practice_id, system, code);

    CREATE TABLE encounter_procedures (
      practice_id text NOT NULL,
      id text NOT NULL,
      encounter_id text NOT NULL,
      position integer NOT NULL,
      status text NOT NULL,
      system text NOT NULL,
      code text NOT NULL,
      display text NOT NULL,
      diagnosis_codes text[] NOT NULL DEFAULT '{}',
      note text,
      PRIMARY KEY (practice_id, id),
      UNIQUE (practice_id, encounter_id, position),
      FOREIGN KEY (practice_id, encounter_id) REFERENCES encounters (practice_id, id)
    );
    CREATE INDEX encounter_procedures_code ON encounter_procedures (practice_id, system, code);
  `,
  );
  await enableTenantSecurity(db, 'practice_code_systems', { privileges: 'SELECT, INSERT, UPDATE' });
  await enableTenantSecurity(db, 'practice_code_concepts', { privileges: 'SELECT, INSERT, UPDATE, DELETE' });
  await enableTenantSecurity(db, 'coverages', { privileges: 'SELECT, INSERT, UPDATE' });
  await enableTenantSecurity(db, 'practice_prices', { privileges: 'SELECT' });
  await enableTenantSecurity(db, 'encounters', { privileges: 'SELECT, INSERT, UPDATE' });
  await enableTenantSecurity(db, 'encounter_diagnoses', { privileges: 'SELECT, INSERT' });
  await enableTenantSecurity(db, 'encounter_procedures', { privileges: 'SELECT, INSERT' });
}
