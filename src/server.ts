// Owns running the service as a process: open and migrate the database, start the HTTP API and/or the
// background worker, print how to try the sandbox, and shut down cleanly on SIGINT/SIGTERM.
import pino from 'pino';
import { ensureSandbox } from './admin/sandbox.ts';
import { buildApp, loggerOptions } from './app.ts';
import { buildDeps, migrateConfigured, openConfiguredDatabase } from './bootstrap.ts';
import { type Config, ConfigError } from './config.ts';
import { startWorker, type Worker } from './jobs/worker.ts';

export interface RunOptions {
  api: boolean;
  worker: boolean;
}

export async function runService(config: Config, options: RunOptions): Promise<void> {
  const log = pino(loggerOptions(config.logLevel) as pino.LoggerOptions);
  if (config.databaseUrl && options.api && !config.adminToken) {
    throw new ConfigError('ADMIN_TOKEN must be set when DATABASE_URL is set (the admin API needs it).');
  }
  if (!config.databaseUrl && options.api !== options.worker) {
    throw new ConfigError(
      'The embedded database is used by one process only: run `practice-billing start` (API and worker together), or set DATABASE_URL.',
    );
  }
  const db = await openConfiguredDatabase(config);
  await migrateConfigured(config, db);
  const deps = await buildDeps(config, db);

  let adminToken = config.adminToken;
  let sandbox: Awaited<ReturnType<typeof ensureSandbox>> | undefined;
  if (db.kind === 'pglite') {
    sandbox = await ensureSandbox(db, config.dataDir, config.adminToken);
    adminToken = sandbox.adminToken;
  }

  const app = options.api ? await buildApp(deps, { logger: log, adminToken }) : undefined;
  const worker: Worker | undefined = options.worker ? startWorker(db, log) : undefined;
  if (app) {
    await app.listen({ port: config.port, host: config.host });
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    const base = config.publicBaseUrl.replace(/:\d+$/, `:${port}`);
    if (sandbox) printSandbox(base, config, sandbox);
  }

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    await app?.close();
    await worker?.stop();
    await db.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

function printSandbox(
  base: string,
  config: Config,
  sandbox: NonNullable<Awaited<ReturnType<typeof ensureSandbox>>>,
) {
  const lines = [
    '',
    'Practice Billing sandbox is running (embedded database; for trying out, not for production data).',
    `  API          ${base}/api/v1        docs ${base}/docs`,
    `  Data dir     ${config.dataDir}`,
    `  Admin token  ${sandbox.adminToken}${config.adminToken ? ' (from ADMIN_TOKEN)' : ''}`,
    `  Practice     ${sandbox.practiceId}   practitioner ${sandbox.practitionerId}`,
    `  Demo API key ${sandbox.apiKey}`,
    '',
    'Try:',
    `  curl -s -X POST ${base}/api/v1/patients \\`,
    `    -H 'Authorization: Bearer ${sandbox.apiKey}' -H 'Content-Type: application/json' \\`,
    `    -H "Idempotency-Key: $(date +%s%N)" \\`,
    `    -d '{"givenNames":["Lerato"],"lastName":"Dlamini","birthDate":"1990-02-28","externalId":{"system":"urn:demo:mrn","value":"1001"}}'`,
    '',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}
