// The `practice-billing admin` commands for the operator's invoice, claim, coverage and dashboard
// routes (src/invoices/admin-invoices.ts, src/insurance/admin.ts, src/admin/dashboard.ts).
import type { AdminCommand, FlagSpec } from './command.ts';

const invoiceFlag: FlagSpec = {
  flag: 'invoice',
  kind: 'text',
  to: { path: 'invoiceId' },
  required: true,
  help: 'Invoice id (inv_...)',
};
const patientFlag: FlagSpec = {
  flag: 'patient',
  kind: 'text',
  to: { path: 'patientId' },
  required: true,
  help: 'Patient id (pat_...)',
};
const claimFlags: FlagSpec[] = [
  invoiceFlag,
  { flag: 'coverage', kind: 'text', to: { body: 'coverageId' }, help: 'Claim under this coverage (cov_...)' },
  {
    flag: 'place-of-service',
    kind: 'text',
    to: { body: 'placeOfServiceCode' },
    help: 'Place of service code',
  },
];

/** A POST on one invoice: `suffix` is the route after `/invoices/:invoiceId/`. */
function invoiceAction(
  action: string,
  suffix: string,
  summary: string,
  flags: FlagSpec[] = [invoiceFlag],
): AdminCommand {
  return {
    resource: 'invoices',
    action,
    summary,
    method: 'POST',
    route: `/practices/:practiceId/invoices/:invoiceId/${suffix}`,
    target: 'practice',
    sendsBody: true,
    flags,
  };
}

export const INVOICE_COMMANDS: AdminCommand[] = [
  {
    resource: 'invoices',
    action: 'list',
    summary: "Search a practice's invoices, newest change first",
    method: 'GET',
    route: '/practices/:practiceId/invoices',
    target: 'practice',
    flags: [
      { flag: 'status', kind: 'text', to: { query: 'status' }, help: 'Invoice status' },
      { flag: 'claim-status', kind: 'text', to: { query: 'claimStatus' }, help: 'Claim status' },
      { flag: 'q', kind: 'text', to: { query: 'q' }, help: 'Part of the number or patient name' },
      { flag: 'limit', kind: 'integer', to: { query: 'limit' }, help: 'Page size, 1 to 100 (default 50)' },
      { flag: 'cursor', kind: 'text', to: { query: 'cursor' }, help: 'nextCursor of the previous page' },
    ],
  },
  {
    resource: 'invoices',
    action: 'get',
    summary: 'Read an invoice with its claim, payments, events and deliveries',
    method: 'GET',
    route: '/practices/:practiceId/invoices/:invoiceId',
    target: 'practice',
    flags: [invoiceFlag],
  },
  invoiceAction('issue', 'issue', 'Issue a draft or amending invoice'),
  invoiceAction('amend', 'amend', 'Reopen an issued invoice for changes'),
  invoiceAction('claim', 'claim', "Send an invoice's claim to the insurer", claimFlags),
  invoiceAction(
    'claim-resubmit',
    'claim/resubmit',
    'Send a rejected, reversed or partially accepted claim again',
    claimFlags,
  ),
  invoiceAction('claim-reverse', 'claim/reverse', 'Reverse an accepted claim', [
    invoiceFlag,
    { flag: 'reason', kind: 'text', to: { body: 'reason' }, help: 'Why' },
  ]),
  {
    resource: 'coverages',
    action: 'list',
    summary: "List a patient's coverages",
    method: 'GET',
    route: '/practices/:practiceId/patients/:patientId/coverages',
    target: 'practice',
    flags: [patientFlag],
  },
  {
    resource: 'coverages',
    action: 'add',
    summary: "Register a patient's medical scheme membership",
    method: 'POST',
    route: '/practices/:practiceId/patients/:patientId/coverages',
    target: 'practice',
    sendsBody: true,
    flags: [
      patientFlag,
      { flag: 'plan', kind: 'text', to: { body: 'planId' }, required: true, help: 'Insurance plan id' },
      {
        flag: 'member-number',
        kind: 'text',
        to: { body: 'memberNumber' },
        required: true,
        help: 'Member number',
      },
      { flag: 'dependent-code', kind: 'text', to: { body: 'dependentCode' }, help: 'e.g. 00' },
      { flag: 'start-date', kind: 'text', to: { body: 'startDate' }, help: 'YYYY-MM-DD' },
      { flag: 'end-date', kind: 'text', to: { body: 'endDate' }, help: 'YYYY-MM-DD' },
    ],
  },
  {
    resource: 'dashboard',
    action: 'get',
    summary: "A practice's day: claims by status, money claimed and paid, failing webhooks",
    method: 'GET',
    route: '/practices/:practiceId/dashboard',
    target: 'practice',
    flags: [{ flag: 'date', kind: 'text', to: { query: 'date' }, help: 'YYYY-MM-DD (default today)' }],
  },
];
