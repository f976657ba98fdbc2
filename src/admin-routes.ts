// Every operation of the operator API, in one list: the app registers it and the CLI covers it.
import { accountAdminRoutes } from './accounts/admin-routes.ts';
import type { AnyAdminRoute } from './api/admin-route.ts';
import { auditAdminRoutes } from './audit/admin-routes.ts';
import { dashboardAdminRoutes } from './back-office/dashboard.ts';
import { invoiceAdminRoutes } from './back-office/invoices.ts';
import { clientAdminRoutes } from './clients/admin-routes.ts';
import { offboardingAdminRoutes } from './data-rights/admin-routes.ts';
import { coverageAdminRoutes } from './insurance/admin.ts';
import { billingAdminRoutes } from './invoices/admin.ts';
import { notificationAdminRoutes } from './invoices/notifications.ts';
import { practiceAdminRoutes } from './practices/admin-routes.ts';
import { priceAdminRoutes } from './pricing/admin.ts';
import { metricsAdminRoutes } from './service-metrics-routes.ts';
import { webhookAdminRoutes } from './webhooks/admin.ts';

export const allAdminRoutes: AnyAdminRoute[] = [
  ...practiceAdminRoutes,
  ...clientAdminRoutes,
  ...auditAdminRoutes,
  ...priceAdminRoutes,
  ...billingAdminRoutes,
  ...webhookAdminRoutes,
  ...notificationAdminRoutes,
  ...accountAdminRoutes,
  ...invoiceAdminRoutes,
  ...coverageAdminRoutes,
  ...dashboardAdminRoutes,
  ...metricsAdminRoutes,
  ...offboardingAdminRoutes,
];
