// Owns reading the operator's dashboard summary of one practice for one day (in the practice's time
// zone): claims sent that day by status, money claimed against money approved, paid and refunded, the
// last 14 days of claimed and paid (net of refunds), and the webhook endpoints that are failing or
// disabled. A declared cross-owner read (src/table-owners.ts); the route is in dashboard.ts.
import { sql } from 'kysely';
import { type Static, Type } from 'typebox';
import { CLAIM_STATUSES } from '../claims/schemas.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { Enum, Nullable } from '../platform/http/schema.ts';
import { practiceBilling } from '../practices/service.ts';

const Money = Type.Integer({ description: 'Minor units of the practice currency.' });
const DAYS = 14;

export const Dashboard = Type.Object(
  {
    object: Type.Literal('dashboard'),
    date: Type.String({ format: 'date' }),
    currency: Type.String(),
    claimsByStatus: Type.Array(
      Type.Object({ status: Enum(CLAIM_STATUSES), count: Type.Integer() }, { additionalProperties: false }),
      {
        description: 'Claims sent (or last resubmitted) that day, by their status now; every status listed.',
      },
    ),
    money: Type.Object(
      {
        claimed: Type.Integer({ description: 'Invoice totals of the claims sent that day.' }),
        approved: Type.Integer({ description: 'Benefit the insurer approved on those claims.' }),
        paidByInsurer: Money,
        paidByPatient: Money,
        refunded: Type.Integer({
          description:
            'Money given back that day (refunds), whatever the day of the payment it returns; the paid figures are the money received, before refunds.',
        }),
      },
      { additionalProperties: false },
    ),
    days: Type.Array(
      Type.Object(
        {
          date: Type.String({ format: 'date' }),
          claimed: Money,
          paid: Type.Integer({
            description:
              'Money received that day less the refunds given back that day; below zero on a day that gave back more.',
          }),
        },
        { additionalProperties: false },
      ),
      { description: `The ${DAYS} days up to the date, oldest first.` },
    ),
    failingEndpoints: Type.Array(
      Type.Object(
        {
          id: Type.String(),
          url: Type.String(),
          enabled: Type.Boolean(),
          disabledReason: Nullable(Type.String()),
          failingSince: Nullable(Type.String({ format: 'date-time' })),
          undelivered: Type.Integer({
            description:
              'Events not delivered to it: deliveries that failed for good (and were not delivered since) or are waiting to retry after a failure.',
          }),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { title: 'Dashboard', additionalProperties: false },
);
type Dashboard = Static<typeof Dashboard>;

function daysBefore(date: string, days: number): string {
  const d = new Date(`${date}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() - days);
  return d.toISOString().slice(0, 10);
}

export async function dashboardOf(trx: Trx, practiceId: string, date: string): Promise<Dashboard> {
  const billing = await practiceBilling(trx, practiceId);
  const tz = billing.timezone;
  const from = daysBefore(date, DAYS - 1);
  const { claims, approved, payments, refunds } = await moneyRows(trx, practiceId, tz, from, date);
  const failing = await failingEndpoints(trx, practiceId);

  const today = claims.rows.filter((r) => r.day === date);
  const sumOf = (rows: Array<{ amount: number | string }>) => rows.reduce((s, r) => s + Number(r.amount), 0);
  const days = Array.from({ length: DAYS }, (_, i) => daysBefore(date, DAYS - 1 - i)).map((day) => ({
    date: day,
    claimed: claims.rows.filter((r) => r.day === day).reduce((s, r) => s + Number(r.claimed), 0),
    paid:
      sumOf(payments.rows.filter((r) => r.day === day)) - sumOf(refunds.rows.filter((r) => r.day === day)),
  }));
  return {
    object: 'dashboard',
    date,
    currency: billing.currency,
    claimsByStatus: CLAIM_STATUSES.map((status) => ({
      status,
      count: today.filter((r) => r.status === status).reduce((s, r) => s + Number(r.count), 0),
    })),
    money: {
      claimed: today.reduce((s, r) => s + Number(r.claimed), 0),
      approved: Number(approved.rows[0]?.approved ?? 0),
      paidByInsurer: sumOf(payments.rows.filter((r) => r.day === date && r.source === 'insurer')),
      paidByPatient: sumOf(payments.rows.filter((r) => r.day === date && r.source === 'patient')),
      refunded: sumOf(refunds.rows.filter((r) => r.day === date)),
    },
    days,
    failingEndpoints: failing,
  };
}

/** Claims, approvals, payments and refunds per day of the window (the claims' also per status). */
async function moneyRows(trx: Trx, practiceId: string, tz: string, from: string, date: string) {
  const claims = await sql<{ day: string; status: string; count: number | string; claimed: number | string }>`
    SELECT to_char((c.submitted_at AT TIME ZONE ${tz})::date, 'YYYY-MM-DD') AS day, c.status,
           count(*) AS count, coalesce(sum(i.total_gross), 0) AS claimed
      FROM claims c JOIN invoices i ON i.practice_id = c.practice_id AND i.id = c.invoice_id
     WHERE c.practice_id = ${practiceId}
       AND (c.submitted_at AT TIME ZONE ${tz})::date BETWEEN ${from}::date AND ${date}::date
     GROUP BY 1, 2`.execute(trx);
  const approved = await sql<{ approved: number | string | null }>`
    SELECT coalesce(sum(ci.benefit), 0) AS approved
      FROM claims c JOIN claim_items ci ON ci.practice_id = c.practice_id AND ci.claim_id = c.id
     WHERE c.practice_id = ${practiceId} AND ci.decision <> 'denied'
       AND (c.submitted_at AT TIME ZONE ${tz})::date = ${date}::date`.execute(trx);
  const payments = await sql<{ day: string; source: string; amount: number | string }>`
    SELECT to_char((received_at AT TIME ZONE ${tz})::date, 'YYYY-MM-DD') AS day, source,
           coalesce(sum(amount), 0) AS amount
      FROM payments
     WHERE practice_id = ${practiceId}
       AND (received_at AT TIME ZONE ${tz})::date BETWEEN ${from}::date AND ${date}::date
     GROUP BY 1, 2`.execute(trx);
  const refunds = await sql<{ day: string; amount: number | string }>`
    SELECT to_char((refunded_at AT TIME ZONE ${tz})::date, 'YYYY-MM-DD') AS day, coalesce(sum(amount), 0) AS amount
      FROM refunds
     WHERE practice_id = ${practiceId}
       AND (refunded_at AT TIME ZONE ${tz})::date BETWEEN ${from}::date AND ${date}::date
     GROUP BY 1`.execute(trx);
  return { claims, approved, payments, refunds };
}

/** The practice's webhook endpoints that fail or were disabled, each with its deliveries not made. */
async function failingEndpoints(trx: Trx, practiceId: string): Promise<Dashboard['failingEndpoints']> {
  const endpoints = await sql<{
    id: string;
    url: string;
    enabled: boolean;
    disabled_reason: string | null;
    failing_since: Date | null;
    failed: number | string;
  }>`
    SELECT w.id, w.url, w.enabled, w.disabled_reason, w.failing_since,
           (SELECT count(*) FROM webhook_deliveries d
             WHERE d.practice_id = ${practiceId} AND d.endpoint_id = w.id
               AND ((d.state = 'pending' AND d.attempts > 0)
                 OR (d.state IN ('failed', 'cancelled')
                     AND NOT EXISTS (SELECT 1 FROM webhook_deliveries o WHERE o.practice_id = ${practiceId}
                           AND o.endpoint_id = d.endpoint_id AND o.event_id = d.event_id
                           AND o.state IN ('pending', 'delivered'))))) AS failed
      FROM webhook_endpoints w
     WHERE w.practice_id = ${practiceId} AND (w.failing_since IS NOT NULL OR NOT w.enabled)
     ORDER BY w.created_at, w.id`.execute(trx);
  return endpoints.rows.map((e) => ({
    id: e.id,
    url: e.url,
    enabled: e.enabled,
    disabledReason: e.disabled_reason,
    failingSince: e.failing_since ? new Date(e.failing_since).toISOString() : null,
    undelivered: Number(e.failed),
  }));
}
