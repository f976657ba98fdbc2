// Patient data retention (POPIA s14, s24; HPCSA Booklet 9 s9): a practice's retention in years (at
// least the six years after dormancy the HPCSA asks for), and a patient's de-identification: the
// personal columns may be empty once erased, the birth year stays, and when and why it happened is
// kept; the visits' diagnoses and procedures can be removed. Forward-only.
import type { Kysely } from 'kysely';
import { APP_ROLE, runScript } from './security.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runScript(
    db,
    `
    ALTER TABLE practices
      ADD COLUMN retention_years integer NOT NULL DEFAULT 6 CHECK (retention_years BETWEEN 6 AND 100);

    ALTER TABLE patients
      ALTER COLUMN last_name DROP NOT NULL,
      ALTER COLUMN birth_date DROP NOT NULL,
      ADD COLUMN birth_year integer,
      ADD COLUMN erased_at timestamptz,
      ADD COLUMN erasure_reason text CHECK (length(erasure_reason) <= 500),
      ADD COLUMN erasure_lawful_ground text CHECK (length(erasure_lawful_ground) <= 500),
      ADD CONSTRAINT patients_erased_or_named CHECK (
        erased_at IS NOT NULL OR (last_name IS NOT NULL AND birth_date IS NOT NULL));

    -- A de-identification removes the visits' diagnoses and procedures.
    GRANT DELETE ON encounter_diagnoses, encounter_procedures TO ${APP_ROLE};
  `,
  );
}
