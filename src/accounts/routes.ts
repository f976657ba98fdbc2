// Declares the public API's patient account: GET /invoices/{invoiceId}/document answers the issued
// invoice's account as a PDF, drawn as the invoice stands at the moment of reading.
import { Type } from 'typebox';
import { defineApiRoute } from '../api/api-route.ts';
import { IdParam } from '../platform/http/schema.ts';
import { renderAccountPdf } from './document.ts';
import { gatherAccount } from './service.ts';
import { accountViewOf } from './view.ts';

const AccountPdf = Type.Unsafe<string>({
  type: 'string',
  format: 'binary',
  description:
    "The patient's account (a tax invoice when the practice is VAT registered) as PDF: what regulation 5 of the Medical Schemes Act's General Regulations asks (member and patient, scheme and membership, practice and practitioner numbers, each service's date, codes, diagnoses, nature and cost), the totals, what was paid and how to pay.",
});

export const accountRoutes = [
  defineApiRoute({
    method: 'GET',
    url: '/invoices/:invoiceId/document',
    operationId: 'getInvoiceDocument',
    summary: "The invoice's account for the patient, as PDF",
    description:
      'For every invoice that has been issued (a draft answers 422 business_rule). It describes the invoice as it stands now: an amended and re-issued invoice answers its corrected account. `Content-Disposition` names the file after the invoice number.',
    tag: 'Invoices',
    permission: 'INVOICES:READ',
    resourceType: 'invoice',
    params: IdParam('invoiceId', 'Invoice id (`inv_...`).'),
    produces: 'application/pdf',
    successStatus: 200,
    response: AccountPdf,
    errorStatuses: [400, 401, 403, 404, 422, 429, 500, 503],
    handler: async ({ trx, practiceId, params, now }) => {
      const { parts, record } = await gatherAccount(trx, practiceId, params.invoiceId);
      const view = accountViewOf(parts);
      return {
        body: '',
        resource: { id: record.invoice.id, patientId: record.invoice.patient_id },
        file: {
          contentType: 'application/pdf',
          filename: `${record.invoice.number}.pdf`,
          render: () => renderAccountPdf(view, now),
        },
      };
    },
  }),
];
