// The `practice-billing` command as an operator runs it: the real bin script against a real server
// process on the embedded database (once, not per backend), and `migrate` on a fresh embedded data
// directory and on a fresh PostgreSQL database.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { type TSchema, Type } from 'typebox';
import { migrations } from '../migrations/index.ts';
import { allAdminRoutes } from '../src/admin-routes.ts';
import { type AnyAdminRoute, defineAdminRoute } from '../src/api/admin-route.ts';
import { ADMIN_COMMANDS, ADMIN_COMMANDS_FILE, buildAdminRequest } from '../src/cli/admin-commands.ts';
import { commandOf } from '../src/cli/command.ts';
import { deriveAdminCommands, serialiseCommands } from '../src/cli/derive-commands.ts';
import { emptyPostgresDatabase } from './harness.ts';
import {
  BIN,
  childEnv,
  cli,
  freePort,
  NODE,
  removeDataDir,
  run,
  type ServiceProcess,
  sandboxBanner,
  startServiceProcess,
  tempDir,
} from './processes.ts';

const MIGRATION_NAMES = Object.keys(migrations);
const tempDirs: string[] = [];

after(() => {
  for (const dir of tempDirs) removeDataDir(dir);
});

function scratchDir(prefix: string): string {
  const dir = tempDir(prefix);
  tempDirs.push(dir);
  return dir;
}

function json(text: string) {
  try {
    return JSON.parse(text);
  } catch {
    assert.fail(`not JSON:\n${text}`);
  }
}

test('the committed command catalogue is the one the admin routes declare', () => {
  assert.equal(
    fs.readFileSync(ADMIN_COMMANDS_FILE, 'utf8'),
    serialiseCommands(deriveAdminCommands()),
    'src/cli/admin-commands.json is stale: run npm run cli:commands',
  );
});

test('every admin route has exactly one admin command, and no two commands share a name', () => {
  const routes = allAdminRoutes.map((r) => `${r.method} ${r.url}`).sort();
  const commands = ADMIN_COMMANDS.map((c) => `${c.method} ${c.route}`).sort();
  assert.deepEqual(commands, routes);
  const names = ADMIN_COMMANDS.map((c) => `${c.resource} ${c.action}`);
  assert.deepEqual(
    names.filter((name, i) => names.indexOf(name) !== i),
    [],
  );
});

interface JsonSchema {
  type?: string | string[];
  anyOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
}

/** The object a possibly nullable object schema describes, if it is one. */
function objectOf(schema: JsonSchema | undefined): JsonSchema | undefined {
  const inner = schema?.anyOf?.find((b) => b.type !== 'null') ?? schema;
  return inner?.properties ? inner : undefined;
}

/** Every leaf field of an object schema by dotted path, required only if required all the way down. */
function leafFields(
  schema: JsonSchema | undefined,
  prefix = '',
  parentRequired = true,
): Map<string, boolean> {
  const fields = new Map<string, boolean>();
  for (const [name, field] of Object.entries(schema?.properties ?? {})) {
    const required = parentRequired && (schema?.required ?? []).includes(name);
    const nested = objectOf(field);
    if (nested) for (const [p, r] of leafFields(nested, `${prefix}${name}.`, required)) fields.set(p, r);
    else fields.set(`${prefix}${name}`, required);
  }
  return fields;
}

test("each command's flags are its route's fields: path, query and body, required where the schema requires them", () => {
  for (const route of allAdminRoutes) {
    const command = ADMIN_COMMANDS.find((c) => c.method === route.method && c.route === route.url)!;
    const label = `admin ${command.resource} ${command.action}`;
    const params = [...route.url.matchAll(/:(\w+)/g)].map((m) => m[1]!);
    assert.equal(command.target?.param, params[0], label);
    const expected = new Map<string, boolean>([
      ...params.slice(1).map((p): [string, boolean] => [`path ${p}`, true]),
      ...[...leafFields(route.querystring)].map(([p, r]): [string, boolean] => [`query ${p}`, r]),
      ...[...leafFields(route.body)].map(([p, r]): [string, boolean] => [`body ${p}`, r]),
    ]);
    const flags = new Map(
      command.flags.map((f): [string, boolean] => [
        `${Object.keys(f.to)[0]} ${Object.values(f.to)[0]}`,
        f.required,
      ]),
    );
    assert.deepEqual(flags, expected, label);
    assert.equal(command.sendsBody, route.body !== undefined, label);
    assert.equal(new Set(command.flags.map((f) => f.flag)).size, command.flags.length, label);
  }
  // Spot checks of the kinds and of the flag names the README uses.
  const flag = (resource: string, action: string, name: string) =>
    ADMIN_COMMANDS.find((c) => c.resource === resource && c.action === action)?.flags.find(
      (f) => f.flag === name,
    );
  assert.equal(flag('clients', 'create', 'permissions')?.kind, 'list');
  assert.equal(flag('clients', 'create', 'rate-limit-per-minute')?.kind, 'integer');
  assert.equal(flag('practices', 'integrations', 'enabled')?.kind, 'boolean');
  assert.deepEqual(flag('practitioners', 'create', 'condition-system')?.to, {
    body: 'defaultSystems.condition',
  });
  assert.deepEqual(flag('webhooks', 'create', 'webhook-url')?.to, { body: 'url' });
  assert.deepEqual(flag('payments', 'record', 'invoice')?.to, { body: 'invoiceId' });
  assert.deepEqual(flag('invoices', 'write-off', 'invoice')?.to, { path: 'invoiceId' });
  assert.deepEqual(flag('invoices', 'list', 'claim-status')?.to, { query: 'claimStatus' });
});

test('every POST command sends an Idempotency-Key, required on those that move money', () => {
  const keyOf = (resource: string, action: string) =>
    ADMIN_COMMANDS.find((c) => c.resource === resource && c.action === action)?.idempotencyKey;
  for (const command of ADMIN_COMMANDS) {
    const label = `admin ${command.resource} ${command.action}`;
    if (command.method === 'POST') assert.ok(command.idempotencyKey, label);
    else assert.equal(command.idempotencyKey, undefined, label);
  }
  assert.equal(keyOf('payments', 'record'), 'required');
  assert.equal(keyOf('invoices', 'write-off'), 'required');
  assert.equal(keyOf('invoices', 'cancel'), 'optional');
  assert.equal(keyOf('keys', 'create'), 'optional');
});

/** A small admin route declared here, as a capability folder declares one: the CLI knows nothing of it. */
function gadgetRoute(body: TSchema): AnyAdminRoute {
  return defineAdminRoute({
    method: 'POST',
    url: '/practices/:practiceId/gadgets/:gadgetId/tune',
    operationId: 'adminTuneGadget',
    cli: { command: 'gadgets tune', flags: { url: 'gadget-url' } },
    summary: 'Tune a gadget',
    params: Type.Object({ practiceId: Type.String(), gadgetId: Type.String() }),
    querystring: Type.Object({ dryRun: Type.Optional(Type.Boolean()) }),
    body,
    successStatus: 200,
    response: Type.Object({}),
    handler: async () => ({ body: {} }),
  });
}

test("a field added to a route's schema is a flag of its command, with no change to the CLI", () => {
  const route = gadgetRoute(
    Type.Object({
      url: Type.String(),
      volume: Type.Integer({ minimum: 0, maximum: 11, description: 'How loud.' }),
      ratio: Type.Optional(Type.Number()),
      tags: Type.Optional(Type.Array(Type.String())),
      settings: Type.Optional(
        Type.Object({
          mode: Type.Union([Type.Literal('eco'), Type.Literal('boost')]),
          nightLight: Type.Boolean(),
        }),
      ),
      steps: Type.Optional(Type.Array(Type.Object({ at: Type.Integer() }))),
    }),
  );
  const command = commandOf(route);
  assert.equal(`${command.resource} ${command.action}`, 'gadgets tune');
  assert.deepEqual(command.target, { param: 'practiceId', flag: 'practice' });
  assert.deepEqual(
    command.flags.map((f) => [f.flag, f.kind, f.required, f.to]),
    [
      ['gadget', 'text', true, { path: 'gadgetId' }],
      ['dry-run', 'boolean', false, { query: 'dryRun' }],
      ['gadget-url', 'text', true, { body: 'url' }],
      ['volume', 'integer', true, { body: 'volume' }],
      ['ratio', 'number', false, { body: 'ratio' }],
      ['tags', 'list', false, { body: 'tags' }],
      ['settings.mode', 'text', false, { body: 'settings.mode' }],
      ['settings.night-light', 'boolean', false, { body: 'settings.nightLight' }],
      ['steps', 'json', false, { body: 'steps' }],
    ],
  );
  assert.match(command.flags.find((f) => f.flag === 'volume')!.help, /How loud/);
  assert.match(command.flags.find((f) => f.flag === 'settings.mode')!.help, /one of: eco, boost/);
  assert.deepEqual(
    buildAdminRequest(command, 'org_1', {
      gadget: 'gdg/1',
      'dry-run': 'yes',
      'gadget-url': 'https://example.com',
      volume: '11',
      ratio: '0.5',
      tags: 'a, b',
      'settings.mode': 'eco',
      'settings.night-light': 'off',
      steps: '[{"at":1}]',
    }),
    {
      method: 'POST',
      path: '/practices/org_1/gadgets/gdg%2F1/tune',
      query: { dryRun: 'true' },
      body: {
        url: 'https://example.com',
        volume: 11,
        ratio: 0.5,
        tags: ['a', 'b'],
        settings: { mode: 'eco', nightLight: false },
        steps: [{ at: 1 }],
      },
    },
  );

  // A real route with one more field in its body: the new field is a flag, the others unchanged.
  const createClient = allAdminRoutes.find((r) => r.operationId === 'adminCreateClient')!;
  const widened: AnyAdminRoute = {
    ...createClient,
    body: Type.Object({
      ...createClient.body.properties,
      nickname: Type.Optional(Type.String({ description: 'What the front desk calls it.' })),
    }),
  };
  const before = commandOf(createClient);
  const after = commandOf(widened);
  assert.deepEqual(after.flags.slice(0, -1), before.flags);
  assert.deepEqual(after.flags.at(-1), {
    flag: 'nickname',
    kind: 'text',
    to: { body: 'nickname' },
    required: false,
    help: 'What the front desk calls it',
  });
});

test('a route whose field would take a flag already taken, or whose cli names no field, is refused', () => {
  const clash = {
    ...gadgetRoute(Type.Object({ url: Type.String() })),
    cli: { command: 'gadgets tune' as const },
  };
  assert.throws(() => commandOf(clash), /--url is taken .*rename the field in cli\.flags/);
  const twice = gadgetRoute(Type.Object({ url: Type.String(), gadgetUrl: Type.String() }));
  assert.throws(() => commandOf(twice), /--gadget-url is taken/);
  assert.throws(
    () => commandOf(gadgetRoute(Type.Object({ name: Type.String() }))),
    /cli\.flags names no field: url/,
  );
});

test('help prints the usage; no command or an unknown one is a usage error (exit 2)', async () => {
  const env = childEnv();
  const help = await cli(['help'], env);
  assert.equal(help.code, 0, help.stderr);
  assert.match(help.stdout, /Usage: practice-billing <command>/);
  for (const name of ['start', 'serve', 'worker', 'migrate', 'admin'])
    assert.match(help.stdout, new RegExp(name));

  const adminHelp = await cli(['admin', 'help'], env);
  assert.equal(adminHelp.code, 0);
  for (const command of ADMIN_COMMANDS) {
    assert.ok(adminHelp.stdout.includes(`admin ${command.resource} ${command.action}`), command.action);
  }

  for (const args of [[], ['frobnicate'], ['start', '--port', '1'], ['admin'], ['admin', 'practices']]) {
    const refused = await cli(args, env);
    assert.equal(refused.code, 2, `${args.join(' ')}: ${refused.stderr}`);
    assert.match(refused.stderr, /Usage: practice-billing|Admin commands/);
    assert.equal(refused.stdout, '');
  }
});

// Run with --import: notes each package the process loads and names them on stderr as it exits.
const LOAD_RECORDER = `import fs from 'node:fs';
import { registerHooks } from 'node:module';
const loaded = new Set();
registerHooks({
  resolve(specifier, context, next) {
    const resolved = next(specifier, context);
    const name = /node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(resolved.url)?.[1];
    if (name) loaded.add(name);
    return resolved;
  },
});
process.on('exit', () => fs.writeSync(2, '@@loaded ' + [...loaded].join(' ') + '\\n'));
`;

test('an admin command starts from its catalogue: no route module, Fastify or database driver loads', async () => {
  const recorder = path.join(scratchDir('loads'), 'record-loads.mjs');
  fs.writeFileSync(recorder, LOAD_RECORDER);
  const result = await run(
    NODE,
    ['--import', recorder, BIN, 'admin', 'clients', 'create', '--help'],
    childEnv(),
  );
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /--rate-limit-per-minute/);
  const loaded = /^@@loaded (.*)$/m.exec(result.stderr)?.[1]?.split(' ') ?? [];
  for (const name of ['fastify', 'pg', '@electric-sql/pglite', 'proper-lockfile', 'kysely', 'typebox']) {
    assert.equal(loaded.includes(name), false, `${name} was loaded: ${loaded.join(' ')}`);
  }
});

test('serve and worker alone are refused on the embedded database', async () => {
  for (const command of ['serve', 'worker']) {
    const refused = await cli([command], childEnv({ DATA_DIR: scratchDir('alone') }));
    assert.equal(refused.code, 1, refused.stderr);
    assert.match(refused.stderr, /embedded database is used by one process only/);
  }
});

test('the bin runs on an older Node through the Node 24 the project installs', async (t) => {
  // The machine's own node, outside node_modules, if it is older than 24.
  const dirs = (process.env.PATH ?? '').split(path.delimiter).filter((d) => d && !d.includes('node_modules'));
  const older = dirs
    .map((d) => path.join(d, 'node'))
    .find((file) => {
      try {
        fs.accessSync(file, fs.constants.X_OK);
        return true;
      } catch {
        return false;
      }
    });
  const version = older ? (await run(older, ['--version'], childEnv())).stdout.trim() : '';
  if (!older || Number(version.replace(/^v/, '').split('.')[0]) >= 24) {
    t.skip('no Node older than 24 on PATH');
    return;
  }
  const help = await run(older, [BIN, 'help'], childEnv());
  assert.equal(help.code, 0, help.stderr);
  assert.match(help.stdout, /^Usage: practice-billing <command>/);
});

describe('admin commands against a running server', () => {
  let server: ServiceProcess;
  let dataDir: string;
  let env: NodeJS.ProcessEnv;
  let adminToken: string;

  before(async () => {
    dataDir = scratchDir('cli');
    server = await startServiceProcess({ dataDir, port: await freePort() });
    assert.match(server.stdout(), /Demo API key/, server.stderr());
    adminToken = sandboxBanner(server.stdout()).adminToken;
    // The token comes from DATA_DIR/sandbox-credentials.json, the server from PORT.
    env = childEnv({ DATA_DIR: dataDir, PORT: String(server.port) });
  });
  after(async () => {
    await server?.stop('SIGTERM');
  });

  test('creates a practice, a client and a key, and the key works', async () => {
    const practice = await cli(['admin', 'practices', 'create', '--name', 'CLI Practice'], env);
    assert.equal(practice.code, 0, practice.stderr + practice.stdout);
    const practiceBody = json(practice.stdout);
    assert.equal(practiceBody.object, 'practice');
    assert.equal(practiceBody.currency, 'ZAR');
    const practiceId: string = practiceBody.id;

    const practitioner = await cli(
      ['admin', 'practitioners', 'create', practiceId, '--name', 'Dr CLI', '--condition-system', 'urn:x:c'],
      env,
    );
    assert.equal(practitioner.code, 0, practitioner.stdout);
    assert.deepEqual(json(practitioner.stdout).defaultSystems, {
      condition: 'urn:x:c',
      procedure: 'urn:service:codesystem:tariff',
    });

    // URL and token from the environment, the practice as a flag.
    const client = await cli(
      [
        'admin',
        'clients',
        'create',
        '--practice',
        practiceId,
        '--name',
        'CLI client',
        '--permissions',
        'PATIENTS:READ, PATIENTS:CREATE',
        '--allowed-ips',
        '127.0.0.1,::1',
        '--rate-limit-per-minute',
        '600',
      ],
      childEnv({ PRACTICE_BILLING_URL: server.baseUrl, ADMIN_TOKEN: adminToken }),
    );
    assert.equal(client.code, 0, client.stdout);
    const clientBody = json(client.stdout);
    assert.deepEqual(clientBody.permissions, ['PATIENTS:READ', 'PATIENTS:CREATE']);
    assert.deepEqual(clientBody.allowedIps, ['127.0.0.1', '::1']);
    assert.equal(clientBody.rateLimitPerMinute, 600);

    const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    const key = await cli(
      [
        'admin',
        'keys',
        'create',
        clientBody.id,
        '--expires-at',
        expiresAt,
        '--url',
        server.baseUrl,
        '--token',
        adminToken,
      ],
      childEnv(),
    );
    assert.equal(key.code, 0, key.stdout);
    const keyBody = json(key.stdout);
    assert.match(keyBody.key, /^pbk_/);
    assert.equal(keyBody.expiresAt, expiresAt);

    const callApi = () =>
      fetch(`${server.baseUrl}/api/v1/patients?externalSystem=a&externalId=b`, {
        headers: { authorization: `Bearer ${keyBody.key}` },
      });
    assert.equal((await callApi()).status, 200);

    const keys = await cli(['admin', 'keys', 'list', clientBody.id], env);
    assert.equal(keys.code, 0);
    assert.equal(keys.stdout.includes(keyBody.key), false);
    assert.equal(json(keys.stdout).data[0].id, keyBody.id);

    const listed = await cli(['admin', 'clients', 'list', practiceId], env);
    assert.deepEqual(
      json(listed.stdout).data.map((c: { id: string }) => c.id),
      [clientBody.id],
    );

    const revoked = await cli(['admin', 'keys', 'revoke', keyBody.id], env);
    assert.equal(revoked.code, 0, revoked.stdout);
    assert.equal((await callApi()).status, 401);
  });

  test("writes an invoice's balance off with the README's command, and refuses it twice", async () => {
    const banner = sandboxBanner(server.stdout());
    const practitionerId = /practitioner +(prt_\S+)/.exec(server.stdout())?.[1];
    assert.ok(practitionerId, server.stdout());
    const api = async (method: string, url: string, body?: unknown) => {
      const answer = await fetch(`${server.baseUrl}/api/v1${url}`, {
        method,
        headers: {
          authorization: `Bearer ${banner.apiKey}`,
          'content-type': 'application/json',
          'idempotency-key': randomBytes(8).toString('hex'),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const json = (await answer.json()) as Record<string, unknown>;
      assert.ok(answer.status < 300, JSON.stringify(json));
      return json;
    };
    const patient = await api('POST', '/patients', {
      givenNames: ['Thandi'],
      lastName: 'Nkosi',
      birthDate: '1985-05-05',
    });
    const end = Date.now() - 3_600_000;
    const visit = await api('POST', '/encounters', {
      patientId: patient.id,
      practitionerId,
      start: new Date(end - 1_200_000).toISOString(),
      end: new Date(end).toISOString(),
      diagnoses: [{ code: 'J06.9' }],
      procedures: [{ code: '0190' }],
    });
    const billed = (await api('POST', `/encounters/${visit.id}/bill`, { issue: true })) as {
      invoice: { id: string; status: string; balanceDue: number };
    };
    assert.equal(billed.invoice.status, 'issued');

    const args = ['admin', 'invoices', 'write-off', banner.practiceId, '--invoice', billed.invoice.id];
    const retried = [...args, '--reason', 'Patient emigrated', '--idempotency-key', 'write-off-thandi-1'];
    const written = await cli(retried, env);
    assert.equal(written.code, 0, written.stderr + written.stdout);
    const invoice = json(written.stdout);
    assert.equal(invoice.status, 'written_off');
    assert.equal(invoice.balanceDue, 0, 'a written-off invoice owes nothing');
    assert.equal(invoice.amountWrittenOff, billed.invoice.balanceDue);
    // The same command retried with its key replays the first answer.
    const replayed = await cli(retried, env);
    assert.equal(replayed.code, 0, replayed.stderr + replayed.stdout);
    assert.deepEqual(json(replayed.stdout), invoice);
    const again = await cli([...args, '--reason', 'again'], env);
    assert.equal(again.code, 1, again.stdout);
    assert.equal(json(again.stdout).code, 'business_rule');
    const noReason = await cli(args, env);
    assert.equal(noReason.code, 2);
    assert.match(noReason.stderr, /--reason is required/);
  });

  test('replaces, suspends and resumes a client and toggles the add-on', async () => {
    const practiceId = json((await cli(['admin', 'practices', 'create', '--name', 'P2'], env)).stdout).id;
    const created = await cli(
      [
        'admin',
        'clients',
        'create',
        practiceId,
        '--name',
        'C',
        '--permissions',
        'PATIENTS:READ',
        '--allowed-ips',
        '10.0.0.0/8',
      ],
      env,
    );
    const clientId = json(created.stdout).id;

    const replaced = await cli(
      ['admin', 'clients', 'replace', clientId, '--name', 'C2', '--permissions', ''],
      env,
    );
    assert.equal(replaced.code, 0, replaced.stdout);
    const replacedBody = json(replaced.stdout);
    assert.equal(replacedBody.name, 'C2');
    assert.deepEqual(replacedBody.permissions, []);
    assert.deepEqual(replacedBody.allowedIps, []);

    const suspended = await cli(['admin', 'clients', 'suspend', clientId], env);
    assert.equal(json(suspended.stdout).status, 'suspended');
    const resumed = await cli(['admin', 'clients', 'resume', clientId], env);
    assert.equal(json(resumed.stdout).status, 'active');
    const read = await cli(['admin', 'clients', 'get', clientId], env);
    assert.equal(json(read.stdout).status, 'active');

    const off = await cli(['admin', 'practices', 'integrations', practiceId, '--enabled', 'false'], env);
    assert.equal(off.code, 0, off.stdout);
    assert.equal(json(off.stdout).integrationsEnabled, false);
    const got = await cli(['admin', 'practices', 'get', practiceId], env);
    assert.equal(json(got.stdout).integrationsEnabled, false);

    const page = await cli(['admin', 'audit', 'list', practiceId, '--limit', '2'], env);
    assert.equal(page.code, 0, page.stdout);
    const pageBody = json(page.stdout);
    assert.equal(pageBody.data.length, 2);
    assert.equal(pageBody.hasMore, true);
    const next = await cli(
      ['admin', 'audit', 'list', practiceId, '--limit', '2', '--cursor', pageBody.nextCursor],
      env,
    );
    assert.equal(next.code, 0, next.stdout);
    assert.notEqual(json(next.stdout).data[0].id, pageBody.data[0].id);
  });

  test('a Problem answer is printed as JSON on stdout with exit 1', async () => {
    const missing = await cli(['admin', 'practices', 'get', 'org_doesnotexist'], env);
    assert.equal(missing.code, 1);
    const problem = json(missing.stdout);
    assert.equal(problem.status, 404);
    assert.equal(problem.code, 'not_found');

    const practiceId = json((await cli(['admin', 'practices', 'create', '--name', 'P3'], env)).stdout).id;
    const invalid = await cli(
      [
        'admin',
        'clients',
        'create',
        practiceId,
        '--name',
        'C',
        '--permissions',
        'PATIENTS:FLY',
        '--allowed-ips',
        'nowhere',
      ],
      env,
    );
    assert.equal(invalid.code, 1);
    assert.deepEqual(
      json(invalid.stdout)
        .errors.map((e: { field: string }) => e.field)
        .sort(),
      ['allowedIps.0', 'permissions.0'],
      'both wrong fields: the address rule is the schema pattern, judged with the rest',
    );

    const wrongToken = await cli(['admin', 'practices', 'list', '--token', 'adm_wrong'], env);
    assert.equal(wrongToken.code, 1);
    assert.equal(json(wrongToken.stdout).status, 401);
  });

  test('usage mistakes exit 2 with the usage, before calling the server', async () => {
    const cases = [
      ['admin', 'practices', 'create'],
      ['admin', 'practices', 'fly'],
      ['admin', 'planets', 'list'],
      ['admin', 'practices', 'get'],
      ['admin', 'practices', 'get', 'org_a', 'org_b'],
      ['admin', 'practices', 'list', '--bogus'],
      ['admin', 'practices', 'integrations', 'org_a', '--enabled', 'maybe'],
      [
        'admin',
        'clients',
        'create',
        'org_a',
        '--name',
        'C',
        '--permissions',
        'PATIENTS:READ',
        '--rate-limit-per-minute',
        'lots',
      ],
      ['admin', 'clients', 'create', 'org_a', '--name', 'C'],
      ['admin', 'practices', 'create', '--name', 'P', '--idempotency-key', ''],
      ['admin', 'practices', 'list', '--idempotency-key', 'k'],
    ];
    for (const args of cases) {
      const refused = await cli(args, env);
      assert.equal(refused.code, 2, `${args.join(' ')}: ${refused.stdout}${refused.stderr}`);
      assert.match(refused.stderr, /^practice-billing: /);
      assert.match(refused.stderr, /Usage: practice-billing admin|Admin commands/);
      assert.equal(refused.stdout, '');
    }
    const help = await cli(['admin', 'clients', 'create', '--help'], env);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /--rate-limit-per-minute/);
  });

  test('no admin token to be found is a usage error; an unreachable server exits 1', async () => {
    const noToken = await cli(['admin', 'practices', 'list'], childEnv({ DATA_DIR: scratchDir('empty') }));
    assert.equal(noToken.code, 2);
    assert.match(noToken.stderr, /No admin token/);

    const closedPort = await freePort();
    const unreachable = await cli(
      ['admin', 'practices', 'list', '--url', `http://127.0.0.1:${closedPort}`],
      env,
    );
    assert.equal(unreachable.code, 1);
    assert.match(unreachable.stderr, /Cannot reach the server/);
    assert.doesNotMatch(unreachable.stderr, /--idempotency-key/);
    // A command that acts says how to retry it without acting twice: with the key it sent.
    const acting = await cli(
      ['admin', 'practices', 'create', '--name', 'X', '--url', `http://127.0.0.1:${closedPort}`],
      env,
    );
    assert.equal(acting.code, 1);
    assert.match(acting.stderr, /run it again with --idempotency-key cli_[0-9a-f-]{36}\n/);
  });

  test('migrate refuses the data directory while the server holds it', async () => {
    const refused = await cli(['migrate'], env);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /in use by another process/);
    // The server is unharmed.
    const listed = await cli(['admin', 'practices', 'list'], env);
    assert.equal(listed.code, 0, listed.stdout);
  });
});

test('migrate on a fresh embedded data directory prints the migrations it applied', async () => {
  const dataDir = scratchDir('migrate');
  const env = childEnv({ DATA_DIR: dataDir });
  const first = await cli(['migrate'], env, 120_000);
  assert.equal(first.code, 0, first.stderr);
  assert.deepEqual(json(first.stdout), { database: 'embedded', applied: MIGRATION_NAMES });
  const again = await cli(['migrate'], env, 120_000);
  assert.equal(again.code, 0, again.stderr);
  assert.deepEqual(json(again.stdout), { database: 'embedded', applied: [] });
});

test('migrate on a fresh PostgreSQL database prints the migrations it applied', {
  skip: process.env.DATABASE_URL ? false : 'set DATABASE_URL to run it',
}, async () => {
  const database = await emptyPostgresDatabase('pb_cli');
  try {
    const env = childEnv({ DATABASE_URL: database.url });
    const first = await cli(['migrate'], env);
    assert.equal(first.code, 0, first.stderr);
    assert.deepEqual(json(first.stdout), { database: 'postgres', applied: MIGRATION_NAMES });
    const again = await cli(['migrate'], env);
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(json(again.stdout), { database: 'postgres', applied: [] });

    const check = new pg.Client({ connectionString: database.url });
    await check.connect();
    try {
      const rows = await check.query('SELECT name FROM kysely_migration ORDER BY name');
      assert.deepEqual(
        rows.rows.map((r: { name: string }) => r.name),
        MIGRATION_NAMES,
      );
    } finally {
      await check.end();
    }
  } finally {
    await database.drop();
  }
});
