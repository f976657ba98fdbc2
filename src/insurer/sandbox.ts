// The sandbox insurer: a deterministic stand-in for a medical scheme, so an integrator can reach every
// claim outcome on purpose. Rules, in order:
// - a member number starting with REJECT rejects the whole claim; TIMEOUT never answers;
//   REVFAIL makes reversals fail; an inactive membership rejects the whole claim;
// - per line: no primary diagnosis → denied NO_PRIMARY_DIAGNOSIS; a primary diagnosis that is an
//   external cause (ICD-10 V01 to Y98) → denied DIAGNOSIS_NOT_PRIMARY; a code the plan does not cover
//   → denied NOT_COVERED; billed above the plan's rate → approved_with_warning ABOVE_PLAN_RATE with
//   the plan rate as benefit; otherwise approved at the lower of the amount and the plan rate.
// It remembers every message id it answered and answers a repeat the same way.
import { createHash } from 'node:crypto';
import type { Database } from '../platform/db/database.ts';
import { asOperator, type Trx } from '../platform/db/transaction.ts';
import {
  type AdjudicatedLine,
  type ClaimSubmission,
  type Insurer,
  InsurerNoAnswer,
  type ReversalRequest,
  type ReverseAnswer,
  type SubmitAnswer,
} from './port.ts';

export const SANDBOX_TRIGGERS = { reject: 'REJECT', timeout: 'TIMEOUT', reversalFails: 'REVFAIL' } as const;

const EXTERNAL_CAUSE = /^[V-Y]\d\d/;
const ICD10 = 'http://hl7.org/fhir/sid/icd-10';

function isExternalCause(diagnosis: { system: string | null; code: string }): boolean {
  if (diagnosis.system !== null && diagnosis.system !== ICD10) return false;
  const match = EXTERNAL_CAUSE.exec(diagnosis.code.toUpperCase());
  if (!match) return false;
  const letter = diagnosis.code[0]!.toUpperCase();
  const number = Number(diagnosis.code.slice(1, 3));
  return !(letter === 'V' && number < 1) && !(letter === 'Y' && number > 98);
}

/** A plan's rates: what the sandbox pays per code. */
export type PlanRates = (
  trx: Trx,
  planId: string,
) => Promise<Array<{ system: string; code: string; amount: number }>>;

export class SandboxInsurer implements Insurer {
  /** The sandbox pays approved benefits itself, as a remittance, after REMITTANCE_DELAY_MS. */
  readonly paysRemittances = true;
  readonly #db: Database;
  readonly #delayMs: number;
  readonly #planRates: PlanRates;

  /** `planRates` reads a plan's rates from their owner, insurance. */
  constructor(db: Database, delayMs: number, planRates: PlanRates) {
    this.#db = db;
    this.#delayMs = delayMs;
    this.#planRates = planRates;
  }

  /**
   * Answers a message id once: one transaction decides an answer and stores it, unless one is stored
   * already, which it answers instead (a message sent again). Two deliveries of one id at once both
   * decide, the second insert waits for the first and keeps it, and both return the stored answer.
   */
  async #answerOnce<T>(messageId: string, kind: string, decide: (trx: Trx) => Promise<T>): Promise<T> {
    if (this.#delayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.#delayMs));
    return asOperator(this.#db, async (trx) => {
      const answer = await decide(trx);
      const inserted = await trx
        .insertInto('sandbox_insurer_messages')
        .values({ message_id: messageId, kind, answer: JSON.stringify(answer) })
        .onConflict((oc) => oc.column('message_id').doNothing())
        .returning('answer')
        .executeTakeFirst();
      // Answered before (or by another delivery of this id first): answer as then.
      const kept =
        inserted ??
        (await trx
          .selectFrom('sandbox_insurer_messages')
          .select('answer')
          .where('message_id', '=', messageId)
          .executeTakeFirst());
      if (!kept) throw new Error(`sandbox insurer: no stored answer for message ${messageId}`);
      return kept.answer as T;
    });
  }

  async submit(submission: ClaimSubmission): Promise<SubmitAnswer> {
    const member = submission.member.memberNumber.toUpperCase();
    if (member.startsWith(SANDBOX_TRIGGERS.timeout)) {
      throw new InsurerNoAnswer('The sandbox insurer never answers members whose number starts with TIMEOUT');
    }
    return this.#answerOnce(submission.submissionId, 'submit', (trx) => this.#adjudicate(trx, submission));
  }

  async #adjudicate(trx: Trx, submission: ClaimSubmission): Promise<SubmitAnswer> {
    const member = submission.member.memberNumber.toUpperCase();
    if (member.startsWith(SANDBOX_TRIGGERS.reject)) {
      return rejectedClaim(
        submission,
        `Member ${submission.member.memberNumber} is not known to the scheme (sandbox REJECT trigger).`,
      );
    }
    if (!submission.member.membershipActive) {
      return rejectedClaim(
        submission,
        `Membership ${submission.member.memberNumber} is not active on the date of service.`,
      );
    }
    const rates = await this.#planRates(trx, submission.member.planId);
    const rateOf = (system: string | null, code: string) =>
      rates.find((r) => r.code === code && (system === null || r.system === system));
    const lines = submission.lines.map((line) => adjudicatedLine(line, rateOf(line.system, line.code)));
    return claimAnswer(submission, lines);
  }

  async reverse(request: ReversalRequest): Promise<ReverseAnswer> {
    const member = request.member.memberNumber.toUpperCase();
    if (member.startsWith(SANDBOX_TRIGGERS.timeout)) {
      throw new InsurerNoAnswer('The sandbox insurer never answers members whose number starts with TIMEOUT');
    }
    return this.#answerOnce(request.reversalId, 'reverse', async () =>
      member.startsWith(SANDBOX_TRIGGERS.reversalFails)
        ? {
            reversed: false as const,
            message: 'The scheme could not reverse the claim (sandbox REVFAIL trigger).',
          }
        : { reversed: true as const },
    );
  }
}

/** A whole claim rejected: every line denied with the claim's reason. */
function rejectedClaim(submission: ClaimSubmission, message: string): SubmitAnswer {
  return {
    status: 'rejected',
    message,
    authorizationReference: null,
    lines: submission.lines.map((line) => ({
      lineNumber: line.lineNumber,
      decision: 'denied',
      submitted: line.amount,
      benefit: 0,
      rejections: [{ code: 'CLAIM_REJECTED', description: message }],
      warnings: [],
    })),
  };
}

/** One line's decision, by the rules of the module header, given the plan's rate for its code. */
function adjudicatedLine(
  line: ClaimSubmission['lines'][number],
  rate: { amount: number } | undefined,
): AdjudicatedLine {
  const base = {
    lineNumber: line.lineNumber,
    submitted: line.amount,
    warnings: [] as AdjudicatedLine['warnings'],
  };
  const denied = (code: string, description: string): AdjudicatedLine => ({
    ...base,
    decision: 'denied',
    benefit: 0,
    rejections: [{ code, description }],
  });
  if (!line.primaryDiagnosis) return denied('NO_PRIMARY_DIAGNOSIS', 'The line has no primary diagnosis.');
  if (isExternalCause(line.primaryDiagnosis)) {
    return denied(
      'DIAGNOSIS_NOT_PRIMARY',
      `${line.primaryDiagnosis.code} is an external cause and cannot be the primary diagnosis; put the injury first.`,
    );
  }
  if (!rate) return denied('NOT_COVERED', `Code ${line.code} is not covered by the plan.`);
  // The plan's rate is per unit: a line of several units is allowed that many times the rate.
  const planRate = Math.round(Number(rate.amount) * line.quantity);
  if (line.amount > planRate) {
    return {
      ...base,
      decision: 'approved_with_warning',
      benefit: planRate,
      rejections: [],
      warnings: [
        {
          code: 'ABOVE_PLAN_RATE',
          description: `Billed ${line.amount} above the plan rate ${planRate}; the benefit is the plan rate.`,
        },
      ],
    };
  }
  return { ...base, decision: 'approved', benefit: line.amount, rejections: [] };
}

/** The claim's answer from its lines' decisions: rejected, accepted or partially accepted. */
function claimAnswer(submission: ClaimSubmission, lines: AdjudicatedLine[]): SubmitAnswer {
  const approved = lines.filter((l) => l.decision !== 'denied').length;
  const status = approved === 0 ? 'rejected' : approved === lines.length ? 'accepted' : 'partially_accepted';
  return {
    status,
    message: status === 'rejected' ? 'No line of the claim was approved.' : null,
    authorizationReference:
      status === 'rejected'
        ? null
        : `SBX-${createHash('sha256').update(submission.submissionId).digest('hex').slice(0, 12).toUpperCase()}`,
    lines,
  };
}
