// Every operation of the operator API, in one list: the app registers it and the CLI covers it.

import { dashboardAdminRoutes } from '../admin/dashboard.ts';
import { notificationAdminRoutes } from '../admin/notifications.ts';
import { adminRoutes } from '../admin/routes.ts';
import { coverageAdminRoutes } from '../insurance/admin.ts';
import { billingAdminRoutes } from '../invoices/admin.ts';
import { invoiceAdminRoutes } from '../invoices/admin-invoices.ts';
import { priceAdminRoutes } from '../pricing/admin.ts';
import { webhookAdminRoutes } from '../webhooks/admin.ts';
import type { AnyAdminRoute } from './admin-route.ts';

export const allAdminRoutes: AnyAdminRoute[] = [
  ...adminRoutes,
  ...priceAdminRoutes,
  ...billingAdminRoutes,
  ...webhookAdminRoutes,
  ...notificationAdminRoutes,
  ...invoiceAdminRoutes,
  ...coverageAdminRoutes,
  ...dashboardAdminRoutes,
];
