// The back office's reads as its routes call them: the read models (invoice-reads.ts,
// dashboard-reads.ts) hold the SQL; this module is what the routes import, so that routes call
// services and services call stores.
export { Dashboard, dashboardOf } from './dashboard-reads.ts';
export { InvoiceDetail, InvoiceSummary, invoiceDetail, searchInvoices, summaryOf } from './invoice-reads.ts';
