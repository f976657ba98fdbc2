// Owns making one delivery attempt and deciding what follows. The body names the changed resource
// and where to read it, never patient data. Each attempt is signed afresh (Standard Webhooks: a new
// timestamp, the event id as webhook-id) over the exact bytes sent, by the current secret and, during
// a rotation's overlap, the previous one too. A 2xx is success; a 410 disables the endpoint; anything
// else is retried, 8 attempts in all, at 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h after each
// failure plus up to 20% jitter; an endpoint failing for three days since its last success is
// disabled and the practice told (a notification, e-mailed to the practice's address). A delivery handed over with its job (a follow-on, src/jobs/follow-on.ts;
// or read by the take's transaction, src/jobs/handoff.ts) is sent to its endpoint as that transaction
// read it, without reading it again: an endpoint disabled (or its secret or address changed) in
// between still gets that one send.
import { Webhook } from 'standardwebhooks';
import { type EventRecord, eventBody } from '../events/schemas.ts';
import { handedOverWith, handOver } from '../jobs/handoff.ts';
import { checkedPayload } from '../jobs/kind.ts';
import { finishJob, type JobRow, rescheduleJob } from '../jobs/queue.ts';
import { tellByMail } from '../notifications/tell.ts';
import { AuditLog } from '../platform/audit-log.ts';
import type { Database } from '../platform/db/database.ts';
import { inPractice, type Trx } from '../platform/db/transaction.ts';
import { faultPoint } from '../platform/fault-points.ts';
import { newId } from '../platform/ids.ts';
import { countWebhookAttempt } from '../platform/observability/metrics.ts';
import { annotateActiveSpan } from '../platform/observability/spans.ts';
import type { SecretBox } from '../platform/secret-box.ts';
import { type EndpointRow, readEndpointRow, signingSecrets } from './endpoints.ts';
import { DELIVER_JOB } from './job-kinds.ts';
import type { WebhookSender } from './sender.ts';
import {
  cancelDelivery,
  type DeliveryToAttempt,
  findDeliveriesToAttempt,
  findDeliveryToAttempt,
  insertAttemptWithCommit,
  updateDeliveryWithCommit,
  updateEndpointRow,
} from './store.ts';

export const MAX_ATTEMPTS = 8;
/** Delay after the Nth failed attempt (N from 1). */
export const RETRY_DELAYS_MS = [
  5_000,
  5 * 60_000,
  30 * 60_000,
  2 * 3600_000,
  5 * 3600_000,
  10 * 3600_000,
  10 * 3600_000,
];
export const JITTER = 0.2;
export const DISABLE_AFTER_MS = 3 * 24 * 3600_000;

export interface DeliveryContext {
  db: Database;
  box: SecretBox | undefined;
  sender: WebhookSender;
  publicBaseUrl: string;
  now: () => Date;
  random: () => number;
}

export function deliveryBody(event: EventRecord, baseUrl: string): string {
  return JSON.stringify(eventBody(event, baseUrl));
}

export function signatureHeader(secrets: string[], eventId: string, at: Date, body: string): string {
  return secrets.map((secret) => new Webhook(secret).sign(eventId, at, body)).join(' ');
}

export async function runDeliverJob(ctx: DeliveryContext, job: JobRow): Promise<void> {
  const { deliveryId } = checkedPayload(DELIVER_JOB, job.payload);
  const practiceId = job.practice_id;
  // A follow-on job comes with what the transaction that queued it read (its delivery pending, its
  // endpoint enabled), a job taken from the queue with what its take read (prepareTakenDeliveries);
  // one handed nothing reads it.
  const prepared =
    (handedOverWith(job) as PreparedAttempt | undefined) ??
    (await inPractice(ctx.db, practiceId, (trx) => prepareAttempt(ctx, trx, job, deliveryId)));
  if (!prepared) return;
  annotateActiveSpan({
    'practice_billing.webhook.endpoint.id': prepared.endpoint.id,
    'practice_billing.webhook.delivery.id': prepared.delivery.id,
    'practice_billing.webhook.attempt': prepared.delivery.attempts + 1,
  });
  const sent = await sendAttempt(ctx, prepared);
  const status = sent.result.statusCode;
  countWebhookAttempt(
    status !== null && status >= 200 && status < 300 ? 'delivered' : status === 410 ? 'gone' : 'failed',
  );
  await inPractice(ctx.db, practiceId, (trx) => recordAttempt(ctx, trx, job, prepared, sent));
}

/** What an attempt is made from: the delivery, its endpoint's address and secrets, and its event. */
export interface PreparedAttempt {
  delivery: { id: string; attempts: number };
  endpoint: Pick<
    EndpointRow,
    'id' | 'url' | 'secret_encrypted' | 'previous_secret_encrypted' | 'previous_secret_expires_at'
  >;
  event: EventRecord;
}

type Prepared = PreparedAttempt;
type Sent = Awaited<ReturnType<typeof sendAttempt>>;

/**
 * The delivery, its endpoint and its event, when an attempt is due; otherwise the job ends (the
 * delivery is no longer pending or its endpoint is gone) or the delivery is cancelled (the endpoint
 * is disabled).
 */
async function prepareAttempt(
  ctx: DeliveryContext,
  trx: Trx,
  job: JobRow,
  deliveryId: string,
): Promise<PreparedAttempt | undefined> {
  const practiceId = job.practice_id;
  const found = await findDeliveryToAttempt(trx, practiceId, deliveryId);
  if (found && attemptable(found)) return attemptOf(found);
  if (found?.state !== 'pending' || found.endpoint_found === null) {
    await finishJob(trx, job, ctx.now());
    return undefined;
  }
  if (!found.enabled) {
    await cancelDelivery(trx, practiceId, deliveryId, ctx.now());
    await finishJob(trx, job, ctx.now());
    return undefined;
  }
  throw new Error(`the event ${found.event_id} of delivery ${deliveryId} is missing`);
}

/** Whether a delivery as found can be attempted now: pending, its endpoint there and enabled, its event there. */
function attemptable(found: DeliveryToAttempt): boolean {
  return (
    found.state === 'pending' &&
    found.endpoint_found !== null &&
    found.enabled === true &&
    found.event_found !== null
  );
}

/** An attempt of a delivery found pending, its endpoint enabled and its event there. */
function attemptOf(found: DeliveryToAttempt): PreparedAttempt {
  const delivery = { id: found.id, attempts: found.attempts };
  const endpoint = {
    id: found.endpoint_id,
    url: found.url!,
    secret_encrypted: found.secret_encrypted!,
    previous_secret_encrypted: found.previous_secret_encrypted,
    previous_secret_expires_at: found.previous_secret_expires_at,
  };
  const event: EventRecord = {
    id: found.event_id,
    type: found.type!,
    occurred_at: found.occurred_at!,
    object_type: found.object_type!,
    object_id: found.object_id!,
    detail: found.detail,
  };
  return { delivery, endpoint, event };
}

/**
 * Reads the deliveries of jobs just taken in the take's transaction (one statement per practice) and
 * hands each its attempt when it is pending, its endpoint enabled and its event there; any other
 * delivery is handed nothing, and its job reads it again and ends or cancels it as prepareAttempt does.
 */
export async function prepareTakenDeliveries(trx: Trx, jobs: readonly JobRow[]): Promise<void> {
  const byPractice = Map.groupBy(jobs, (job) => job.practice_id);
  for (const [practiceId, ofPractice] of byPractice) {
    const jobOf = new Map(
      ofPractice.map((job) => [checkedPayload(DELIVER_JOB, job.payload).deliveryId, job] as const),
    );
    for (const found of await findDeliveriesToAttempt(trx, practiceId, [...jobOf.keys()])) {
      const job = jobOf.get(found.id);
      if (job && attemptable(found)) handOver(job, attemptOf(found));
    }
  }
}

/** Signs the body afresh and sends it, outside any transaction. */
async function sendAttempt(ctx: DeliveryContext, { endpoint, event }: Prepared) {
  if (!ctx.box) throw new Error('SECRET_ENCRYPTION_KEY is not set: webhook deliveries cannot be signed');
  const body = deliveryBody(event, ctx.publicBaseUrl);
  const sentAt = ctx.now();
  const headers = {
    'webhook-id': event.id,
    'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
    'webhook-signature': signatureHeader(signingSecrets(endpoint, ctx.box, sentAt), event.id, sentAt, body),
  };
  const result = await ctx.sender.send(endpoint.url, headers, body);
  if (result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300)
    faultPoint('webhook.after_2xx');
  return { result, sentAt };
}

/**
 * Records the attempt and what follows from it: the delivery's state, the endpoint's (failing since,
 * last success, disabled and the practice told), and the job's next run or end.
 */
async function recordAttempt(ctx: DeliveryContext, trx: Trx, job: JobRow, prepared: Prepared, sent: Sent) {
  const practiceId = job.practice_id;
  const now = ctx.now();
  const ok = sent.result.statusCode !== null && sent.result.statusCode >= 200 && sent.result.statusCode < 300;
  const gone = sent.result.statusCode === 410;
  const current = await holdEndpoint(trx, practiceId, prepared.endpoint.id, ok, gone, now);
  if (!current) {
    // Deleted while the attempt was on its way, and its deliveries with it: nothing is left to record.
    await finishJob(trx, job, now);
    return;
  }
  const outcome = attemptOutcome(ctx, current, prepared.delivery.attempts + 1, ok, gone, now);
  await writeAttemptAndState(trx, practiceId, prepared, sent, outcome, now);
  const { endpoint } = prepared;
  const { failingSince, disableReason, next } = outcome;
  if (endpointChanges(current, ok, gone, now) || (disableReason && current.enabled)) {
    await updateEndpointRow(trx, practiceId, endpoint.id, {
      ...(ok ? { last_success_at: now, failing_since: null } : { failing_since: failingSince }),
      ...(disableReason ? { enabled: false, disabled_reason: disableReason } : {}),
      updated_at: now,
    });
  }
  if (disableReason && current.enabled)
    await tellPracticeDisabled(trx, practiceId, endpoint.id, endpoint.url, disableReason, job.id, now);
  // The next attempt's time is the delivery's, on the service clock; the job waits until then on the
  // database's, counted from the transaction's start (now()). The clock is read again here, after the
  // transaction's first statement: its BEGIN goes out with that statement, so the database's start
  // may come after `now`, and counting from `now` would make the job due after the time the log gives.
  if (next)
    await rescheduleJob(
      trx,
      job,
      next.getTime() - ctx.now().getTime(),
      sent.result.error ?? `HTTP ${sent.result.statusCode}`,
    );
  else await finishJob(trx, job, now);
}

/**
 * The endpoint row as this attempt finds it, or undefined when it was deleted. The row is locked for
 * writing and written only when this attempt changes it: a steady stream of successes (or of
 * failures) to one endpoint then never queues its deliveries behind one row. It is always held
 * against deletion until commit (FOR KEY SHARE, as a foreign key would hold it), so that what follows
 * is recorded against a row still there. The lock for writing is FOR NO KEY UPDATE, which a KEY SHARE
 * holder does not block: two deliveries that both hold the row and then both change it wait for each
 * other in turn, not in a circle.
 */
async function holdEndpoint(
  trx: Trx,
  practiceId: string,
  endpointId: string,
  ok: boolean,
  gone: boolean,
  now: Date,
): Promise<EndpointRow | undefined> {
  const readEndpoint = (lock: boolean) =>
    readEndpointRow(trx, practiceId, endpointId, lock ? 'noKeyUpdate' : 'keyShare');
  const current = await readEndpoint(false);
  if (!current) return undefined;
  if (endpointChanges(current, ok, gone, now)) return (await readEndpoint(true)) ?? current;
  return current;
}

interface AttemptOutcome {
  attemptNumber: number;
  ok: boolean;
  failingSince: Date | null;
  /** Why the endpoint is turned off by this attempt, or null. */
  disableReason: string | null;
  /** When the next attempt is due, or null when this was the last. */
  next: Date | null;
}

/** What an attempt's answer decides: whether the endpoint is failing or turned off, and when to try again. */
function attemptOutcome(
  ctx: DeliveryContext,
  current: EndpointRow,
  attemptNumber: number,
  ok: boolean,
  gone: boolean,
  now: Date,
): AttemptOutcome {
  const failingSince = ok ? null : (current.failing_since ?? now);
  const expired = !ok && !gone && now.getTime() - failingSince!.getTime() >= DISABLE_AFTER_MS;
  const lastAttempt = attemptNumber >= MAX_ATTEMPTS;
  const next =
    ok || gone || expired || lastAttempt
      ? null
      : new Date(now.getTime() + RETRY_DELAYS_MS[attemptNumber - 1]! * (1 + JITTER * ctx.random()));
  const disableReason = gone
    ? 'The receiver answered 410 Gone.'
    : expired
      ? 'Every delivery attempt failed for three days since the last success.'
      : null;
  return { attemptNumber, ok, failingSince, disableReason, next };
}

/** The attempt and the delivery's state are answered by nobody: they go with the COMMIT. */
async function writeAttemptAndState(
  trx: Trx,
  practiceId: string,
  { delivery, endpoint, event }: Prepared,
  { result, sentAt }: Sent,
  { attemptNumber, ok, next }: AttemptOutcome,
  now: Date,
): Promise<void> {
  await insertAttemptWithCommit(trx, {
    practice_id: practiceId,
    id: newId('attempt'),
    delivery_id: delivery.id,
    endpoint_id: endpoint.id,
    event_id: event.id,
    attempt_number: attemptNumber,
    attempted_at: sentAt,
    status_code: result.statusCode,
    duration_ms: result.durationMs,
    response_body: result.responseBody,
    error: result.error,
    next_attempt_at: next,
  });
  // A success settles the event for this endpoint: another delivery of it still waiting to retry
  // (the automatic one, when this was a manual redelivery or a recovery) is cancelled, not sent again.
  await updateDeliveryWithCommit(
    trx,
    practiceId,
    delivery.id,
    {
      attempts: attemptNumber,
      last_status: result.statusCode,
      state: ok ? ('delivered' as const) : next ? ('pending' as const) : ('failed' as const),
      next_attempt_at: next,
      finished_at: next ? null : now,
    },
    ok ? { endpointId: endpoint.id, eventId: event.id, now } : undefined,
  );
}

/** How long lastSuccessAt may lag while an endpoint keeps succeeding. */
const SUCCESS_TIME_STEP_MS = 60_000;

/**
 * Whether an attempt's outcome changes the endpoint row: a success after failures or the first one (or
 * the first in a minute, to keep lastSuccessAt current), the first failure after a success, a 410, or
 * failures that may have run for long enough to disable it.
 */
function endpointChanges(row: EndpointRow, ok: boolean, gone: boolean, now: Date): boolean {
  if (ok) {
    return (
      row.failing_since !== null ||
      row.last_success_at === null ||
      now.getTime() - row.last_success_at.getTime() >= SUCCESS_TIME_STEP_MS
    );
  }
  return (
    gone ||
    row.failing_since === null ||
    (row.enabled && now.getTime() - row.failing_since.getTime() >= DISABLE_AFTER_MS)
  );
}

async function tellPracticeDisabled(
  trx: Trx,
  practiceId: string,
  endpointId: string,
  url: string,
  reason: string,
  jobId: string,
  now: Date,
) {
  // Recorded, and e-mailed to the practice's address once this transaction commits (no address: recorded so).
  await tellByMail(trx, {
    practice_id: practiceId,
    id: newId('notification'),
    recipient: 'practice',
    patient_id: null,
    kind: 'webhook_endpoint_disabled',
    subject_type: 'webhook_endpoint',
    subject_id: endpointId,
    message: `Webhook endpoint ${url} was turned off: ${reason} Fix the receiver, then enable it again and recover the failed deliveries.`,
    created_at: now,
  });
  await new AuditLog().write(trx, {
    practiceId,
    actor: 'service',
    clientId: null,
    keyId: null,
    performerId: null,
    sourceIp: null,
    method: 'JOB',
    route: 'webhook.deliver',
    status: 0,
    outcome: 'endpoint_disabled',
    reason,
    resourceType: 'webhook_endpoint',
    resourceId: endpointId,
    patientId: null,
    requestId: jobId,
    idempotencyKey: null,
  });
}
