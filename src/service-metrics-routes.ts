// Declares the operator API's read of the service under load; src/service-metrics.ts gathers it.
import { defineAdminRoute } from './api/admin-route.ts';
import { ServiceMetrics, serviceMetrics } from './service-metrics.ts';

export const metricsAdminRoutes = [
  defineAdminRoute({
    method: 'GET',
    url: '/metrics',
    operationId: 'adminGetMetrics',
    cli: { command: 'metrics get' },
    summary:
      'The service under load: job queue per lane, deepest backlogs, deliveries in flight, requests shed',
    successStatus: 200,
    response: ServiceMetrics,
    handler: async ({ trx, deps }) => ({ body: await serviceMetrics(trx, deps) }),
  }),
];
