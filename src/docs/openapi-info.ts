// Owns the parts of the OpenAPI document that are not route schemas: title, version, licence,
// servers, security schemes and the tag descriptions an integrator reads first. The document is the
// same for every deployment (it is committed): the server is named relative to the document.
export const API_VERSION = '1.3.1';

export function openApiInfo() {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Practice Billing Integration API',
      version: API_VERSION,
      license: { name: 'Proprietary: all rights reserved', identifier: 'LicenseRef-Proprietary' },
      description: [
        'Lets an external system act for one medical practice: register patients, record visits, bill them, claim from medical schemes and receive signed webhooks.',
        '',
        '- Every path of the public API starts with `/api/v1`; authenticate with `Authorization: Bearer <API key>`.',
        '- Amounts are integers in the minor unit (cents for ZAR). Timestamps are UTC ISO 8601; plain dates `YYYY-MM-DD`.',
        '- Errors are Problems; `code` is stable, see `/errors`.',
        '- Creating operations need `Idempotency-Key` (at most 255 characters, remembered 24 hours per client); a retry with the same key and body replays the first answer with `Idempotent-Replayed: true`.',
        '- Lists page with `limit` (1 to 100, default 50) and the opaque `nextCursor`.',
        '- Every answer carries `X-Request-Id` and `X-RateLimit-Limit` / `-Remaining` / `-Reset`.',
        '- The operator API under `/admin/v1` (tag Admin) provisions practices, clients and keys with the `ADMIN_TOKEN`.',
      ].join('\n'),
    },
    // Relative: the service that serves the document, whatever its address (Swagger UI at /docs calls it).
    servers: [{ url: '/', description: 'The service serving this document, at its PUBLIC_BASE_URL.' }],
    components: {
      securitySchemes: {
        apiKey: {
          type: 'http' as const,
          scheme: 'bearer',
          description: 'An API key of an integration client (`pbk_...`).',
        },
        adminToken: {
          type: 'http' as const,
          scheme: 'bearer',
          description: 'The operator token (ADMIN_TOKEN).',
        },
      },
    },
    tags: [
      { name: 'Patients', description: "Register, find, read and correct a practice's patients." },
      {
        name: 'Insurance',
        description: "Find medical scheme plans and record a patient's coverage (membership).",
      },
      {
        name: 'Practitioners',
        description: "The practice's practitioners: the ids visits and X-Service-Performer name.",
      },
      { name: 'Encounters', description: 'Record visits with their diagnoses and procedures.' },
      {
        name: 'Invoices',
        description:
          'Bill visits, change lines, read prices, issue, amend, and record and follow payments and refunds.',
      },
      {
        name: 'Claims',
        description:
          "Send an invoice's claim to the patient's medical scheme, read its outcome line by line, resubmit or reverse it. Sending answers 202; the outcome comes later.",
      },
      {
        name: 'Code systems',
        description: "ICD-10, the procedure tariff and the practice's own code systems.",
      },
      {
        name: 'Events',
        description:
          'Every event the service emits (the bodies webhooks carry), listed to catch up after downtime.',
      },
      {
        name: 'Admin',
        description:
          "Operator API: practices, practitioners, clients, keys and the audit log. Every POST takes an `Idempotency-Key` held by the operator (apart from every client's), with the public API's replay rules; recording a payment or a refund and writing an invoice off require it.",
      },
    ],
  };
}
