// Owns what a patient's account says (Medical Schemes Act 131 of 1998 s59(1); regulation 5 of the
// General Regulations, GN R1262 of 1999; VAT Act 89 of 1991 s20(4) when the practice is VAT
// registered), decided from plain values: the practice, the practitioner, the patient and the main
// member, the scheme and membership, the invoice with its lines and money. Pure; the PDF is drawn from
// it (document.ts) and the e-mail says a little of it (message.ts).
import { formatPrintedAmount } from '../invoices/money-format.ts';
import type { PracticeAddress, PracticeBankDetails } from '../platform/db/column-types.ts';

export interface AccountParts {
  practice: {
    name: string;
    practiceNumber: string | null;
    groupPracticeNumber: string | null;
    vatNumber: string | null;
    vatRateBasisPoints: number;
    address: PracticeAddress | null;
    phone: string | null;
    email: string | null;
    bankDetails: PracticeBankDetails | null;
  };
  practitioner: { name: string; registrationNumber: string | null } | null;
  /** `address`: the patient's billing address (else the first), the recipient's on a tax invoice. */
  patient: { lastName: string; givenNames: string[]; address: string[] | null };
  coverage: {
    schemeName: string;
    planName: string;
    memberNumber: string;
    dependentCode: string | null;
    memberSurname: string | null;
    memberInitials: string | null;
  } | null;
  invoice: {
    number: string;
    status: string;
    date: string;
    dueDate: string | null;
    currency: string;
    totalNet: number;
    totalGross: number;
    balanceDue: number;
    creditDue: number;
    amountWrittenOff: number;
    /** Why the patient owes what they owe, in words (src/invoices/account.ts). */
    explanation: string;
  };
  lines: Array<{
    serviceDate: string;
    serviceDateEnd: string | null;
    code: string;
    description: string;
    modifiers: string[];
    diagnoses: Array<{ code: string; primary: boolean }>;
    quantity: number;
    unitPrice: number;
    total: number;
  }>;
  payments: Array<{ source: 'patient' | 'insurer'; amount: number }>;
  refunds: Array<{ amount: number }>;
}

export interface AccountLine {
  date: string;
  code: string;
  modifiers: string;
  diagnoses: string;
  description: string;
  quantity: string;
  unitPrice: string;
  amount: string;
}

/** The account as it is printed: every text decided, in the order it appears. */
export interface AccountView {
  title: 'Tax Invoice' | 'Account';
  practiceName: string;
  /** The practice's own lines under its name: address, phone, e-mail, its numbers. */
  practiceLines: string[];
  /** Invoice number, dates. */
  invoiceLines: string[];
  /** Patient, member, scheme, membership: regulation 5(a) to (d). */
  patientLines: string[];
  /** The practitioner who rendered the services and their registration: regulation 5(e). */
  practitionerLines: string[];
  lines: AccountLine[];
  /** Label and amount, in order: totals before and after tax, paid, balance due. */
  totals: Array<[string, string]>;
  /** Why the patient owes what they owe, under the totals. */
  explanation: string;
  /** How to pay. */
  paymentLines: string[];
  /** What the law needs on the account and the practice has not recorded (field names). */
  missing: string[];
}

const NOT_RECORDED = 'not recorded';

/** Initials of names, such as "G." for ["Grace"] or "T.M." for ["Thandi", "Mary"]. */
export function initialsOf(names: readonly string[]): string {
  return names
    .map((n) => n.trim())
    .filter((n) => n.length > 0)
    .map((n) => `${[...n][0]!.toLocaleUpperCase()}.`)
    .join('');
}

/** The main member: the one named on the coverage, else (dependant code 00 or none) the patient. */
function memberLine(parts: AccountParts): string {
  const c = parts.coverage!;
  if (c.memberSurname) return `${c.memberSurname}, ${c.memberInitials ?? ''}`.trim();
  const isDependant = c.dependentCode !== null && c.dependentCode !== '00';
  if (isDependant) return NOT_RECORDED;
  return `${parts.patient.lastName}, ${initialsOf(parts.patient.givenNames)}`;
}

function practiceLinesOf(parts: AccountParts, missing: string[]): string[] {
  const p = parts.practice;
  const out: string[] = [];
  if (p.address) out.push(...p.address.lines, `${p.address.city} ${p.address.postalCode}`, p.address.country);
  else missing.push('address');
  const contact = [p.phone ? `Tel ${p.phone}` : null, p.email].filter((x): x is string => x !== null);
  if (contact.length > 0) out.push(contact.join('  ·  '));
  if (!p.practiceNumber) missing.push('practiceNumber');
  out.push(`Practice number (PCNS): ${p.practiceNumber ?? NOT_RECORDED}`);
  if (p.groupPracticeNumber) out.push(`Group practice number: ${p.groupPracticeNumber}`);
  if (p.vatNumber) out.push(`VAT registration number: ${p.vatNumber}`);
  return out;
}

function patientLinesOf(parts: AccountParts): string[] {
  const [first = '', ...others] = parts.patient.givenNames;
  const other = initialsOf(others);
  const out = [`Patient: ${parts.patient.lastName}, ${first}${other ? ` ${other}` : ''}`];
  // A tax invoice names its recipient's address (VAT Act s20(4)); an account needs none.
  if (parts.practice.vatNumber && parts.patient.address)
    out.push(`Address: ${parts.patient.address.join(', ')}`);
  const c = parts.coverage;
  if (c) {
    out.push(`Main member: ${memberLine(parts)}`);
    out.push(`Medical scheme: ${c.schemeName} (${c.planName})`);
    out.push(`Membership number: ${c.memberNumber}  Dependant code: ${c.dependentCode ?? '00'}`);
  }
  return out;
}

function practitionerLinesOf(parts: AccountParts): string[] {
  const pr = parts.practitioner;
  if (!pr) return [];
  return [
    `Services rendered by ${pr.name}`,
    `HPCSA registration number: ${pr.registrationNumber ?? NOT_RECORDED}`,
  ];
}

function lineOf(line: AccountParts['lines'][number], currency: string): AccountLine {
  const diagnoses = [...line.diagnoses].sort((a, b) => Number(b.primary) - Number(a.primary));
  return {
    date: line.serviceDateEnd ? `${line.serviceDate} to ${line.serviceDateEnd}` : line.serviceDate,
    code: line.code,
    modifiers: line.modifiers.join(', '),
    diagnoses: diagnoses.map((d) => d.code).join(', '),
    description: line.description,
    quantity: String(line.quantity),
    unitPrice: formatPrintedAmount(line.unitPrice, currency),
    amount: formatPrintedAmount(line.total, currency),
  };
}

/** The VAT rate the totals were charged at, when the practice's rate gives them exactly. */
function vatLabel(parts: AccountParts): string {
  const { totalNet, totalGross } = parts.invoice;
  const bp = parts.practice.vatRateBasisPoints;
  const atRate = Math.round((totalNet * bp) / 10000);
  return atRate === totalGross - totalNet && bp > 0 ? `VAT at ${bp / 100}%` : 'VAT';
}

function totalsOf(parts: AccountParts): Array<[string, string]> {
  const i = parts.invoice;
  const money = (cents: number) => formatPrintedAmount(cents, i.currency);
  const sum = (amounts: number[]) => amounts.reduce((a, b) => a + b, 0);
  const scheme = sum(parts.payments.filter((p) => p.source === 'insurer').map((p) => p.amount));
  const patient = sum(parts.payments.filter((p) => p.source === 'patient').map((p) => p.amount));
  const refunded = sum(parts.refunds.map((r) => r.amount));
  const totals: Array<[string, string]> = [['Total before VAT', money(i.totalNet)]];
  totals.push([vatLabel(parts), money(i.totalGross - i.totalNet)]);
  totals.push(['Total', money(i.totalGross)]);
  totals.push(['Paid by medical scheme', money(scheme)]);
  totals.push(['Paid by patient', money(patient)]);
  if (refunded > 0) totals.push(['Refunded', money(-refunded)]);
  if (i.amountWrittenOff > 0) totals.push(['Written off', money(-i.amountWrittenOff)]);
  totals.push(['Balance due', money(i.balanceDue)]);
  if (i.creditDue > 0) totals.push(['Credit owed to you', money(i.creditDue)]);
  return totals;
}

function paymentLinesOf(parts: AccountParts, missing: string[]): string[] {
  const b = parts.practice.bankDetails;
  const reference = `Payment reference: ${parts.invoice.number}`;
  if (!b) {
    missing.push('bankDetails');
    return ['Please pay the practice, quoting the reference below.', reference];
  }
  return [
    `Bank: ${b.bank}   Branch code: ${b.branchCode}`,
    `Account name: ${b.accountName}   Account number: ${b.accountNumber}`,
    reference,
  ];
}

export function accountViewOf(parts: AccountParts): AccountView {
  const missing: string[] = [];
  const i = parts.invoice;
  const vatRegistered = parts.practice.vatNumber !== null;
  const practiceLines = practiceLinesOf(parts, missing);
  return {
    title: vatRegistered ? 'Tax Invoice' : 'Account',
    practiceName: parts.practice.name,
    practiceLines,
    invoiceLines: [
      `${vatRegistered ? 'Tax invoice' : 'Invoice'} number: ${i.number}`,
      `Invoice date: ${i.date}`,
      `Due date: ${i.dueDate ?? 'on receipt'}`,
    ],
    patientLines: patientLinesOf(parts),
    practitionerLines: practitionerLinesOf(parts),
    lines: parts.lines.map((l) => lineOf(l, i.currency)),
    totals: totalsOf(parts),
    explanation: i.explanation,
    paymentLines: paymentLinesOf(parts, missing),
    missing,
  };
}
