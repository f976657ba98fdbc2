// Owns what rotating SECRET_ENCRYPTION_KEY needs: counting which stored sealed values the configured
// keys open (a process that opens none refuses to start; one that opens only some says how many it
// cannot), and sealing every value again with the current key (`practice-billing secrets re-encrypt`),
// one row per transaction, safe to run twice and while the service runs.
import type { Database } from '../platform/db/database.ts';
import { asOperator } from '../platform/db/transaction.ts';
import type { SealedState, SecretBox } from '../platform/secret-box.ts';
import { readSealed, replaceSealed, SEALED_COLUMNS, type SealedKind } from './store.ts';

export type SealedCounts = Record<SealedState, number>;

export interface ReEncryption {
  resealed: number;
  alreadyCurrent: number;
  /** Changed by the service between the read and the write (a rotation): left as the service wrote it. */
  changedMeanwhile: number;
  unopenable: number;
}

function emptyCounts(): SealedCounts {
  return { current: 0, previous: 0, unopenable: 0 };
}

/** How many stored sealed values each key opens (undefined box: none opens). */
export async function countSealed(db: Database, box: SecretBox | undefined): Promise<SealedCounts> {
  const counts = emptyCounts();
  for (const column of SEALED_COLUMNS) {
    const values = await asOperator(db, (trx) => readSealed(trx, column));
    for (const value of values) counts[box ? box.stateOf(value.sealed) : 'unopenable'] += 1;
  }
  return counts;
}

/**
 * The verdict at start on the stored sealed values: an error message when the keys given open none of
 * them (pure: unit-tested), a warning when they open only some or no key is given, else nothing.
 */
export function judgeSealed(counts: SealedCounts, keyGiven = true): { refuse?: string; warn?: string } {
  const total = counts.current + counts.previous + counts.unopenable;
  if (total === 0 || counts.unopenable === 0) return {};
  if (!keyGiven) {
    // A process without any key (webhooks unavailable) is not refused: it says what it cannot do.
    return {
      warn: `SECRET_ENCRYPTION_KEY is not set: the ${total} stored secrets cannot be opened, so this process delivers no webhook and replays no kept answer that shows a secret`,
    };
  }
  if (counts.unopenable === total) {
    return {
      refuse:
        `SECRET_ENCRYPTION_KEY opens none of the ${total} stored secrets (webhook signing secrets, kept answers): ` +
        'set it to the key that sealed them, or keep that key in SECRET_ENCRYPTION_PREVIOUS_KEYS until ' +
        '`practice-billing secrets re-encrypt` has sealed them with the new one',
    };
  }
  return {
    warn:
      `${counts.unopenable} of the ${total} stored secrets cannot be opened with SECRET_ENCRYPTION_KEY or ` +
      'SECRET_ENCRYPTION_PREVIOUS_KEYS: their webhooks fail and their kept answers are refused until the key that sealed them is given',
  };
}

/** Seals every stored value that a previous key opens with the current key; counts what it did, by kind. */
export async function reEncrypt(db: Database, box: SecretBox): Promise<Record<SealedKind, ReEncryption>> {
  const report: Record<SealedKind, ReEncryption> = {
    webhookSecrets: { resealed: 0, alreadyCurrent: 0, changedMeanwhile: 0, unopenable: 0 },
    idempotentAnswers: { resealed: 0, alreadyCurrent: 0, changedMeanwhile: 0, unopenable: 0 },
  };
  for (const column of SEALED_COLUMNS) {
    const counts = report[column.kind];
    const values = await asOperator(db, (trx) => readSealed(trx, column));
    for (const value of values) {
      const state = box.stateOf(value.sealed);
      if (state === 'current') counts.alreadyCurrent += 1;
      else if (state === 'unopenable') counts.unopenable += 1;
      else {
        const to = box.resealed(value.sealed)!;
        const replaced = await asOperator(db, (trx) => replaceSealed(trx, column, value, to));
        if (replaced) counts.resealed += 1;
        else counts.changedMeanwhile += 1;
      }
    }
  }
  return report;
}
