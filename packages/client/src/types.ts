// Owns the client's types, all derived from the generated OpenAPI types by path and method or by
// operation id, so that no schema is copied by hand and a schema's component name can change freely.
import type { operations, paths } from './generated/openapi.ts';

export type { operations, paths };

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
export type Path = keyof paths;

/** The operation served at a path and method (never when the path does not take the method). */
export type OperationAt<P extends Path, M extends Method> = NonNullable<paths[P][M]>;

type ParametersOf<O> = O extends { parameters: infer X } ? X : never;
type Part<O, K extends string> = ParametersOf<O> extends { [k in K]?: infer X } ? NonNullable<X> : never;

export type PathParamsOf<O> = Part<O, 'path'>;
export type QueryOf<O> = Part<O, 'query'>;
export type BodyOf<O> = O extends { requestBody?: infer B }
  ? [NonNullable<B>] extends [never]
    ? never
    : NonNullable<B> extends { content: { 'application/json': infer J } }
      ? J
      : never
  : never;

type SuccessStatus = 200 | 201 | 202;
type JsonOf<R> = R extends { content: { 'application/json': infer J } } ? J : never;
export type ResultOf<O> = O extends { responses: infer R }
  ? { [S in keyof R & SuccessStatus]: JsonOf<R[S]> }[keyof R & SuccessStatus]
  : never;

/**
 * true when the operation takes an Idempotency-Key: a creating POST requires one; cancelling an
 * invoice and sending, resubmitting or reversing a claim accept one and replay its first answer.
 */
export type CreatesOf<O> = 'idempotency-key' extends keyof Part<O, 'header'> ? true : false;

/** The operation with this operationId. */
export type Op<K extends keyof operations> = operations[K];

// Records, inputs and queries named after the operations that answer or take them.
export type Patient = ResultOf<Op<'getPatient'>>;
export type PatientRequest = BodyOf<Op<'createPatient'>>;
export type PatientPatch = BodyOf<Op<'updatePatient'>>;
/** Everything held about a patient (GET /patients/{id}/record). */
export type PatientRecord = ResultOf<Op<'getPatientRecord'>>;
export type EraseRequest = BodyOf<Op<'erasePatient'>>;
export type PatientRetention = ResultOf<Op<'getPatientRetention'>>;
export type RetentionRequest = BodyOf<Op<'setPatientRetention'>>;
export type FindPatientsQuery = QueryOf<Op<'findPatients'>>;
export type Coverage = ResultOf<Op<'getCoverage'>>;
export type CoverageRequest = BodyOf<Op<'addCoverage'>>;
export type InsurancePlan = ListItem<ResultOf<Op<'listInsurancePlans'>>>;
export type InsurancePlansQuery = QueryOf<Op<'listInsurancePlans'>>;
export type Encounter = ResultOf<Op<'getEncounter'>>;
export type EncounterRequest = BodyOf<Op<'createEncounter'>>;
export type EncountersQuery = QueryOf<Op<'listEncounters'>>;
export type BillRequest = BodyOf<Op<'billEncounter'>>;
export type BillResult = ResultOf<Op<'billEncounter'>>;
export type Invoice = ResultOf<Op<'getInvoice'>>;
export type CancelInvoiceRequest = BodyOf<Op<'cancelInvoice'>>;
export type Practitioner = ResultOf<Op<'getPractitioner'>>;
export type PractitionersQuery = QueryOf<Op<'listPractitioners'>>;
export type Modifier = ListItem<ResultOf<Op<'listCodeSystemModifiers'>>>;
export type InvoicesQuery = QueryOf<Op<'listInvoices'>>;
export type LineItem = ResultOf<Op<'getLineItem'>>;
export type LineItemRequest = BodyOf<Op<'addLineItem'>>;
export type Rate = ListItem<ResultOf<Op<'listLineItemRates'>>>;
export type Payment = ResultOf<Op<'getInvoicePayment'>>;
export type PaymentRequest = BodyOf<Op<'recordInvoicePayment'>>;
export type Refund = ResultOf<Op<'getInvoiceRefund'>>;
export type RefundRequest = BodyOf<Op<'recordInvoiceRefund'>>;
export type Claim = ResultOf<Op<'getClaim'>>;
export type ClaimRequest = BodyOf<Op<'sendClaim'>>;
export type ClaimReversalRequest = BodyOf<Op<'reverseClaim'>>;
export type CodeSystem = ResultOf<Op<'getCodeSystem'>>;
export type CodeSystemRequest = BodyOf<Op<'createCodeSystem'>>;
export type CodeSystemsQuery = QueryOf<Op<'listCodeSystems'>>;
export type CodeConcept = ResultOf<Op<'getCodeConcept'>>;
export type CodeConceptRequest = BodyOf<Op<'addCodeConcept'>>;
export type CodeConceptsQuery = QueryOf<Op<'listCodeConcepts'>>;
export type DeletedCodeConcept = ResultOf<Op<'deleteCodeConcept'>>;
/** An event as the API describes it, before it is told apart by `type`. */
type AnyEvent = ResultOf<Op<'getEvent'>>;
type EventData = AnyEvent['data'];
/** What every event's `data` holds: the invoice it is about (`object`, `id`, `url`). */
export type InvoiceRef = Omit<EventData, 'claim' | 'payment' | 'refund'>;
type EventOf<T extends AnyEvent['type'], D> = Omit<AnyEvent, 'type' | 'data'> & { type: T; data: D };
/** invoice.issued, invoice.cancelled, invoice.entered_in_error, invoice.written_off. */
export type InvoiceEvent = EventOf<
  Exclude<AnyEvent['type'], 'claim.status_changed' | 'payment.created' | 'refund.created'>,
  InvoiceRef
>;
/**
 * claim.status_changed: the invoice, and which claim with its new status. `claim` is absent only on
 * events a server recorded before it carried this detail.
 */
export type ClaimStatusChangedEvent = EventOf<
  'claim.status_changed',
  InvoiceRef & { claim?: NonNullable<EventData['claim']> }
>;
/**
 * payment.created: the invoice, and which payment (id, amount, currency, source). `payment` is absent
 * only on events a server recorded before it carried this detail.
 */
export type PaymentCreatedEvent = EventOf<
  'payment.created',
  InvoiceRef & { payment?: NonNullable<EventData['payment']> }
>;
/**
 * refund.created: the invoice, and which refund (id, amount, currency). Every server that sends this
 * event carries `refund`; it is optional in the type as the other details are, since the API's one
 * event shape has it optional.
 */
export type RefundCreatedEvent = EventOf<
  'refund.created',
  InvoiceRef & { refund?: NonNullable<EventData['refund']> }
>;
/** An event (an item of the events list, or a webhook body), discriminated on `type`. */
export type Event = InvoiceEvent | ClaimStatusChangedEvent | PaymentCreatedEvent | RefundCreatedEvent;
export type EventType = Event['type'];
export type EventsQuery = QueryOf<Op<'listEvents'>>;

/** A page of a list: `{object: 'list', data, hasMore, nextCursor}`. */
export interface ListPage<T> {
  object: 'list';
  data: T[];
  hasMore: boolean;
  nextCursor: string | null;
}

export type ListItem<L> = L extends { data: (infer T)[] } ? T : never;
