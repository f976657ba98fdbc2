// Owns a practice leaving the service: the export of all its data (one JSON-lines file per table,
// written page by page into DATA_DIR/exports/ for the operator to hand over, and each issued invoice's
// account as the patient received it, as PDF under accounts/) and, after it, the
// deletion of every row of the practice from every table (practice-rows.ts), refused while its jobs
// are in flight. Logs counts only; never the rows.
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { renderAccountPdf } from '../accounts/document.ts';
import { gatherAccount } from '../accounts/service.ts';
import { accountViewOf } from '../accounts/view.ts';
import { forgetOperatorAnswersNaming } from '../idempotency/idempotency-store.ts';
import { practiceJobsInFlight } from '../jobs/queue-figures.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { AppError, fieldErrors, notFound } from '../platform/http/errors.ts';
import { findPractice, markPracticeExported, signalPracticeKeysChanged } from '../practices/store.ts';
import { deletePracticeRows, FIRST_POSITION, practiceRowsPage, practiceTables } from './practice-rows.ts';

const PAGE_ROWS = 500;

export interface PracticeExport {
  object: 'practice_export';
  practiceId: string;
  exportedAt: string;
  /** The folder on the server's disk that holds the export (one `<table>.jsonl` per table, and manifest.json). */
  directory: string;
  tables: Array<{ table: string; file: string; rows: number }>;
  /** The issued invoices' accounts, one `accounts/<invoice number>.pdf` each. */
  accounts: number;
}

/** Writes one table's rows of the practice to `file`, a page at a time; answers how many. */
async function exportTable(trx: Trx, table: string, practiceId: string, file: string): Promise<number> {
  const out = fs.createWriteStream(file, { flags: 'wx', mode: 0o600 });
  let rows = 0;
  try {
    for (let after = FIRST_POSITION; ; ) {
      const page = await practiceRowsPage(trx, table, practiceId, after, PAGE_ROWS);
      for (const { row } of page) {
        if (!out.write(`${JSON.stringify(row)}\n`)) await once(out, 'drain');
      }
      rows += page.length;
      if (page.length < PAGE_ROWS) break;
      after = page[page.length - 1]!.position;
    }
  } finally {
    out.end();
    await once(out, 'close');
  }
  return rows;
}

/** Writes each issued invoice's account, as it stands, into `directory`; answers how many. */
async function exportAccounts(trx: Trx, practiceId: string, directory: string, now: Date): Promise<number> {
  await fs.promises.mkdir(directory, { mode: 0o700 });
  let written = 0;
  for (let after = FIRST_POSITION; ; ) {
    const page = await practiceRowsPage(trx, 'invoices', practiceId, after, PAGE_ROWS);
    for (const { row } of page) {
      const invoice = row as { id: string; number: string; issued_at: string | null };
      if (invoice.issued_at === null) continue;
      const { parts } = await gatherAccount(trx, practiceId, invoice.id);
      const file = path.join(directory, `${invoice.number.replace(/[^\w.-]/g, '_')}.pdf`);
      await fs.promises.writeFile(file, await renderAccountPdf(accountViewOf(parts), now), { mode: 0o600 });
      written += 1;
    }
    if (page.length < PAGE_ROWS) return written;
    after = page[page.length - 1]!.position;
  }
}

/**
 * Exports every row of the practice, in one transaction (one consistent picture), into a new folder
 * under `exportsDir`; notes the export on the practice.
 */
export async function exportPractice(
  trx: Trx,
  practiceId: string,
  exportsDir: string,
  now: Date,
): Promise<PracticeExport> {
  if (!(await findPractice(trx, practiceId))) throw notFound('Practice');
  const directory = path.join(exportsDir, `${practiceId}-${now.toISOString().replace(/[:.]/g, '-')}`);
  await fs.promises.mkdir(directory, { recursive: true, mode: 0o700 });
  const tables: PracticeExport['tables'] = [];
  for (const table of (await practiceTables(trx)).sort()) {
    const file = `${table}.jsonl`;
    tables.push({ table, file, rows: await exportTable(trx, table, practiceId, path.join(directory, file)) });
  }
  const result: PracticeExport = {
    object: 'practice_export',
    practiceId,
    exportedAt: now.toISOString(),
    directory,
    tables,
    accounts: await exportAccounts(trx, practiceId, path.join(directory, 'accounts'), now),
  };
  await fs.promises.writeFile(path.join(directory, 'manifest.json'), `${JSON.stringify(result, null, 2)}\n`, {
    mode: 0o600,
  });
  await markPracticeExported(trx, practiceId, now);
  return result;
}

export interface PracticeDeletion {
  object: 'practice_deletion';
  practiceId: string;
  /** Rows removed, by table. */
  deleted: Record<string, number>;
}

/**
 * Deletes every row of the practice from every table. Refused unless `confirm` repeats the practice's
 * id (422), the practice was exported (409), and none of its jobs is in flight (409).
 */
export async function deletePractice(
  trx: Trx,
  practiceId: string,
  confirm: string,
): Promise<PracticeDeletion> {
  const practice = await findPractice(trx, practiceId);
  if (!practice) throw notFound('Practice');
  if (confirm !== practiceId) {
    throw fieldErrors([
      {
        field: 'confirm',
        code: 'invalid',
        message: 'confirm must repeat the id of the practice being deleted',
      },
    ]);
  }
  if (!practice.exported_at) {
    throw new AppError(
      'conflict',
      'Export the practice first (POST .../export): its data is handed over before it is deleted.',
    );
  }
  const inFlight = await practiceJobsInFlight(trx, practiceId);
  if (inFlight > 0) {
    throw new AppError(
      'conflict',
      `${inFlight} job(s) of the practice are in flight (claims, webhook deliveries); delete it once they have run.`,
    );
  }
  await signalPracticeKeysChanged(trx, practiceId);
  const deleted = await deletePracticeRows(trx, practiceId);
  await forgetOperatorAnswersNaming(trx, practiceId);
  return { object: 'practice_deletion', practiceId, deleted };
}
