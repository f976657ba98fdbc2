// Owns making one delivery attempt and deciding what follows. The body names the changed resource
// and where to read it, never patient data. Each attempt is signed afresh (Standard Webhooks: a new
// timestamp, the event id as webhook-id) over the exact bytes sent, by the current secret and, during
// a rotation's overlap, the previous one too. A 2xx is success; a 410 disables the endpoint; anything
// else is retried, 8 attempts in all, at 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h after each
// failure plus up to 20% jitter; an endpoint failing for three days since its last success is
// disabled and the practice told.
import { Webhook } from 'standardwebhooks';
import { type EventRecord, eventBody } from '../events/schemas.ts';
import { checkedPayload } from '../jobs/kind.ts';
import { finishJob, type JobRow, rescheduleJob } from '../jobs/queue.ts';
import { AuditLog } from '../platform/audit-log.ts';
import type { Database } from '../platform/db/database.ts';
import { valuesForCommit } from '../platform/db/sent-with-commit.ts';
import { inPractice, type Trx } from '../platform/db/transaction.ts';
import { faultPoint } from '../platform/fault-points.ts';
import { newId } from '../platform/ids.ts';
import type { SecretBox } from '../platform/secret-box.ts';
import { type EndpointRow, readEndpointRow, signingSecrets } from './endpoints.ts';
import { DELIVER_JOB } from './job-kinds.ts';
import type { WebhookSender } from './sender.ts';
import { cancelOtherDeliveries } from './store.ts';

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
  const prepared = await inPractice(ctx.db, practiceId, async (trx) => {
    // The delivery with its endpoint and its event, in one statement.
    const found = await trx
      .selectFrom('webhook_deliveries as d')
      .leftJoin('webhook_endpoints as e', (join) =>
        join.onRef('e.practice_id', '=', 'd.practice_id').onRef('e.id', '=', 'd.endpoint_id'),
      )
      .leftJoin('events as ev', (join) =>
        join.onRef('ev.practice_id', '=', 'd.practice_id').onRef('ev.id', '=', 'd.event_id'),
      )
      .select([
        'd.state',
        'd.attempts',
        'd.endpoint_id',
        'd.event_id',
        'e.id as endpoint_found',
        'e.enabled',
        'e.url',
        'e.secret_encrypted',
        'e.previous_secret_encrypted',
        'e.previous_secret_expires_at',
        'ev.id as event_found',
        'ev.type',
        'ev.occurred_at',
        'ev.object_type',
        'ev.object_id',
        'ev.detail',
      ])
      .where('d.practice_id', '=', practiceId)
      .where('d.id', '=', deliveryId)
      .executeTakeFirst();
    if (found?.state !== 'pending' || found.endpoint_found === null) {
      await finishJob(trx, job, ctx.now());
      return undefined;
    }
    if (!found.enabled) {
      await trx
        .updateTable('webhook_deliveries')
        .set({ state: 'cancelled', finished_at: ctx.now(), next_attempt_at: null })
        .where('practice_id', '=', practiceId)
        .where('id', '=', deliveryId)
        .execute();
      await finishJob(trx, job, ctx.now());
      return undefined;
    }
    if (found.event_found === null)
      throw new Error(`the event ${found.event_id} of delivery ${deliveryId} is missing`);
    const delivery = { id: deliveryId, attempts: found.attempts };
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
  });
  if (!prepared) return;
  if (!ctx.box) throw new Error('SECRET_ENCRYPTION_KEY is not set: webhook deliveries cannot be signed');

  const { delivery, endpoint, event } = prepared;
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

  await inPractice(ctx.db, practiceId, async (trx) => {
    const now = ctx.now();
    const attemptNumber = delivery.attempts + 1;
    const ok = result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300;
    const gone = result.statusCode === 410;
    // The endpoint row is locked for writing and written only when this attempt changes it: a steady
    // stream of successes (or of failures) to one endpoint then never queues its deliveries behind one
    // row. It is always held against deletion until commit (FOR KEY SHARE, as a foreign key would hold
    // it), so that what follows is recorded against a row still there. The lock for writing is FOR NO
    // KEY UPDATE, which a KEY SHARE holder does not block: two deliveries that both hold the row and
    // then both change it wait for each other in turn, not in a circle.
    const readEndpoint = (lock: boolean) =>
      readEndpointRow(trx, practiceId, endpoint.id, lock ? 'noKeyUpdate' : 'keyShare');
    let current = await readEndpoint(false);
    if (!current) {
      // Deleted while the attempt was on its way, and its deliveries with it: nothing is left to record.
      await finishJob(trx, job, now);
      return;
    }
    if (endpointChanges(current, ok, gone, now)) current = (await readEndpoint(true)) ?? current;
    const failingSince = ok ? null : (current.failing_since ?? now);
    const expired = !ok && !gone && now.getTime() - failingSince!.getTime() >= DISABLE_AFTER_MS;
    const lastAttempt = attemptNumber >= MAX_ATTEMPTS;
    const next =
      ok || gone || expired || lastAttempt
        ? null
        : new Date(now.getTime() + RETRY_DELAYS_MS[attemptNumber - 1]! * (1 + JITTER * ctx.random()));

    // The attempt, the delivery's state and the job's end are answered by nobody: they go with the COMMIT.
    const attempt = valuesForCommit({
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
    await trx.insertInto('webhook_attempts').values(attempt.values).modifyEnd(attempt.end).execute();
    const state = valuesForCommit({
      attempts: attemptNumber,
      last_status: result.statusCode,
      state: ok ? ('delivered' as const) : next ? ('pending' as const) : ('failed' as const),
      next_attempt_at: next,
      finished_at: next ? null : now,
      practiceId,
      id: delivery.id,
    });
    const { practiceId: practiceOfDelivery, id: deliveryOfAttempt, ...set } = state.values;
    await trx
      .updateTable('webhook_deliveries')
      .set(set)
      .where('practice_id', '=', practiceOfDelivery)
      .where('id', '=', deliveryOfAttempt)
      .modifyEnd(state.end)
      .execute();
    const disableReason = gone
      ? 'The receiver answered 410 Gone.'
      : expired
        ? 'Every delivery attempt failed for three days since the last success.'
        : null;
    if (endpointChanges(current, ok, gone, now) || (disableReason && current.enabled)) {
      await trx
        .updateTable('webhook_endpoints')
        .set({
          ...(ok ? { last_success_at: now, failing_since: null } : { failing_since: failingSince }),
          ...(disableReason ? { enabled: false, disabled_reason: disableReason } : {}),
          updated_at: now,
        })
        .where('practice_id', '=', practiceId)
        .where('id', '=', endpoint.id)
        .execute();
    }
    // A success settles the event for this endpoint: another delivery of it still waiting to retry
    // (the automatic one, when this was a manual redelivery or a recovery) is cancelled, not sent again.
    if (ok) await cancelOtherDeliveries(trx, practiceId, endpoint.id, event.id, delivery.id, now);
    if (disableReason && current.enabled)
      await tellPracticeDisabled(trx, practiceId, endpoint.id, endpoint.url, disableReason, job.id, now);
    // The next attempt's time is the delivery's, on the service clock; the job waits as long on the
    // database's.
    if (next)
      await rescheduleJob(
        trx,
        job,
        next.getTime() - now.getTime(),
        result.error ?? `HTTP ${result.statusCode}`,
      );
    else await finishJob(trx, job, now);
  });
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
  await trx
    .insertInto('notifications')
    .values({
      practice_id: practiceId,
      id: newId('notification'),
      recipient: 'practice',
      patient_id: null,
      kind: 'webhook_endpoint_disabled',
      subject_type: 'webhook_endpoint',
      subject_id: endpointId,
      message: `Webhook endpoint ${url} was turned off: ${reason} Fix the receiver, then enable it again and recover the failed deliveries.`,
      created_at: now,
    })
    .execute();
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
