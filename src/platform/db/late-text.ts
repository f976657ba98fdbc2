// Owns texts a transaction learns only from a write sent with its COMMIT: an invoice's number, given
// in the COMMIT's own write so that the practice's numbering lock is held across no round trip
// (src/invoices/store.ts). Until the write is answered a placeholder stands for the text in what the
// transaction builds: a deferred write that carries JSON (a stored answer, a queued job's payload) has it
// replaced in SQL, by the value the earlier statement wrote (jsonWithLateTexts); the request's own
// answer is finished once the transaction has committed (lateTextFinisher). The placeholder must
// appear in JSON as it is (no character JSON escapes), and be unique: every occurrence is replaced.
// A job handed over as a follow-on carries its payload object, and an answer stored sealed (a secret
// shown once) its ciphertext, neither of which is finished: a worker's transaction, and a request
// whose answer holds a secret, give no late text. Work rolled back to a savepoint forgets the late
// texts it gave (forgetLateTextsSince): the text may have been had, and belongs to nothing kept.
import { type RawBuilder, sql } from 'kysely';
import { runsDistributed, sendDeferredNow, type Trx } from './transaction.ts';

export interface LateText {
  /** Stands for the text until it is known. */
  placeholder: string;
  /** The text as SQL that a later statement of the transaction reads (a scalar subquery). */
  read: RawBuilder<string>;
  /** The text, once the write that gives it has been answered (at the COMMIT at the latest). */
  value: () => Promise<string>;
  /** The text when its write has been answered already (always, on the embedded database). */
  known: () => string | undefined;
}

const lateTexts = new WeakMap<Trx, LateText[]>();

/** The transaction's write just queued gives `late`'s text. */
export function addLateText(trx: Trx, late: LateText): void {
  const texts = lateTexts.get(trx);
  if (texts) texts.push(late);
  else lateTexts.set(trx, [late]);
}

/** How many late texts the transaction has given so far, for forgetLateTextsSince. */
export function lateTextCount(trx: Trx): number {
  return lateTexts.get(trx)?.length ?? 0;
}

/** Forgets the late texts given after the first `count` (work rolled back to a savepoint). */
export function forgetLateTextsSince(trx: Trx, count: number): void {
  const texts = lateTexts.get(trx);
  if (!texts) return;
  if (count === 0) lateTexts.delete(trx);
  else texts.length = count;
}

/** A text as it appears inside a JSON string. */
function inJson(text: string): string {
  return JSON.stringify(text).slice(1, -1);
}

/** Whether `json` holds a placeholder whose text the transaction has not had yet. */
function pendingIn(trx: Trx, json: string): boolean {
  return (lateTexts.get(trx) ?? []).some(
    (late) => json.includes(late.placeholder) && late.known() === undefined,
  );
}

/**
 * The JSON text for a write deferred to go out after the writes that give the transaction's late texts:
 * as it is when it holds no placeholder still unknown, else SQL (text) that replaces each, in JSON's
 * escaping, by what the transaction wrote (the placeholder kept if that write was undone).
 */
export async function jsonWithLateTexts(trx: Trx, json: string): Promise<string | RawBuilder<string>> {
  // Citus refuses a subquery in an INSERT's VALUES: there the texts are had first, one round trip.
  if (runsDistributed(trx) && pendingIn(trx, json)) await sendDeferredNow(trx);
  let known = json;
  const pending: LateText[] = [];
  for (const late of lateTexts.get(trx) ?? []) {
    if (!known.includes(late.placeholder)) continue;
    const value = late.known();
    if (value === undefined) pending.push(late);
    else known = known.replaceAll(late.placeholder, inJson(value));
  }
  if (pending.length === 0) return known;
  return pending.reduce<RawBuilder<string>>(
    (text, late) =>
      sql<string>`replace(${text}, ${late.placeholder}, (SELECT substr(j, 2, length(j) - 2)
        FROM (SELECT to_json(coalesce(${late.read}, ${late.placeholder}))::text AS j) AS late))`,
    sql<string>`${known}::text`,
  );
}

/**
 * How to finish a JSON text the transaction built (its answer) once it has committed: each placeholder
 * replaced by its text. Undefined when the transaction gave no late text.
 */
export function lateTextFinisher(trx: Trx): ((json: string) => Promise<string>) | undefined {
  const texts = lateTexts.get(trx);
  if (!texts) return undefined;
  return async (json) => {
    let finished = json;
    for (const late of texts) {
      if (finished.includes(late.placeholder)) {
        finished = finished.replaceAll(late.placeholder, inJson(await late.value()));
      }
    }
    return finished;
  };
}
