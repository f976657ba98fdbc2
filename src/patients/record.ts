// Owns a patient's record as one JSON document (POPIA s23: what is held about them): the patient,
// then each section of record-reads.ts, written as its keyset pages are read, one page in memory at
// a time, each page in a short transaction of its own so a slow reader holds no connection.
import type { Database } from '../platform/db/database.ts';
import { inPractice } from '../platform/db/transaction.ts';
import { RECORD_SECTIONS, type RecordPage } from './record-reads.ts';
import type { Patient } from './schemas.ts';

/** Rows per page read: a page is the most the document holds in memory beside what is being sent. */
export const RECORD_PAGE_ROWS = 100;

/**
 * The record's JSON text, piece by piece: `{object, generatedAt, patient, coverages: [...], ...}`.
 * A page is read only when the previous pieces have been taken. Sections are read one after another,
 * so a row written while the record is being read may or may not be in it (each page is consistent).
 */
export async function* patientRecordText(
  db: Database,
  practiceId: string,
  patient: Patient,
  generatedAt: Date,
): AsyncGenerator<string> {
  yield `{"object":"patient_record","generatedAt":${JSON.stringify(generatedAt.toISOString())},"patient":${JSON.stringify(patient)}`;
  for (const section of RECORD_SECTIONS) {
    yield `,${JSON.stringify(section.name)}:[`;
    let after: string | null = null;
    let first = true;
    do {
      const from: string | null = after;
      const page: RecordPage = await inPractice(db, practiceId, (trx) =>
        section.read(trx, practiceId, patient.id, from, RECORD_PAGE_ROWS),
      );
      if (page.rows.length > 0) {
        yield (first ? '' : ',') + page.rows.map((row) => JSON.stringify(row)).join(',');
        first = false;
      }
      after = page.last;
    } while (after !== null);
    yield ']';
  }
  yield '}';
}
