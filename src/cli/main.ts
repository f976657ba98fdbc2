// Owns the `practice-billing` command line: running the service (start, serve, worker), migrating the
// configured database, and the operator's admin commands. Admin commands always go over HTTP to a
// running server: the CLI never opens the embedded data directory while a server holds it. The
// service's modules (Fastify, the database drivers) load only for the commands that run the service or
// migrate, and the admin route declarations (the admin commands are read off them) only for admin
// commands, so that help starts fast and admin commands load no database driver.
import type { CliOutput } from './admin-cli.ts';

export const USAGE = `Usage: practice-billing <command> [options]

Commands:
  start                 run the API and the background worker in one process (what npm start does)
  serve                 run the API only (needs DATABASE_URL: several processes share one PostgreSQL)
  worker                run the background worker only (needs DATABASE_URL)
  migrate               bring the configured database to the latest schema; prints the applied
                        migrations as JSON (refused while a server holds the embedded data directory)
  secrets re-encrypt    seal every stored secret again with SECRET_ENCRYPTION_KEY (after a rotation,
                        while SECRET_ENCRYPTION_PREVIOUS_KEYS still opens the old ones); prints
                        what it changed as JSON; safe to run twice and while the service runs
  admin <resource> <action> [id] [--flags]
                        call the admin API of a running server and print its JSON answer;
                        \`practice-billing admin help\` lists every admin command
  --version             print this build's version
  help                  print this text

Configuration is by environment: PORT (3000), HOST (127.0.0.1), DATABASE_URL (PostgreSQL; unset
means the embedded database in DATA_DIR, default ./data), MIGRATION_DATABASE_URL, ADMIN_TOKEN,
PUBLIC_BASE_URL, LOG_LEVEL, LOG_FORMAT (json or pretty), INSURER_DELAY_MS, METRICS_TOKEN,
METRICS_PORT, and OpenTelemetry's OTEL_* variables (docs/observability.md). Admin commands also read
PRACTICE_BILLING_URL.

Exit codes: 0 success, 1 failure (a Problem answer is printed to stdout), 2 usage mistake.
`;

const processOutput: CliOutput = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
};

/** What each command runs, and the name its traces carry unless OTEL_SERVICE_NAME gives one. */
const SERVICE_COMMANDS = {
  start: { api: true, worker: true, serviceName: 'practice-billing' },
  serve: { api: true, worker: false, serviceName: 'practice-billing-api' },
  worker: { api: false, worker: true, serviceName: 'practice-billing-worker' },
} as const;

function failure(output: CliOutput, error: unknown): number {
  output.stderr(`practice-billing: ${error instanceof Error ? error.message : String(error)}\n`);
  return 1;
}

async function migrate(env: NodeJS.ProcessEnv, output: CliOutput): Promise<number> {
  const { loadConfig } = await import('../platform/config.ts');
  const { migrateConfigured, openConfiguredDatabase, reachConfiguredDatabases } = await import(
    '../bootstrap.ts'
  );
  const config = loadConfig(env);
  await reachConfiguredDatabases(config, {
    warn: (message) => output.stderr(`practice-billing: ${message}\n`),
  });
  const db = await openConfiguredDatabase(config, 'practice-billing-migrate');
  try {
    const applied = await migrateConfigured(config, db);
    output.stdout(
      `${JSON.stringify({ database: db.kind === 'pglite' ? 'embedded' : 'postgres', applied }, null, 2)}\n`,
    );
    return 0;
  } finally {
    await db.close();
  }
}

async function reEncryptSecrets(env: NodeJS.ProcessEnv, output: CliOutput): Promise<number> {
  const { loadConfig } = await import('../platform/config.ts');
  const { openConfiguredDatabase, reachConfiguredDatabases, secretBoxFor } = await import('../bootstrap.ts');
  const { reEncrypt } = await import('../secrets/service.ts');
  const config = loadConfig(env);
  await reachConfiguredDatabases(config);
  const db = await openConfiguredDatabase(config, 'practice-billing-secrets');
  try {
    const box = secretBoxFor(config, db);
    if (!box) {
      output.stderr('practice-billing: secrets re-encrypt needs SECRET_ENCRYPTION_KEY (the new key).\n');
      return 1;
    }
    const report = await reEncrypt(db, box);
    output.stdout(`${JSON.stringify(report, null, 2)}\n`);
    const unopenable = report.webhookSecrets.unopenable + report.idempotentAnswers.unopenable;
    if (unopenable > 0) {
      output.stderr(
        `practice-billing: ${unopenable} stored secrets open with neither SECRET_ENCRYPTION_KEY nor SECRET_ENCRYPTION_PREVIOUS_KEYS; they were left as they are.\n`,
      );
      return 1;
    }
    return 0;
  } finally {
    await db.close();
  }
}

/**
 * Runs one command line. Resolves with the exit code; for start/serve/worker it resolves once the
 * service runs, and the process then lives until SIGINT/SIGTERM.
 */
export async function runCli(
  argv: string[],
  env: NodeJS.ProcessEnv,
  output: CliOutput = processOutput,
): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined) {
    output.stderr(`practice-billing: give a command.\n\n${USAGE}`);
    return 2;
  }
  if (command === '--version' || command === 'version') return printVersion(output);
  if (command === 'help' || command === '--help' || command === '-h') {
    output.stdout(USAGE);
    return 0;
  }
  if (command === 'admin') {
    // The admin commands are read off the admin route declarations: loaded only for them.
    const { runAdmin } = await import('./admin-cli.ts');
    return runAdmin(rest, env, output);
  }
  if (command === 'secrets') return runSecrets(rest, env, output);
  if (command !== 'migrate' && !(command in SERVICE_COMMANDS)) {
    output.stderr(`practice-billing: unknown command "${command}".\n\n${USAGE}`);
    return 2;
  }
  if (rest.some((arg) => arg === '--help' || arg === '-h')) {
    output.stdout(USAGE);
    return 0;
  }
  if (rest.length > 0) {
    output.stderr(
      `practice-billing: ${command} takes no arguments (configure it with environment variables).\n\n${USAGE}`,
    );
    return 2;
  }
  try {
    if (command === 'migrate') return await migrate(env, output);
    return await runServiceCommand(command as keyof typeof SERVICE_COMMANDS, env);
  } catch (error) {
    return failure(output, error);
  }
}

async function printVersion(output: CliOutput): Promise<number> {
  const { readFileSync } = await import('node:fs');
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  output.stdout(`practice-billing ${manifest.version}\n`);
  return 0;
}

async function runSecrets(rest: string[], env: NodeJS.ProcessEnv, output: CliOutput): Promise<number> {
  if (rest.length !== 1 || rest[0] !== 're-encrypt') {
    output.stderr(`practice-billing: the secrets command is \`secrets re-encrypt\`.\n\n${USAGE}`);
    return 2;
  }
  try {
    return await reEncryptSecrets(env, output);
  } catch (error) {
    return failure(output, error);
  }
}

/** Runs `serve`, `worker` or `start`, with tracing started before the service's modules load. */
async function runServiceCommand(
  command: keyof typeof SERVICE_COMMANDS,
  env: NodeJS.ProcessEnv,
): Promise<number> {
  const { loadConfig } = await import('../platform/config.ts');
  const config = loadConfig(env);
  const { startTracing } = await import('../platform/observability/tracing.ts');
  const service = SERVICE_COMMANDS[command];
  const tracing = await startTracing(config.tracing, service.serviceName);
  const { runService } = await import('../server.ts');
  await runService(config, { api: service.api, worker: service.worker, tracing });
  return 0;
}
