// Owns the catalogue of `practice-billing admin <resource> <action>` commands: for each, the admin API
// route it calls (as declared in routes.ts) and how its arguments become the path, the query or the
// JSON body. Pure: no I/O, so the catalogue can be checked against the routes in a test.
import type { AdminRequest } from './admin-client.ts';
import { type AdminCommand, type FlagSpec, type Target, UsageError } from './command.ts';
import { INVOICE_COMMANDS } from './invoice-commands.ts';

const TARGET_PARAM: Record<Target, string> = { practice: 'practiceId', client: 'clientId', key: 'keyId' };

const clientFlags: FlagSpec[] = [
  { flag: 'name', kind: 'text', to: { body: 'name' }, required: true, help: 'Name of the integration' },
  {
    flag: 'permissions',
    kind: 'list',
    to: { body: 'permissions' },
    required: true,
    help: 'Comma-separated, e.g. PATIENTS:READ,PATIENTS:CREATE ("" for none)',
  },
  {
    flag: 'allowed-ips',
    kind: 'list',
    to: { body: 'allowedIps' },
    help: 'Comma-separated addresses or CIDR ranges; left out means any address',
  },
  {
    flag: 'rate-limit-per-minute',
    kind: 'integer',
    to: { body: 'rateLimitPerMinute' },
    help: "Requests per minute for this client; left out means the service's default",
  },
];

const CORE_COMMANDS: AdminCommand[] = [
  {
    resource: 'practices',
    action: 'create',
    summary: 'Create a practice (Integrations add-on on)',
    method: 'POST',
    route: '/practices',
    sendsBody: true,
    flags: [
      { flag: 'name', kind: 'text', to: { body: 'name' }, required: true, help: 'Practice name' },
      { flag: 'currency', kind: 'text', to: { body: 'currency' }, help: 'ISO 4217 code (default ZAR)' },
      {
        flag: 'timezone',
        kind: 'text',
        to: { body: 'timezone' },
        help: 'IANA time zone (default Africa/Johannesburg)',
      },
    ],
  },
  {
    resource: 'practices',
    action: 'list',
    summary: 'List practices',
    method: 'GET',
    route: '/practices',
    flags: [],
  },
  {
    resource: 'practices',
    action: 'get',
    summary: 'Read a practice',
    method: 'GET',
    route: '/practices/:practiceId',
    target: 'practice',
    flags: [],
  },
  {
    resource: 'practices',
    action: 'integrations',
    summary: 'Turn the Integrations add-on on or off',
    method: 'PUT',
    route: '/practices/:practiceId/integrations',
    target: 'practice',
    sendsBody: true,
    flags: [
      { flag: 'enabled', kind: 'boolean', to: { body: 'enabled' }, required: true, help: 'true or false' },
    ],
  },
  {
    resource: 'practitioners',
    action: 'create',
    summary: 'Add a practitioner to a practice',
    method: 'POST',
    route: '/practices/:practiceId/practitioners',
    target: 'practice',
    sendsBody: true,
    flags: [
      { flag: 'name', kind: 'text', to: { body: 'name' }, required: true, help: 'Practitioner name' },
      {
        flag: 'registration-number',
        kind: 'text',
        to: { body: 'registrationNumber' },
        help: 'Professional registration number',
      },
      {
        flag: 'condition-system',
        kind: 'text',
        to: { body: 'defaultSystems.condition' },
        help: 'Default code system for conditions (default ICD-10)',
      },
      {
        flag: 'procedure-system',
        kind: 'text',
        to: { body: 'defaultSystems.procedure' },
        help: 'Default code system for procedures (default the tariff)',
      },
    ],
  },
  {
    resource: 'practitioners',
    action: 'list',
    summary: "List a practice's practitioners",
    method: 'GET',
    route: '/practices/:practiceId/practitioners',
    target: 'practice',
    flags: [],
  },
  {
    resource: 'clients',
    action: 'create',
    summary: 'Create an integration client in a practice',
    method: 'POST',
    route: '/practices/:practiceId/clients',
    target: 'practice',
    sendsBody: true,
    flags: clientFlags,
  },
  {
    resource: 'clients',
    action: 'list',
    summary: "List a practice's integration clients",
    method: 'GET',
    route: '/practices/:practiceId/clients',
    target: 'practice',
    flags: [],
  },
  {
    resource: 'clients',
    action: 'get',
    summary: 'Read an integration client',
    method: 'GET',
    route: '/clients/:clientId',
    target: 'client',
    flags: [],
  },
  {
    resource: 'clients',
    action: 'replace',
    summary: 'Replace a client (full replacement: flags left out are cleared)',
    method: 'PUT',
    route: '/clients/:clientId',
    target: 'client',
    sendsBody: true,
    flags: clientFlags,
  },
  {
    resource: 'clients',
    action: 'suspend',
    summary: 'Suspend a client (its keys answer 401)',
    method: 'POST',
    route: '/clients/:clientId/suspend',
    target: 'client',
    flags: [],
  },
  {
    resource: 'clients',
    action: 'resume',
    summary: 'Resume a suspended client',
    method: 'POST',
    route: '/clients/:clientId/resume',
    target: 'client',
    flags: [],
  },
  {
    resource: 'keys',
    action: 'create',
    summary: 'Issue an API key for a client (the key is shown this once)',
    method: 'POST',
    route: '/clients/:clientId/keys',
    target: 'client',
    sendsBody: true,
    flags: [
      {
        flag: 'expires-at',
        kind: 'text',
        to: { body: 'expiresAt' },
        help: 'Date-time the key stops working, e.g. 2027-01-31T00:00:00Z',
      },
    ],
  },
  {
    resource: 'keys',
    action: 'list',
    summary: "List a client's keys (never the keys themselves)",
    method: 'GET',
    route: '/clients/:clientId/keys',
    target: 'client',
    flags: [],
  },
  {
    resource: 'keys',
    action: 'revoke',
    summary: 'Revoke an API key',
    method: 'POST',
    route: '/keys/:keyId/revoke',
    target: 'key',
    flags: [],
  },
  {
    resource: 'audit',
    action: 'list',
    summary: "Read a practice's audit log, newest first",
    method: 'GET',
    route: '/practices/:practiceId/audit-events',
    target: 'practice',
    flags: [
      { flag: 'limit', kind: 'integer', to: { query: 'limit' }, help: 'Page size, 1 to 100 (default 50)' },
      { flag: 'cursor', kind: 'text', to: { query: 'cursor' }, help: 'nextCursor of the previous page' },
    ],
  },
];

const endpointFlag: FlagSpec = {
  flag: 'endpoint',
  kind: 'text',
  to: { path: 'endpointId' },
  required: true,
  help: 'Webhook endpoint id (whe_...)',
};
const eventFlag: FlagSpec = {
  flag: 'event',
  kind: 'text',
  to: { path: 'eventId' },
  required: true,
  help: 'Event id (evt_...)',
};
const endpointBodyFlags: FlagSpec[] = [
  {
    flag: 'webhook-url',
    kind: 'text',
    to: { body: 'url' },
    required: true,
    help: 'Receiver URL (https, public address)',
  },
  {
    flag: 'event-types',
    kind: 'list',
    to: { body: 'eventTypes' },
    help: 'Comma-separated event types; left out means all',
  },
];
const pageFlags: FlagSpec[] = [
  { flag: 'limit', kind: 'integer', to: { query: 'limit' }, help: 'Page size, 1 to 100 (default 50)' },
  { flag: 'cursor', kind: 'text', to: { query: 'cursor' }, help: 'nextCursor of the previous page' },
];

function endpointCommand(
  action: string,
  summary: string,
  method: AdminRequest['method'],
  suffix: string,
  flags: FlagSpec[] = [],
  sendsBody = false,
): AdminCommand {
  return {
    resource: 'webhooks',
    action,
    summary,
    method,
    route: `/practices/:practiceId/webhook-endpoints/:endpointId${suffix}`,
    target: 'practice',
    ...(sendsBody ? { sendsBody } : {}),
    flags: [endpointFlag, ...flags],
  };
}

const BILLING_AND_WEBHOOK_COMMANDS: AdminCommand[] = [
  {
    resource: 'prices',
    action: 'set',
    summary: 'Set a practice price, or with --practitioner a favourite',
    method: 'POST',
    route: '/practices/:practiceId/prices',
    target: 'practice',
    sendsBody: true,
    flags: [
      { flag: 'system', kind: 'text', to: { body: 'system' }, required: true, help: 'Code system url' },
      { flag: 'code', kind: 'text', to: { body: 'code' }, required: true, help: 'Code' },
      {
        flag: 'amount',
        kind: 'integer',
        to: { body: 'amount' },
        required: true,
        help: 'Price in minor units',
      },
      {
        flag: 'practitioner',
        kind: 'text',
        to: { body: 'practitionerId' },
        help: 'Practitioner id for a favourite',
      },
    ],
  },
  {
    resource: 'prices',
    action: 'list',
    summary: "List a practice's prices",
    method: 'GET',
    route: '/practices/:practiceId/prices',
    target: 'practice',
    flags: [],
  },
  {
    resource: 'prices',
    action: 'delete',
    summary: 'Delete a price',
    method: 'DELETE',
    route: '/practices/:practiceId/prices/:priceId',
    target: 'practice',
    flags: [
      { flag: 'price', kind: 'text', to: { path: 'priceId' }, required: true, help: 'Price id (prc_...)' },
    ],
  },
  {
    resource: 'billing',
    action: 'get',
    summary: "Read a practice's billing settings",
    method: 'GET',
    route: '/practices/:practiceId/billing-settings',
    target: 'practice',
    flags: [],
  },
  {
    resource: 'billing',
    action: 'set',
    summary: "Replace a practice's billing settings",
    method: 'PUT',
    route: '/practices/:practiceId/billing-settings',
    target: 'practice',
    sendsBody: true,
    flags: [
      {
        flag: 'vat-rate-basis-points',
        kind: 'integer',
        to: { body: 'vatRateBasisPoints' },
        required: true,
        help: 'VAT, 1500 = 15%',
      },
      {
        flag: 'payment-terms-days',
        kind: 'integer',
        to: { body: 'paymentTermsDays' },
        required: true,
        help: 'Days until due',
      },
      {
        flag: 'invoice-number-prefix',
        kind: 'text',
        to: { body: 'invoiceNumberPrefix' },
        required: true,
        help: 'e.g. INV-',
      },
    ],
  },
  ...(
    [
      ['cancel', 'Cancel an invoice nothing was paid on'],
      ['entered-in-error', 'Mark an invoice entered in error'],
      ['write-off', "Write off an invoice's balance"],
    ] as const
  ).map(
    ([action, summary]): AdminCommand => ({
      resource: 'invoices',
      action,
      summary,
      method: 'POST',
      route: `/practices/:practiceId/invoices/:invoiceId/${action}`,
      target: 'practice',
      sendsBody: true,
      flags: [
        {
          flag: 'invoice',
          kind: 'text',
          to: { path: 'invoiceId' },
          required: true,
          help: 'Invoice id (inv_...)',
        },
        {
          flag: 'reason',
          kind: 'text',
          to: { body: 'reason' },
          required: true,
          help: 'Why, for the audit log',
        },
      ],
    }),
  ),
  {
    resource: 'payments',
    action: 'record',
    summary: 'Record a payment against an invoice',
    method: 'POST',
    route: '/practices/:practiceId/payments',
    target: 'practice',
    sendsBody: true,
    flags: [
      {
        flag: 'invoice',
        kind: 'text',
        to: { body: 'invoiceId' },
        required: true,
        help: 'Invoice id (inv_...)',
      },
      {
        flag: 'amount',
        kind: 'integer',
        to: { body: 'amount' },
        required: true,
        help: 'Minor units, at most the balance due',
      },
      { flag: 'method', kind: 'text', to: { body: 'method' }, required: true, help: 'cash, card, eft, ...' },
      { flag: 'reference', kind: 'text', to: { body: 'reference' }, help: 'Reference' },
      { flag: 'source', kind: 'text', to: { body: 'source' }, help: 'patient (default) or insurer' },
    ],
  },
  {
    resource: 'webhooks',
    action: 'create',
    summary: 'Register a webhook endpoint (prints its secret once)',
    method: 'POST',
    route: '/practices/:practiceId/webhook-endpoints',
    target: 'practice',
    sendsBody: true,
    flags: endpointBodyFlags,
  },
  {
    resource: 'webhooks',
    action: 'list',
    summary: "List a practice's webhook endpoints",
    method: 'GET',
    route: '/practices/:practiceId/webhook-endpoints',
    target: 'practice',
    flags: [],
  },
  endpointCommand('get', 'Read a webhook endpoint', 'GET', ''),
  endpointCommand('update', "Replace an endpoint's url and event types", 'PUT', '', endpointBodyFlags, true),
  endpointCommand('disable', 'Stop deliveries to an endpoint', 'POST', '/disable'),
  endpointCommand('enable', 'Resume deliveries to an endpoint', 'POST', '/enable'),
  endpointCommand(
    'rotate-secret',
    "Rotate an endpoint's secret (prints the new one once)",
    'POST',
    '/rotate-secret',
  ),
  endpointCommand('delete', 'Delete an endpoint', 'DELETE', ''),
  endpointCommand(
    'attempts',
    "An endpoint's delivery attempts, newest first",
    'GET',
    '/deliveries',
    pageFlags,
  ),
  endpointCommand(
    'recover',
    'Deliver again everything that failed since a time',
    'POST',
    '/recover',
    [{ flag: 'since', kind: 'text', to: { body: 'since' }, required: true, help: 'ISO 8601 date-time' }],
    true,
  ),
  {
    resource: 'events',
    action: 'attempts',
    summary: "An event's delivery attempts",
    method: 'GET',
    route: '/practices/:practiceId/events/:eventId/deliveries',
    target: 'practice',
    flags: [eventFlag],
  },
  {
    resource: 'events',
    action: 'redeliver',
    summary: 'Deliver one event again',
    method: 'POST',
    route: '/practices/:practiceId/events/:eventId/redeliver',
    target: 'practice',
    sendsBody: true,
    flags: [
      eventFlag,
      { flag: 'endpoint', kind: 'text', to: { body: 'endpointId' }, help: 'Only to this endpoint' },
    ],
  },
];

const NOTIFICATION_COMMANDS: AdminCommand[] = [
  {
    resource: 'notifications',
    action: 'list',
    summary: 'What the service told patients and the practice, newest first',
    method: 'GET',
    route: '/practices/:practiceId/notifications',
    target: 'practice',
    flags: pageFlags,
  },
];

export const ADMIN_COMMANDS: AdminCommand[] = [
  ...CORE_COMMANDS,
  ...BILLING_AND_WEBHOOK_COMMANDS,
  ...NOTIFICATION_COMMANDS,
  ...INVOICE_COMMANDS,
];

export function findCommand(resource: string, action: string): AdminCommand | undefined {
  return ADMIN_COMMANDS.find((c) => c.resource === resource && c.action === action);
}

function convert(spec: FlagSpec, raw: string): unknown {
  switch (spec.kind) {
    case 'text':
      return raw;
    case 'list':
      return raw
        .split(',')
        .map((item) => item.trim())
        .filter((item) => item !== '');
    case 'integer':
      if (!/^-?\d+$/.test(raw.trim()))
        throw new UsageError(`--${spec.flag} must be a whole number, got "${raw}".`);
      return Number(raw.trim());
    case 'boolean': {
      const value = raw.trim().toLowerCase();
      if (['true', 'on', 'yes', '1'].includes(value)) return true;
      if (['false', 'off', 'no', '0'].includes(value)) return false;
      throw new UsageError(`--${spec.flag} must be true or false, got "${raw}".`);
    }
  }
}

function setPath(target: Record<string, unknown>, dotted: string, value: unknown): void {
  const parts = dotted.split('.');
  let node = target;
  for (const part of parts.slice(0, -1)) {
    node[part] ??= {};
    node = node[part] as Record<string, unknown>;
  }
  node[parts[parts.length - 1]!] = value;
}

/** Builds the HTTP request for a command from its target id and flag values (as parseArgs gives them). */
export function buildAdminRequest(
  command: AdminCommand,
  targetId: string | undefined,
  values: Record<string, string | undefined>,
): AdminRequest {
  let path = command.route;
  if (command.target) {
    if (!targetId) {
      throw new UsageError(`Give the ${command.target} id, after the action or as --${command.target} <id>.`);
    }
    path = path.replace(`:${TARGET_PARAM[command.target]}`, encodeURIComponent(targetId));
  }
  const query: Record<string, string> = {};
  const body: Record<string, unknown> = {};
  for (const spec of command.flags) {
    const raw = values[spec.flag];
    if (raw === undefined) {
      if (spec.required) throw new UsageError(`--${spec.flag} is required.`);
      continue;
    }
    const value = convert(spec, raw);
    if ('query' in spec.to) query[spec.to.query] = String(value);
    else if ('path' in spec.to) path = path.replace(`:${spec.to.path}`, encodeURIComponent(String(value)));
    else setPath(body, spec.to.body, value);
  }
  return {
    method: command.method,
    path,
    ...(Object.keys(query).length > 0 ? { query } : {}),
    ...(command.sendsBody ? { body } : {}),
  };
}
