// Owns the claim-pipeline measurement: POST /encounters/{id}/bill {issue: true, submitClaim: true} for
// pre-created visits at a steady, open-loop rate (a send every 1/rate s, not bursts per second, over up
// to 32 keep-alive connections), while the local receiver collects the claim.status_changed webhooks.
// A claim is done when its second status change (submitting, then the insurer's answer) has arrived;
// which event is the answer is told by event order (the later occurredAt), and afterwards every claim
// is read back (GET /invoices/{id}/claim) so that only claims that really reached `accepted` count.
//   sustained claims/s  accepted-answer webhooks arriving in the steady window (after a 1 s ramp, up to
//                       the last send) ÷ the window's length
//   end to end          bill request sent → accepted webhook received, per claim; one not done within
//                       the drain counts as infinitely late (null in the JSON, "> drain" in the table)
import { Pool } from 'undici';
import { call, mapConcurrent } from './api.ts';
import { percentile, round } from './stats.ts';
import type { Receiver } from './webhook-receiver.ts';

export interface ClaimPhase {
  rate: number;
  seconds: number;
}

/** A visit to bill, with the API key of its practice. */
export interface ClaimVisit {
  encounterId: string;
  key: string;
}

export interface ClaimOptions {
  baseUrl: string;
  visits: ClaimVisit[];
  receiver: Receiver;
  warmup: ClaimPhase;
  measured: ClaimPhase;
  drainTimeoutMs: number;
  connections?: number;
  log: (line: string) => void;
  /** Told when the measured phase's first bill is sent and when its sending ends (synchronously). */
  window?: { begin(): void; end(): void };
}

interface Bill {
  encounterId: string;
  key: string;
  sentAt: number;
  answeredAt?: number;
  status?: number;
  invoiceId?: string;
  claimQueued?: boolean;
  /** The Retry-After of a refusal. */
  retryAfter?: string;
  error?: string;
}

export interface ClaimResult {
  offeredRate: number;
  seconds: number;
  billsSent: number;
  /** Sends per second actually made (below the offered rate when 256 bills were already waiting). */
  sendRate: number;
  billsOk: number;
  billFailures: Record<string, number>;
  billP50Ms: number;
  billP99Ms: number;
  claimsQueued: number;
  claimsAccepted: number;
  /** Claims whose final status was not accepted, by status. */
  otherOutcomes: Record<string, number>;
  /** Claims whose second webhook had not arrived when the drain timed out. */
  unfinished: number;
  sustainedClaimsPerSec: number;
  /** Accepted claims ÷ (last accepted webhook − first bill sent), the drain after the load included. */
  overallClaimsPerSec: number;
  endToEndP50Ms: number;
  endToEndP99Ms: number;
  endToEndMaxMs: number;
  /** Refusals answered 503 without Retry-After. */
  refusedWithoutRetryAfter: number;
  /** When (performance.now()) the last refused bill was answered; undefined when none was. */
  lastRefusalAt?: number;
  drainMs: number;
  webhooksReceived: number;
}

const MAX_WAITING = 256;

async function drive(
  pool: Pool,
  phase: ClaimPhase,
  encounters: ClaimVisit[],
  window?: ClaimOptions['window'],
): Promise<{ bills: Bill[]; startedAt: number; lastSendAt: number }> {
  const bills: Bill[] = [];
  const planned = Math.min(encounters.length, Math.round(phase.rate * phase.seconds));
  let waiting = 0;
  const pending: Promise<void>[] = [];
  const body = JSON.stringify({ issue: true, submitClaim: true });
  const send = ({ encounterId, key }: ClaimVisit) => {
    const bill: Bill = { encounterId, key, sentAt: performance.now() };
    bills.push(bill);
    waiting += 1;
    const request = pool
      .request({
        method: 'POST',
        path: `/api/v1/encounters/${encounterId}/bill`,
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          'idempotency-key': `bench-bill-${encounterId}`,
        },
        body,
      })
      .then(async (response) => {
        const text = await response.body.text();
        bill.answeredAt = performance.now();
        bill.status = response.statusCode;
        const retryAfter = response.headers['retry-after'];
        if (typeof retryAfter === 'string') bill.retryAfter = retryAfter;
        if (response.statusCode === 201) {
          const parsed = JSON.parse(text) as { invoice: { id: string }; claimQueued: boolean | null };
          bill.invoiceId = parsed.invoice.id;
          bill.claimQueued = parsed.claimQueued === true;
        } else {
          bill.error = text.slice(0, 300);
        }
      })
      .catch((error: unknown) => {
        bill.answeredAt = performance.now();
        bill.error = error instanceof Error ? error.message : String(error);
      })
      .finally(() => {
        waiting -= 1;
      });
    pending.push(request);
  };
  window?.begin();
  const startedAt = performance.now();
  let lastSendAt = startedAt;
  let next = 0;
  const endAt = startedAt + phase.seconds * 1000;
  while (next < planned && performance.now() < endAt + 50) {
    const due = Math.min(planned, Math.floor(((performance.now() - startedAt) * phase.rate) / 1000) + 1);
    while (next < due && waiting < MAX_WAITING) {
      send(encounters[next]!);
      lastSendAt = performance.now();
      next += 1;
    }
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  window?.end();
  await Promise.all(pending);
  return { bills, startedAt, lastSendAt };
}

/** The arrival of the accepted (second) status change of each invoice, by event order. */
export function answerArrival(receiver: Receiver, invoiceId: string): number | undefined {
  const deliveries = (receiver.byInvoice.get(invoiceId) ?? []).filter(
    (d) => d.type === 'claim.status_changed',
  );
  if (deliveries.length < 2) return undefined;
  const sorted = [...deliveries].sort(
    (a, b) => a.occurredAtMs - b.occurredAtMs || a.receivedAt - b.receivedAt,
  );
  return sorted[sorted.length - 1]!.receivedAt;
}

async function drain(receiver: Receiver, bills: Bill[], timeoutMs: number): Promise<number> {
  const started = performance.now();
  const queued = bills.filter((b) => b.claimQueued && b.invoiceId);
  while (performance.now() - started < timeoutMs) {
    if (queued.every((b) => answerArrival(receiver, b.invoiceId!) !== undefined)) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return performance.now() - started;
}

export async function runClaimPipeline(options: ClaimOptions): Promise<ClaimResult> {
  const pool = new Pool(options.baseUrl, { connections: options.connections ?? 32, pipelining: 1 });
  try {
    const warmCount = Math.round(options.warmup.rate * options.warmup.seconds);
    const warm = await drive(pool, options.warmup, options.visits.slice(0, warmCount));
    await drain(options.receiver, warm.bills, options.drainTimeoutMs / 2);
    options.log(`claims warm-up: ${warm.bills.length} bills sent`);

    const measuredIds = options.visits.slice(warmCount);
    const { bills, startedAt, lastSendAt } = await drive(pool, options.measured, measuredIds, options.window);
    const drainMs = await drain(options.receiver, bills, options.drainTimeoutMs);

    const ok = bills.filter((b) => b.status === 201 && b.invoiceId);
    const billFailures: Record<string, number> = {};
    for (const b of bills.filter((x) => x.status !== 201)) {
      const reason = b.status ? String(b.status) : (b.error ?? 'error');
      billFailures[reason] = (billFailures[reason] ?? 0) + 1;
    }
    const queued = ok.filter((b) => b.claimQueued);
    // Read every claim back: only those that reached accepted count. A read shed with 503 is retried
    // after its Retry-After, as an integrator's client does, so shedding is never taken for a loss.
    const statuses = await mapConcurrent(queued, 8, async (b) => {
      const answer = await call(options.baseUrl, 'GET', `/api/v1/invoices/${b.invoiceId}/claim`, {
        token: b.key,
      });
      return answer.status === 200 ? (answer.body as { status: string }).status : `http_${answer.status}`;
    });
    const otherOutcomes: Record<string, number> = {};
    const accepted: { bill: Bill; arrival: number | undefined }[] = [];
    queued.forEach((b, i) => {
      if (statuses[i] === 'accepted')
        accepted.push({ bill: b, arrival: answerArrival(options.receiver, b.invoiceId!) });
      else otherOutcomes[statuses[i]!] = (otherOutcomes[statuses[i]!] ?? 0) + 1;
    });
    const arrived = accepted.filter((a) => a.arrival !== undefined);
    const windowStart = startedAt + 1_000;
    const windowEnd = lastSendAt;
    const inWindow = arrived.filter((a) => a.arrival! >= windowStart && a.arrival! <= windowEnd).length;
    // A queued claim not accepted and delivered within the drain counts as infinitely late, so that
    // the percentiles are not flattered by leaving out the slowest (JSON shows them as null).
    const arrivals = new Map(arrived.map((a) => [a.bill, a.arrival!]));
    const endToEnd = queued.map((b) => {
      const arrival = arrivals.get(b);
      return arrival === undefined ? Number.POSITIVE_INFINITY : arrival - b.sentAt;
    });
    const billLatency = ok.map((b) => b.answeredAt! - b.sentAt);
    const lastArrival = Math.max(...arrived.map((a) => a.arrival!));
    const refusals = bills.filter((b) => b.status !== 201);
    const overallSpan = (lastArrival - startedAt) / 1000;
    const sendSpan = (lastSendAt - startedAt) / 1000;
    const result: ClaimResult = {
      offeredRate: options.measured.rate,
      seconds: options.measured.seconds,
      billsSent: bills.length,
      sendRate: round(sendSpan > 0 ? bills.length / sendSpan : 0, 1),
      billsOk: ok.length,
      billFailures,
      billP50Ms: round(percentile(billLatency, 50), 1),
      billP99Ms: round(percentile(billLatency, 99), 1),
      claimsQueued: queued.length,
      claimsAccepted: accepted.length,
      otherOutcomes,
      unfinished: accepted.length - arrived.length,
      sustainedClaimsPerSec: round(
        windowEnd > windowStart ? inWindow / ((windowEnd - windowStart) / 1000) : 0,
        1,
      ),
      overallClaimsPerSec: round(arrived.length > 0 && overallSpan > 0 ? arrived.length / overallSpan : 0, 1),
      endToEndP50Ms: round(percentile(endToEnd, 50), 1),
      endToEndP99Ms: round(percentile(endToEnd, 99), 1),
      endToEndMaxMs: round(endToEnd.length > 0 ? Math.max(...endToEnd) : 0, 1),
      refusedWithoutRetryAfter: refusals.filter((b) => b.status === 503 && !b.retryAfter).length,
      ...(refusals.length > 0 ? { lastRefusalAt: Math.max(...refusals.map((b) => b.answeredAt!)) } : {}),
      drainMs: Math.round(drainMs),
      webhooksReceived: options.receiver.total(),
    };
    // The claims queued, for a later check that none was lost; kept out of the results' JSON.
    Object.defineProperty(result, 'queued', {
      value: queued.map((b) => ({ invoiceId: b.invoiceId!, key: b.key })),
      enumerable: false,
    });
    return result;
  } finally {
    await pool.close();
  }
}

/** The claims a run queued (bills answered 201 with a claim), for checking later that none was lost. */
export function queuedClaims(result: ClaimResult): Array<{ invoiceId: string; key: string }> {
  return (result as ClaimResult & { queued?: Array<{ invoiceId: string; key: string }> }).queued ?? [];
}

/**
 * Waits up to timeoutMs for every claim queued to reach its outcome and its answer webhook; answers
 * how many did not (their claim still without an outcome, or not accepted, or the webhook missing).
 */
export async function lostClaims(
  baseUrl: string,
  receiver: Receiver,
  queued: Array<{ invoiceId: string; key: string }>,
  timeoutMs: number,
): Promise<number> {
  const started = performance.now();
  while (performance.now() - started < timeoutMs) {
    if (queued.every((q) => answerArrival(receiver, q.invoiceId) !== undefined)) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const statuses = await mapConcurrent(queued, 8, async (q) => {
    const response = await fetch(`${baseUrl}/api/v1/invoices/${q.invoiceId}/claim`, {
      headers: { authorization: `Bearer ${q.key}` },
    });
    return ((await response.json()) as { status?: string }).status;
  });
  return queued.filter(
    (q, i) => statuses[i] !== 'accepted' || answerArrival(receiver, q.invoiceId) === undefined,
  ).length;
}
