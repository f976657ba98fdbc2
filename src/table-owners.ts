// Which capability owns each table. A table's SQL (Kysely's selectFrom, insertInto, updateTable,
// deleteFrom and joins, and the text of sql`` templates) is written only in the store files of its
// owner; every other capability calls the owner's functions. test/unit/table-owners.test.ts reads
// src/**/*.ts and fails when a file outside the owner names a table in SQL, when a table of the
// database has no owner or two, and when a declared read model writes a table it does not own.
// docs/architecture.md ("Tables and their owners") explains the exceptions.

export interface TableOwner {
  /** The files that hold the owner's SQL, from the repository's root. */
  stores: string[];
  tables: string[];
}

/** One owner per table, by capability. */
export const TABLE_OWNERS: Record<string, TableOwner> = {
  audit: {
    // Written by every request's audit row (platform), read by the operator's audit listing.
    stores: ['src/platform/audit-log.ts', 'src/audit/events.ts'],
    tables: ['audit_events'],
  },
  'change-feed': { stores: ['src/platform/db/change-feed.ts'], tables: ['change_feed_samples'] },
  'rate-limits': { stores: ['src/platform/http/rate-limit.ts'], tables: ['rate_limits'] },
  idempotency: {
    stores: ['src/idempotency/idempotency-store.ts'],
    tables: ['idempotency_keys', 'operator_idempotency_keys'],
  },
  jobs: {
    // The queue, the fair take across practices and lanes, and the queue's figures for the operator.
    stores: ['src/jobs/queue.ts', 'src/jobs/take.ts', 'src/jobs/queue-figures.ts'],
    tables: ['jobs'],
  },
  'service-settings': { stores: ['src/bootstrap.ts'], tables: ['service_settings'] },
  'sandbox-insurer': { stores: ['src/insurer/sandbox.ts'], tables: ['sandbox_insurer_messages'] },
  catalogue: { stores: ['src/catalogue/store.ts'], tables: ['governing_bodies', 'governing_body_rates'] },
  'code-systems': {
    stores: ['src/code-systems/store.ts'],
    tables: [
      'code_systems',
      'code_concepts',
      'practice_code_systems',
      'practice_code_concepts',
      'tariff_modifiers',
    ],
  },
  practices: {
    // auth/performer-store.ts answers the request pipeline's X-Service-Performer check, which runs
    // before any capability and so cannot import this one.
    stores: ['src/practices/store.ts', 'src/auth/performer-store.ts'],
    tables: ['practices', 'practitioners'],
  },
  clients: {
    // auth/key-use-store.ts stamps a key's last use from the request pipeline, which runs before any
    // capability and so cannot import this one.
    stores: ['src/clients/store.ts', 'src/auth/key-use-store.ts'],
    tables: ['clients', 'api_keys'],
  },
  patients: { stores: ['src/patients/store.ts'], tables: ['patients'] },
  encounters: {
    stores: ['src/encounters/store.ts'],
    tables: ['encounters', 'encounter_diagnoses', 'encounter_procedures'],
  },
  insurance: {
    stores: ['src/insurance/store.ts'],
    tables: [
      'coverages',
      'insurance_schemes',
      'insurance_scheme_rates',
      'insurance_plans',
      'insurance_plan_rates',
    ],
  },
  pricing: { stores: ['src/pricing/store.ts'], tables: ['practice_prices'] },
  notifications: { stores: ['src/notifications/store.ts'], tables: ['notifications', 'mail_outbox'] },
  events: { stores: ['src/events/store.ts'], tables: ['events'] },
  webhooks: {
    stores: ['src/webhooks/store.ts'],
    tables: ['webhook_endpoints', 'webhook_deliveries', 'webhook_attempts'],
  },
  invoices: {
    stores: ['src/invoices/store.ts'],
    tables: ['invoices', 'invoice_lines', 'invoice_encounters', 'invoice_clocks', 'payments', 'refunds'],
  },
  claims: { stores: ['src/claims/store.ts'], tables: ['claims', 'claim_items'] },
};

export interface CrossOwnerRead {
  /** What the read answers. */
  name: string;
  files: string[];
  /** Tables of other owners it may read; it writes none of them. */
  reads: string[];
  why: string;
}

/**
 * Reads that join across owners, declared one by one. They read only: each write stays with its
 * table's owner.
 */
export const CROSS_OWNER_READS: CrossOwnerRead[] = [
  {
    name: "a patient's record",
    files: ['src/patients/record-reads.ts'],
    reads: [
      'coverages',
      'encounters',
      'encounter_diagnoses',
      'encounter_procedures',
      'invoices',
      'invoice_lines',
      'claims',
      'claim_items',
      'payments',
      'refunds',
      'notifications',
      'audit_events',
    ],
    why: 'an access request (POPIA s23) reads every row naming the patient, page by page, in one place',
  },
  {
    name: "a patient's retention",
    files: ['src/patients/retention-reads.ts'],
    reads: ['patients', 'encounters', 'invoices', 'payments', 'claims'],
    why: "a patient's last activity, open invoices and claims in flight decide an erasure, in one statement",
  },
  {
    name: 'back-office invoice search and dashboard',
    files: ['src/back-office/invoice-reads.ts', 'src/back-office/dashboard-reads.ts'],
    reads: [
      'invoices',
      'payments',
      'refunds',
      'patients',
      'claims',
      'claim_items',
      'webhook_endpoints',
      'webhook_deliveries',
    ],
    why: 'the operator filters and sums across invoices, claims, payments, refunds and endpoints in one statement',
  },
  {
    name: "a line's rate candidates",
    files: ['src/invoices/rates.ts'],
    reads: [
      'practice_prices',
      'practitioners',
      'practices',
      'insurance_plan_rates',
      'insurance_plans',
      'insurance_schemes',
      'insurance_scheme_rates',
      'governing_body_rates',
      'governing_bodies',
      'code_concepts',
      'code_systems',
      'practice_code_concepts',
      'practice_code_systems',
    ],
    why: 'every price source of a code in the order billing tries them, in one statement per line',
  },
  {
    name: "a practice code's uses",
    files: ['src/code-systems/code-uses.ts'],
    reads: ['encounter_diagnoses', 'encounter_procedures', 'invoice_lines', 'practice_prices'],
    why: 'a practice code is deleted only when no visit, invoice line or saved price uses it',
  },
  {
    name: 'webhook deliveries and attempts with their events',
    files: ['src/webhooks/store.ts'],
    reads: ['events'],
    why: "a delivery is read with its endpoint and event, and an attempt log with each event's type, in one statement",
  },
];

export interface CrossOwnerWrite {
  name: string;
  file: string;
  writes: string[];
  why: string;
}

/**
 * Writes outside the owner's store, each waiting for the owner to offer the statement. None today: an
 * owner that shares a statement hands the other a piece of it (insertEventRow for the outbox,
 * insertJobRows for a delivery's job, renumberInvoiceNotifications for the invoice number's statement).
 */
export const CROSS_OWNER_WRITES: CrossOwnerWrite[] = [];
