// Owns invoice lines: resolving a requested line's code (a procedure code), wording, modifiers and
// diagnoses (condition codes, each once), refusing service dates after today or further before the
// invoice's date than a visit may start, unless no earlier than the invoice's own lines (reporting
// every wrong field at once), pricing it with integer arithmetic, and adding, replacing or deleting a
// line while the invoice is a draft or amending.

import type { Selectable } from 'kysely';
import { modifiersOf } from '../code-systems/store.ts';
import { judgeCodings, type PickedCoding, refuseRepeatedDiagnoses } from '../code-systems/usage.ts';
import { earliestServiceDate, MAX_DAYS_AGO } from '../encounters/service.ts';
import { dateIn } from '../platform/clock.ts';
import type { LineDiagnosis } from '../platform/db/column-types.ts';
import type { InvoiceLinesTable } from '../platform/db/tables.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { type FieldError, fieldErrors, notFound } from '../platform/http/errors.ts';
import { noWrongFields, type Partly, type WrongField } from '../platform/http/field-rules.ts';
import { newId } from '../platform/ids.ts';
import type { PracticeBilling } from '../practices/service.ts';
import { defaultSystemsOf, findPractitioner } from '../practices/service.ts';
import { lineSubtotal, lineTotal, scaledQuantity } from './money.ts';
import type { LineItemRequest } from './schemas.ts';
import { readInvoice, requireEditable, touchInvoiceLines } from './service.ts';
import { deleteLineRow, type InvoiceRecord, insertLine, updateLine } from './store.ts';

/** A line's own values, as resolved from a LineItemRequest. */
export type LineValues = Omit<
  Selectable<InvoiceLinesTable>,
  'practice_id' | 'id' | 'invoice_id' | 'position' | 'procedure_id' | 'diagnoses'
> & { diagnoses: LineDiagnosis[] };

/** What a line's rules read of its invoice: whose default code systems apply, its date and its lines. */
interface LineInvoice {
  invoice: Pick<InvoiceRecord['invoice'], 'practitioner_id' | 'date'>;
  lines: readonly Pick<InvoiceRecord['lines'][number], 'service_date'>[];
}

/**
 * The earliest service date a line of the invoice can have: MAX_DAYS_AGO days before the invoice's
 * date, or its earliest line's date when that is earlier. A bill's lines carry the visit's start,
 * which may lie that long before the visit was recorded, and the invoice is dated when it is billed
 * (and again when a draft is issued), so a line can keep its own date, and a line added may take it.
 */
function earliestLineDate({ invoice, lines }: LineInvoice): string {
  return lines.reduce(
    (earliest, line) => (line.service_date < earliest ? line.service_date : earliest),
    earliestServiceDate(invoice.date),
  );
}

async function practitionerDefaults(trx: Trx, practiceId: string, practitionerId: string | null) {
  return defaultSystemsOf(
    practitionerId ? await findPractitioner(trx, practiceId, practitionerId) : undefined,
  );
}

/** What the service's rules make of a line request: its wrong fields and its resolved codes. */
async function inspectLine(
  trx: Trx,
  billing: PracticeBilling,
  record: LineInvoice,
  request: Partly<LineItemRequest>,
  now: Date,
  wrong: WrongField,
) {
  const practiceId = billing.id;
  const errors: FieldError[] = [];
  const invalid = (field: string, message: string): void => {
    errors.push({ field, code: 'invalid', message: `${field} ${message}` });
  };
  const defaults = await practitionerDefaults(trx, practiceId, record.invoice.practitioner_id);
  // A code is judged only in a system the schema let through.
  const systemKnown = !wrong('system');
  const system = request.system ?? defaults.procedure;
  const { diagnoses, codings } = lineCodings(request, system, systemKnown, defaults.condition, wrong);
  const resolved = await judgeCodings(trx, practiceId, codings, { active: false }, invalid);
  const lineCode = request.code === undefined ? undefined : resolved.get(`${system}|${request.code}`);
  if ((request.diagnoses ?? []).filter((d) => d?.primary === true).length > 1)
    invalid('diagnoses', 'can have only one primary diagnosis');
  refuseRepeatedDiagnoses(
    diagnoses.flatMap((d, i) => (d === undefined ? [] : [{ field: `diagnoses.${i}`, ...d }])),
    'line',
    invalid,
  );
  judgeLineDates(billing, record, request, now, invalid);
  const percentages = await judgeModifiers(
    trx,
    systemKnown ? system : undefined,
    request.modifiers ?? [],
    invalid,
  );
  return { errors, defaults, system, resolved, lineCode, percentages };
}

/** The line's codings to judge: the line's system is judged even without a code; a diagnosis only with its code. */
function lineCodings(
  request: Partly<LineItemRequest>,
  system: string,
  systemKnown: boolean,
  conditionSystem: string,
  wrong: WrongField,
) {
  const diagnoses = (request.diagnoses ?? []).map((d, i) =>
    d?.code === undefined || wrong(`diagnoses.${i}.system`)
      ? undefined
      : { system: d.system ?? conditionSystem, code: d.code, primary: d.primary },
  );
  const codings: PickedCoding[] = [
    ...(systemKnown
      ? [
          {
            systemField: 'system',
            codeField: 'code',
            usage: 'procedure' as const,
            system,
            code: request.code,
          },
        ]
      : []),
    ...diagnoses.flatMap((d, i) =>
      d === undefined
        ? []
        : [
            {
              systemField: `diagnoses.${i}.system`,
              codeField: `diagnoses.${i}.code`,
              usage: 'condition' as const,
              system: d.system,
              code: d.code,
            },
          ],
    ),
  ];
  return { diagnoses, codings };
}

/** The line's dates and quantity. */
function judgeLineDates(
  billing: PracticeBilling,
  record: LineInvoice,
  request: Partly<LineItemRequest>,
  now: Date,
  invalid: (field: string, message: string) => void,
): void {
  // A service is billed once it was given: no date after today in the practice's time zone.
  const today = dateIn(billing.timezone, now);
  if (request.serviceDate !== undefined && request.serviceDate > today)
    invalid('serviceDate', `cannot be in the future (today is ${today} in ${billing.timezone})`);
  if (request.serviceDateEnd && request.serviceDateEnd > today)
    invalid('serviceDateEnd', `cannot be in the future (today is ${today} in ${billing.timezone})`);
  // As for a visit: a service given more than MAX_DAYS_AGO days before the invoice's date is not
  // billed, unless the invoice bills one as early already.
  const earliest = earliestLineDate(record);
  if (request.serviceDate !== undefined && request.serviceDate < earliest)
    invalid(
      'serviceDate',
      `cannot be more than ${MAX_DAYS_AGO} days before the invoice's date ${record.invoice.date}, nor before the invoice's earliest line (earliest ${earliest})`,
    );
  if (
    request.serviceDateEnd &&
    request.serviceDate !== undefined &&
    request.serviceDateEnd < request.serviceDate
  )
    invalid('serviceDateEnd', 'cannot be before serviceDate');
  if (request.quantity !== undefined && scaledQuantity(request.quantity) === undefined)
    invalid('quantity', 'can have at most 4 decimal places');
}

/** The line's modifiers, each one of its system's (none judged when the system is not known). */
async function judgeModifiers(
  trx: Trx,
  system: string | undefined,
  modifierCodes: (string | undefined)[],
  invalid: (field: string, message: string) => void,
): Promise<Map<string, number>> {
  const percentages =
    system !== undefined
      ? await modifiersOf(
          trx,
          system,
          modifierCodes.filter((m) => m !== undefined),
        )
      : new Map<string, number>();
  modifierCodes.forEach((m, i) => {
    if (system !== undefined && m !== undefined && !percentages.has(m))
      invalid(`modifiers.${i}`, `is not a modifier of ${system}`);
  });
  return percentages;
}

/** The wrong fields of a line request by the service's rules (those its schema let through). */
export async function lineRuleErrors(
  trx: Trx,
  billing: PracticeBilling,
  invoiceId: string,
  request: Partly<LineItemRequest>,
  now: Date,
  wrong: WrongField,
): Promise<FieldError[]> {
  const record = await readInvoice(trx, billing.id, invoiceId);
  return (await inspectLine(trx, billing, record, request, now, wrong)).errors;
}

export async function resolveLine(
  trx: Trx,
  billing: PracticeBilling,
  record: LineInvoice,
  request: LineItemRequest,
  now: Date,
): Promise<LineValues> {
  const { errors, defaults, system, resolved, lineCode, percentages } = await inspectLine(
    trx,
    billing,
    record,
    request,
    now,
    noWrongFields,
  );
  if (errors.length > 0) throw fieldErrors(errors);
  const diagnoses = (request.diagnoses ?? []).map((d) => ({
    system: d.system ?? defaults.condition,
    code: d.code,
    primary: d.primary,
  }));
  const modifierCodes = request.modifiers ?? [];

  const primaryIndex = Math.max(
    0,
    diagnoses.findIndex((d) => d.primary === true),
  );
  const subtotal = lineSubtotal(request.quantity, request.unitPrice);
  return {
    service_date: request.serviceDate,
    service_date_end: request.serviceDateEnd ?? null,
    system,
    code: request.code,
    description: request.description ?? lineCode!.display,
    modifiers: modifierCodes,
    quantity: request.quantity,
    unit_price: request.unitPrice,
    subtotal,
    total: lineTotal(
      subtotal,
      modifierCodes.map((m) => percentages.get(m)!),
    ),
    pricing_source: request.pricingSource ?? null,
    // A price given through the API is meant, 0 included.
    unpriced: false,
    diagnoses: diagnoses.map((d, i) => ({
      system: d.system,
      code: d.code,
      display: resolved.get(`${d.system}|${d.code}`)!.display,
      primary: i === primaryIndex,
    })),
  };
}

function lineColumns(values: LineValues) {
  return { ...values, diagnoses: JSON.stringify(values.diagnoses) };
}

async function editableInvoice(
  trx: Trx,
  billing: PracticeBilling,
  invoiceId: string,
): Promise<InvoiceRecord> {
  const record = await readInvoice(trx, billing.id, invoiceId, true);
  requireEditable(record);
  return record;
}

export async function addLine(
  trx: Trx,
  billing: PracticeBilling,
  invoiceId: string,
  request: LineItemRequest,
  now: Date,
) {
  const record = await editableInvoice(trx, billing, invoiceId);
  const values = await resolveLine(trx, billing, record, request, now);
  const position = record.lines.reduce((max, l) => Math.max(max, l.position), 0) + 1;
  const id = newId('lineItem');
  await insertLine(trx, {
    practice_id: billing.id,
    id,
    invoice_id: invoiceId,
    position,
    procedure_id: null,
    ...lineColumns(values),
  });
  await touchInvoiceLines(trx, billing, invoiceId);
  return { record: await readInvoice(trx, billing.id, invoiceId), lineId: id };
}

function requireLine(record: InvoiceRecord, lineId: string) {
  const line = record.lines.find((l) => l.id === lineId);
  if (!line) throw notFound('Line item');
  return line;
}

export async function replaceLine(
  trx: Trx,
  billing: PracticeBilling,
  invoiceId: string,
  lineId: string,
  request: LineItemRequest,
  now: Date,
) {
  const record = await readInvoice(trx, billing.id, invoiceId, true);
  requireLine(record, lineId);
  requireEditable(record);
  const values = await resolveLine(trx, billing, record, request, now);
  await updateLine(trx, billing.id, lineId, lineColumns(values));
  await touchInvoiceLines(trx, billing, invoiceId);
  return readInvoice(trx, billing.id, invoiceId);
}

export async function deleteLine(trx: Trx, billing: PracticeBilling, invoiceId: string, lineId: string) {
  const record = await readInvoice(trx, billing.id, invoiceId, true);
  requireLine(record, lineId);
  requireEditable(record);
  await deleteLineRow(trx, billing.id, lineId);
  await touchInvoiceLines(trx, billing, invoiceId);
  return readInvoice(trx, billing.id, invoiceId);
}
