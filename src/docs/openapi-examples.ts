// Owns the examples the OpenAPI document shows for its named schemas: amounts in cents (ZAR), ids
// with their prefixes, one visit of one patient billed and claimed. test/openapi.test.ts checks each
// example against its schema, so they cannot drift from what the service answers.
const PATIENT = 'pat_7LlkcQofR2BNGWJmr9l0s7';
const PRACTITIONER = 'prt_3B90kJBAmEmYdrQsFYCr12';
const ENCOUNTER = 'enc_6hQgEsJdP04lK1dORK9Slm';
const INVOICE = 'inv_1IgYjVKPkVMsmJJcMKYXVs';
const COVERAGE = 'cov_5S1kGCDU2VXfsNqy6gFwnR';
const LINES = ['li_4nkeJxkbtDNo1xhFpQ8q55', 'li_1M4jYTtFordmsk1kdN8oze'] as const;
const TARIFF = 'urn:service:codesystem:tariff';
const ICD10 = 'http://hl7.org/fhir/sid/icd-10';

const patientRequest = {
  givenNames: ['Lerato', 'Grace'],
  lastName: 'Dlamini',
  gender: 'female',
  birthDate: '1990-02-28',
  externalId: { system: 'urn:acme:mrn', value: '1001' },
  contactPoints: [{ system: 'phone', value: '+27 82 555 0101', use: 'mobile' }],
};

const line = (n: 0 | 1, code: string, description: string, cents: number, dx: [string, string]) => ({
  id: LINES[n],
  serviceDate: '2026-03-10',
  serviceDateEnd: null,
  system: TARIFF,
  code,
  description,
  modifiers: [],
  quantity: 1,
  unitPrice: cents,
  subtotal: cents,
  total: cents,
  pricingSource: 'medical_aid',
  diagnoses: [{ system: ICD10, code: dx[0], display: dx[1], primary: true }],
});

const lines = [
  line(0, '0190', 'General practitioner consultation: average duration and complexity', 49_500, [
    'J06.9',
    'Acute upper respiratory infection, unspecified',
  ]),
  line(
    1,
    '0191',
    'General practitioner consultation: moderately above average duration or complexity',
    74_250,
    ['I10', 'Essential (primary) hypertension'],
  ),
];

const issuedInvoice = {
  object: 'invoice',
  id: INVOICE,
  number: 'INV-000001',
  status: 'issued',
  claimStatus: null,
  patientId: PATIENT,
  coverageId: null,
  encounterIds: [ENCOUNTER],
  recipientName: 'Lerato Grace Dlamini',
  date: '2026-03-10',
  dueDate: '2026-04-09',
  currency: 'ZAR',
  totalNet: 123_750,
  totalGross: 123_750,
  amountPaid: 0,
  balanceDue: 123_750,
  amountWrittenOff: 0,
  creditDue: 0,
  totalVat: 0,
  paidByScheme: 0,
  paidByPatient: 0,
  balanceExplanation: 'Total ZAR 1237.50. You owe ZAR 1237.50.',
  lineItems: lines,
  closingReason: null,
  updatedAt: '2026-03-10T09:00:00.466Z',
};

export const EXAMPLES: Record<string, unknown[]> = {
  PatientRequest: [patientRequest],
  Patient: [
    {
      object: 'patient',
      id: PATIENT,
      active: true,
      prefix: null,
      ...patientRequest,
      identifiers: [],
      contactPoints: [{ ...patientRequest.contactPoints[0], rank: null }],
      addresses: [],
      organizationId: 'org_0I0S5KLTZFHuIBu6tRawdS',
      updatedAt: '2026-03-10T09:00:00.222Z',
    },
  ],
  CoverageRequest: [{ planId: 'pln_ubuntu_essential', memberNumber: 'M-100200' }],
  Coverage: [
    {
      object: 'coverage',
      id: COVERAGE,
      patientId: PATIENT,
      planId: 'pln_ubuntu_essential',
      memberNumber: 'M-100200',
      dependentCode: null,
      memberSurname: null,
      memberInitials: null,
      active: true,
      startDate: null,
      endDate: null,
    },
  ],
  EncounterRequest: [
    {
      patientId: PATIENT,
      practitionerId: PRACTITIONER,
      start: '2026-03-10T07:30:00Z',
      end: '2026-03-10T08:00:00Z',
      diagnoses: [{ code: 'J06.9' }, { code: 'I10' }],
      procedures: [
        { code: '0190', diagnosisCodes: ['J06.9'] },
        { code: '0191', diagnosisCodes: ['I10'] },
      ],
    },
  ],
  Encounter: [
    {
      object: 'encounter',
      id: ENCOUNTER,
      status: 'completed',
      class: 'amb',
      patientId: PATIENT,
      practitionerId: PRACTITIONER,
      start: '2026-03-10T07:30:00.000Z',
      end: '2026-03-10T08:00:00.000Z',
      diagnoses: [
        {
          id: 'dx_3jIOnZDiqrRNTro4O5i8Qx',
          system: ICD10,
          code: 'J06.9',
          display: 'Acute upper respiratory infection, unspecified',
        },
        {
          id: 'dx_7AHcl69kwpPCpnUiDt0ZC3',
          system: ICD10,
          code: 'I10',
          display: 'Essential (primary) hypertension',
        },
      ],
      procedures: [
        {
          id: 'proc_4dJz90YuGhJPRLEDdmb6MS',
          status: 'completed',
          system: TARIFF,
          code: '0190',
          display: 'General practitioner consultation: average duration and complexity',
          diagnosisCodes: ['J06.9'],
          note: null,
        },
        {
          id: 'proc_62BfUGfFV2GccQGyZh6Ijx',
          status: 'completed',
          system: TARIFF,
          code: '0191',
          display: 'General practitioner consultation: moderately above average duration or complexity',
          diagnosisCodes: ['I10'],
          note: null,
        },
      ],
      updatedAt: '2026-03-10T08:00:00.295Z',
    },
  ],
  BillRequest: [{ issue: true }, { issue: true, submitClaim: true, coverageId: COVERAGE }],
  BillResult: [
    {
      object: 'bill_result',
      invoice: issuedInvoice,
      issued: true,
      issueSkippedReason: null,
      claimQueued: null,
      claimSkippedReason: null,
    },
  ],
  InvoiceLine: [lines[0]],
  LineItem: [{ object: 'line_item', ...lines[0] }],
  Invoice: [
    issuedInvoice,
    {
      ...issuedInvoice,
      status: 'balanced',
      claimStatus: 'accepted',
      coverageId: COVERAGE,
      amountPaid: 123_750,
      balanceDue: 0,
      paidByScheme: 123_750,
      balanceExplanation: 'Total ZAR 1237.50. Your medical scheme paid ZAR 1237.50. Nothing is owed.',
      updatedAt: '2026-03-10T09:00:00.601Z',
    },
  ],
  ClaimRequest: [{ coverageId: COVERAGE }],
  Claim: [
    {
      object: 'claim',
      id: 'clm_7kQE55SkGx0VOKJqlTLp4E',
      invoiceId: INVOICE,
      status: 'accepted',
      outcome: 'complete',
      message: null,
      resubmittable: false,
      reversible: true,
      reversalReason: null,
      authorizationReference: 'SBX-9D50F498655B',
      submittedAt: '2026-03-10T09:00:00.481Z',
      currency: 'ZAR',
      items: [
        {
          lineNumber: 1,
          lineItemId: LINES[0],
          decision: 'approved',
          submitted: 49_500,
          benefit: 49_500,
          rejections: [],
          warnings: [],
        },
        {
          lineNumber: 2,
          lineItemId: LINES[1],
          decision: 'approved',
          submitted: 74_250,
          benefit: 74_250,
          rejections: [],
          warnings: [],
        },
      ],
    },
  ],
  Payment: [
    {
      object: 'payment',
      id: 'pay_2xT9rQmLk4VbN8cZ1sYw3e',
      invoiceId: INVOICE,
      amount: 123_750,
      currency: 'ZAR',
      method: 'eft',
      source: 'insurer',
      reference: 'SBX-9D50F498655B',
      receivedAt: '2026-03-12T10:15:00.000Z',
    },
  ],
  Problem: [
    {
      type: 'https://billing.example.com/errors#validation-failed',
      title: 'Validation failed',
      status: 422,
      detail: '2 fields are wrong: givenNames, birthDate.',
      code: 'validation_failed',
      requestId: 'req_0BWExuPwkWxvXq4nx',
      errors: [
        { field: 'givenNames', code: 'required', message: 'givenNames is required' },
        {
          field: 'birthDate',
          code: 'invalid',
          message: 'birthDate must be a real calendar date, YYYY-MM-DD',
        },
      ],
    },
    {
      type: 'https://billing.example.com/errors#not-found',
      title: 'Not found',
      status: 404,
      detail: 'No such record in this practice.',
      code: 'not_found',
      requestId: 'req_1GMAKTyYuBa1NgAEU',
    },
  ],
};
