// Every operation of the operator API, in one list: the app registers it and the CLI covers it.
import { billingAdminRoutes } from '../invoices/admin.ts';
import { priceAdminRoutes } from '../pricing/admin.ts';
import { webhookAdminRoutes } from '../webhooks/admin.ts';
import type { AnyAdminRoute } from './admin-route.ts';
import { notificationAdminRoutes } from './notifications.ts';
import { adminRoutes } from './routes.ts';

export const allAdminRoutes: AnyAdminRoute[] = [
  ...adminRoutes,
  ...priceAdminRoutes,
  ...billingAdminRoutes,
  ...webhookAdminRoutes,
  ...notificationAdminRoutes,
];
