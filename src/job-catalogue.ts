// The catalogue of background work, where the capabilities meet the worker loop: each job kind with
// its handler (claims: submit, reverse, remittance; webhooks: deliver; notifications: mail) and each
// periodic task (the change feed's clock samples, expired Idempotency-Keys, expired rate-limit
// counters, overdue invoices, dormant patients' de-identification).
import type { FastifyBaseLogger } from 'fastify';
import { type MailContext, runMailJob } from './accounts/mail-job.ts';
import { CLAIM_JOBS } from './claims/job-kinds.ts';
import { type ClaimJobContext, runRemittanceJob, runReverseJob, runSubmitJob } from './claims/jobs.ts';
import { eraseDormantPatients } from './data-rights/dormant.ts';
import { purgeExpiredKeys } from './idempotency/idempotency-store.ts';
import type { Insurer } from './insurer/port.ts';
import { markOverdueInvoices } from './invoices/overdue.ts';
import type { TakenJobsPreparer } from './jobs/handoff.ts';
import { purgeFinishedJobs } from './jobs/queue.ts';
import { type JobHandler, type PeriodicTask, startWorker, type Worker } from './jobs/worker.ts';
import { MAIL_JOB } from './notifications/job-kinds.ts';
import { type MailTransport, SmtpTransport } from './notifications/mailer.ts';
import { type Clock, DAY_MS } from './platform/clock.ts';
import type { Config } from './platform/config.ts';
import { recordChangeFeedSample } from './platform/db/change-feed.ts';
import type { Database } from './platform/db/database.ts';
import { asOperator } from './platform/db/transaction.ts';
import { purgeExpiredRateLimits } from './platform/http/rate-limit.ts';
import type { SecretBox } from './platform/secret-box.ts';
import { type DeliveryContext, prepareTakenDeliveries, runDeliverJob } from './webhooks/delivery.ts';
import { DELIVER_JOB } from './webhooks/job-kinds.ts';
import { WebhookSender } from './webhooks/sender.ts';

export interface JobDeps {
  db: Database;
  clock: Clock;
  config: Config;
  insurer: Insurer;
  /** Decrypts webhook secrets; without it deliveries cannot be signed and are retried. */
  secrets?: SecretBox | undefined;
  log: FastifyBaseLogger;
  /** Jitter source for webhook retries; tests pin it. */
  random?: () => number;
}

/** The SMTP transport SMTP_URL names; undefined without one (messages are kept in the outbox). */
export function mailTransportOf(config: Pick<Config, 'smtpUrl' | 'mailFrom'>): MailTransport | undefined {
  return config.smtpUrl ? new SmtpTransport(config.smtpUrl, config.mailFrom) : undefined;
}

export function jobHandlers(
  deps: JobDeps,
  sender = new WebhookSender(deps.config.webhookAllowPrivate),
  transport: MailTransport | undefined = mailTransportOf(deps.config),
): Record<string, JobHandler> {
  const claims: ClaimJobContext = {
    db: deps.db,
    insurer: deps.insurer,
    now: () => deps.clock.now(),
    answerWindowMs: deps.config.claimAnswerWindowSeconds * 1000,
    remittanceDelayMs: deps.insurer.paysRemittances ? deps.config.remittanceDelayMs : null,
  };
  const deliveries: DeliveryContext = {
    db: deps.db,
    box: deps.secrets,
    sender,
    publicBaseUrl: deps.config.publicBaseUrl,
    now: () => deps.clock.now(),
    random: deps.random ?? Math.random,
  };
  const mail: MailContext = {
    db: deps.db,
    transport,
    mailFrom: deps.config.mailFrom,
    now: () => deps.clock.now(),
  };
  return {
    [DELIVER_JOB.name]: (job) => runDeliverJob(deliveries, job),
    [MAIL_JOB.name]: (job) => runMailJob(mail, job),
    [CLAIM_JOBS.submit.name]: (job) => runSubmitJob(claims, job),
    [CLAIM_JOBS.reverse.name]: (job) => runReverseJob(claims, job),
    [CLAIM_JOBS.remittance.name]: (job) => runRemittanceJob(claims, job),
  };
}

/** What job kinds read in the transaction that takes them (src/jobs/handoff.ts). */
export const jobPreparers: Record<string, TakenJobsPreparer> = {
  [DELIVER_JOB.name]: prepareTakenDeliveries,
};

/** The worker's periodic tasks; finished jobs are kept `jobRetentionDays`. */
export const periodicTasks = (config: Pick<Config, 'jobRetentionDays'>): PeriodicTask[] => [
  {
    name: 'sample-change-feed-clock',
    everyMs: 1000,
    run: async ({ db }) => {
      await asOperator(db, (trx) => recordChangeFeedSample(trx));
      return 0;
    },
  },
  {
    name: 'purge-expired-idempotency-keys',
    everyMs: 10 * 60 * 1000,
    run: ({ db }) => asOperator(db, (trx) => purgeExpiredKeys(trx)),
  },
  {
    // PostgreSQL's shared counters; the embedded database counts in memory and has none.
    name: 'purge-expired-rate-limits',
    everyMs: 10 * 60 * 1000,
    run: ({ db, clock }) =>
      db.kind === 'postgres'
        ? asOperator(db, (trx) => purgeExpiredRateLimits(trx, clock.now()))
        : Promise.resolve(0),
  },
  {
    name: 'mark-overdue-invoices',
    everyMs: 60 * 1000,
    run: ({ db, clock }) => markOverdueInvoices(db, clock.now()),
  },
  {
    // Patients whose retention has ended are de-identified (src/data-rights/dormant.ts).
    name: 'erase-dormant-patients',
    everyMs: 60 * 60 * 1000,
    run: ({ db, clock }) => eraseDormantPatients(db, clock.now()),
  },
  {
    name: 'purge-finished-jobs',
    everyMs: 10 * 60 * 1000,
    run: ({ db, clock }) =>
      asOperator(db, (trx) =>
        purgeFinishedJobs(trx, new Date(clock.now().getTime() - config.jobRetentionDays * DAY_MS)),
      ),
  },
];

/** A worker running every job kind and, unless told otherwise, every periodic task. */
export function startJobWorker(
  deps: JobDeps,
  options: { poll?: boolean; tasks?: PeriodicTask[] } = {},
): Worker {
  const sender = new WebhookSender(deps.config.webhookAllowPrivate);
  const transport = mailTransportOf(deps.config);
  return startWorker(
    { db: deps.db, clock: deps.clock, log: deps.log, settings: deps.config },
    {
      handlers: jobHandlers(deps, sender, transport),
      preparers: jobPreparers,
      tasks: options.tasks ?? periodicTasks(deps.config),
      ...(options.poll !== undefined ? { poll: options.poll } : {}),
      onStop: async () => {
        transport?.close();
        await sender.close();
      },
    },
  );
}
