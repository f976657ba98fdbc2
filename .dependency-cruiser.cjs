// Which folder of src/ may import which (docs/architecture.md, "Folders and their imports").
// The folders are listed bottom up, and a folder may import only from folders listed before it, so
// the picture has no cycle by construction: adding an import that runs back up fails `npm run
// lint:imports` (part of `npm test`). The files at the top of src/ (app, server, worker wiring, the
// sandbox seed, the OpenAPI document) and src/cli/ compose everything and may import any folder;
// no folder imports them.
const LAYERS = [
  ['platform', []],
  ['paging', ['platform']],
  ['secrets', ['platform']],
  ['auth', ['platform']],
  ['idempotency', ['platform']],
  ['insurer', ['platform']],
  ['jobs', ['platform']],
  ['docs', ['platform']],
  ['console', ['platform']],
  ['notifications', ['platform', 'paging', 'jobs']],
  ['api', ['platform', 'auth', 'idempotency', 'insurer']],
  ['code-systems', ['platform', 'paging', 'api']],
  ['patients', ['platform', 'api']],
  ['events', ['platform', 'paging', 'api']],
  ['practices', ['platform', 'paging', 'api', 'code-systems']],
  ['encounters', ['platform', 'paging', 'api', 'code-systems', 'patients', 'practices']],
  ['insurance', ['platform', 'paging', 'api', 'patients', 'practices']],
  ['pricing', ['platform', 'api', 'auth', 'code-systems', 'practices']],
  ['audit', ['platform', 'api', 'practices']],
  ['catalogue', ['platform', 'code-systems', 'insurance']],
  ['clients', ['platform', 'api', 'auth', 'practices']],
  ['webhooks', ['platform', 'paging', 'api', 'events', 'jobs', 'notifications', 'practices']],
  [
    'invoices',
    [
      'platform',
      'paging',
      'api',
      'auth',
      'code-systems',
      'encounters',
      'events',
      'insurance',
      'notifications',
      'patients',
      'practices',
      'webhooks',
    ],
  ],
  ['claims', ['platform', 'api', 'insurance', 'insurer', 'invoices', 'jobs', 'practices', 'webhooks']],
  [
    'accounts',
    [
      'platform',
      'api',
      'events',
      'insurance',
      'invoices',
      'jobs',
      'notifications',
      'patients',
      'practices',
      'webhooks',
    ],
  ],
  [
    'back-office',
    ['platform', 'paging', 'api', 'claims', 'insurance', 'invoices', 'patients', 'practices', 'webhooks'],
  ],
  // A patient's and a practice's data rights (access, de-identification, offboarding) span every record.
  [
    'data-rights',
    [
      'platform',
      'paging',
      'api',
      'idempotency',
      'jobs',
      'patients',
      'encounters',
      'insurance',
      'invoices',
      'practices',
      'webhooks',
      'notifications',
      'accounts',
    ],
  ],
];

const seen = new Set();
for (const [folder, allowed] of LAYERS) {
  if (!/^[a-z-]+$/.test(folder)) throw new Error(`${folder}: a folder name of lower-case letters and dashes`);
  for (const lower of allowed) {
    if (!seen.has(lower)) throw new Error(`${folder} may import only folders listed before it, not ${lower}`);
  }
  seen.add(folder);
}

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Modules may not import each other in a circle, not even through others.',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'unlisted-folder',
      severity: 'error',
      comment: 'Every folder of src/ has a place in LAYERS (.dependency-cruiser.cjs).',
      from: {
        path: '^src/[^/]+/',
        pathNot: `^src/(cli|${LAYERS.map(([folder]) => folder).join('|')})/`,
      },
      to: {},
    },
    ...LAYERS.map(([folder, allowed]) => ({
      name: `${folder}-imports`,
      severity: 'error',
      comment: `src/${folder}/ may import only ${allowed.length ? allowed.join(', ') : 'nothing else in src/'}.`,
      from: { path: `^src/${folder}/` },
      to: {
        path: '^src/',
        pathNot: `^src/(${[folder, ...allowed].join('|')})/`,
      },
    })),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    includeOnly: '^(src|migrations)/',
    parser: 'swc',
    enhancedResolveOptions: { extensions: ['.ts', '.tsx', '.js'] },
  },
};
