// The audit log as the operator's routes call it: its store (events.ts) holds the SQL; this module
// is what the routes import, so that routes call services and services call stores.
export { type AuditFilters, auditEventOf, listAuditEvents } from './events.ts';
