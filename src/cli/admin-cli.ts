// Owns `practice-billing admin <resource> <action> [id] [--flags]`: reads the arguments, calls the
// running server's admin API and prints its JSON answer. Exit code 0 on 2xx, 1 on a Problem (printed
// to stdout) or an unreachable server, 2 on a usage mistake.
import { randomUUID } from 'node:crypto';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import {
  AdminClient,
  AdminConnectionError,
  resolveAdminConnection,
  ServerUnreachableError,
} from './admin-client.ts';
import { ADMIN_COMMANDS, buildAdminRequest, findCommand } from './admin-commands.ts';
import { type AdminCommand, type FlagSpec, IDEMPOTENCY_KEY_FLAG, UsageError } from './command.ts';

export interface CliOutput {
  stdout(text: string): void;
  stderr(text: string): void;
}

const CONNECTION_HELP = [
  'Connection (every admin command):',
  '  --url <url>      server base URL (else PRACTICE_BILLING_URL, PUBLIC_BASE_URL, http://127.0.0.1:$PORT)',
  '  --token <token>  admin token (else ADMIN_TOKEN, else the embedded sandbox token in $DATA_DIR)',
];

function placeholder(flag: FlagSpec): string {
  if (flag.kind === 'list') return '<a,b,...>';
  if (flag.kind === 'integer' || flag.kind === 'number') return '<n>';
  if (flag.kind === 'boolean') return '<true|false>';
  if (flag.kind === 'json') return '<json>';
  // The field's own name: `--invoice <invoiceId>`, `--webhook-url <url>`.
  const field = Object.values(flag.to)[0] as string;
  return `<${field.replace(/.*\./, '')}>`;
}

function commandLine(command: AdminCommand): string {
  const target = command.target ? ` <${command.target.param}>` : '';
  const flags = command.flags.map((f) =>
    f.required ? ` --${f.flag} ${placeholder(f)}` : ` [--${f.flag} ${placeholder(f)}]`,
  );
  return `practice-billing admin ${command.resource} ${command.action}${target}${flags.join('')}`;
}

export function adminUsage(resource?: string): string {
  const commands = ADMIN_COMMANDS.filter((c) => resource === undefined || c.resource === resource);
  // Grouped by resource, in the order the resources first appear in the route list.
  const resources = [...new Set(commands.map((c) => c.resource))];
  const lines = ['Admin commands (call the admin API of a running server):', ''];
  for (const name of resources) {
    for (const command of commands.filter((c) => c.resource === name)) {
      lines.push(`  ${commandLine(command)}`, `      ${command.summary}`);
    }
  }
  return [...lines, '', ...CONNECTION_HELP, ''].join('\n');
}

function commandUsage(command: AdminCommand): string {
  const lines = [`Usage: ${commandLine(command)}`, '', command.summary];
  if (command.description) lines.push(command.description.replace(/`/g, ''));
  if (command.target) {
    const { param, flag } = command.target;
    lines.push('', `  <${param}>  also accepted as --${flag} <id>`);
  }
  if (command.flags.length > 0 || command.idempotencyKey) {
    lines.push('', 'Flags:');
    for (const flag of command.flags) {
      const help = [flag.required ? 'required' : '', flag.help].filter((part) => part !== '').join('; ');
      lines.push(`  --${flag.flag.padEnd(24)} ${help}`);
    }
    if (command.idempotencyKey) {
      lines.push(
        `  --${IDEMPOTENCY_KEY_FLAG.padEnd(24)} Idempotency-Key, up to 255 characters; default a fresh one per run. Retry with the key printed on failure: the request then takes effect at most once`,
      );
    }
  }
  return [...lines, '', ...CONNECTION_HELP, ''].join('\n');
}

function usageError(output: CliOutput, message: string, usage: string): number {
  output.stderr(`practice-billing: ${message}\n\n${usage}`);
  return 2;
}

/** The command's Idempotency-Key: the one given, else a fresh one for this run. */
function keyOf(given: string | undefined): string {
  if (given === undefined) return `cli_${randomUUID()}`;
  if (given === '' || given.length > 255) {
    throw new UsageError(`--${IDEMPOTENCY_KEY_FLAG} must be 1 to 255 characters.`);
  }
  return given;
}

/** After an answer that may not be final, how to retry the same request without doing it twice. */
function retryHint(output: CliOutput, idempotencyKey: string | undefined): void {
  if (!idempotencyKey) return;
  output.stderr(
    `practice-billing: to retry this same request (it takes effect at most once), run it again with --${IDEMPOTENCY_KEY_FLAG} ${idempotencyKey}\n`,
  );
}

export async function runAdmin(args: string[], env: NodeJS.ProcessEnv, output: CliOutput): Promise<number> {
  const command = chosenCommand(args, output);
  if (typeof command === 'number') return command;
  const options = optionsOf(command);
  let idempotencyKey: string | undefined;

  try {
    const parsed = parseArgs({ args: args.slice(2), options, allowPositionals: true, strict: true });
    const values = parsed.values as Record<string, string | boolean | undefined>;
    if (values.help) {
      output.stdout(commandUsage(command));
      return 0;
    }
    const strings = Object.fromEntries(
      Object.entries(values).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
    );
    const positionals = parsed.positionals;
    if (positionals.length > (command.target ? 1 : 0)) {
      throw new UsageError(`unexpected argument "${positionals[command.target ? 1 : 0]}".`);
    }
    const flagId = command.target ? strings[command.target.flag] : undefined;
    if (positionals[0] !== undefined && flagId !== undefined && positionals[0] !== flagId) {
      throw new UsageError(`the ${command.target?.flag} id is given twice, differently.`);
    }
    const request = buildAdminRequest(command, positionals[0] ?? flagId, strings);
    idempotencyKey = command.idempotencyKey ? keyOf(strings[IDEMPOTENCY_KEY_FLAG]) : undefined;
    const client = new AdminClient(resolveAdminConnection({ url: strings.url, token: strings.token }, env));
    const answer = await client.request({ ...request, ...(idempotencyKey ? { idempotencyKey } : {}) });
    output.stdout(
      answer.body === undefined ? `${answer.text}\n` : `${JSON.stringify(answer.body, null, 2)}\n`,
    );
    if (answer.status === 409 || answer.status >= 500) retryHint(output, idempotencyKey);
    return answer.status >= 200 && answer.status < 300 ? 0 : 1;
  } catch (error) {
    return failed(output, command, error, idempotencyKey);
  }
}

/** The command the first two arguments name; else the exit code, once usage or help is written. */
function chosenCommand(args: string[], output: CliOutput): AdminCommand | number {
  const [resource, action] = args;
  const wantsHelp = (value: string | undefined) => value === '--help' || value === '-h' || value === 'help';
  if (resource === undefined || wantsHelp(resource)) {
    if (resource === undefined)
      return usageError(output, 'admin needs a resource and an action.', adminUsage());
    output.stdout(adminUsage());
    return 0;
  }
  if (!ADMIN_COMMANDS.some((c) => c.resource === resource)) {
    return usageError(output, `unknown admin resource "${resource}".`, adminUsage());
  }
  if (action === undefined || wantsHelp(action)) {
    if (action === undefined)
      return usageError(output, `admin ${resource} needs an action.`, adminUsage(resource));
    output.stdout(adminUsage(resource));
    return 0;
  }
  return (
    findCommand(resource, action) ??
    usageError(output, `unknown action "${action}" for ${resource}.`, adminUsage(resource))
  );
}

/** The flags a command takes, with the connection's and help. */
function optionsOf(command: AdminCommand): NonNullable<ParseArgsConfig['options']> {
  const options: NonNullable<ParseArgsConfig['options']> = {
    url: { type: 'string' },
    token: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  };
  for (const flag of command.flags) options[flag.flag] = { type: 'string' };
  if (command.target) options[command.target.flag] = { type: 'string' };
  if (command.idempotencyKey) options[IDEMPOTENCY_KEY_FLAG] = { type: 'string' };
  return options;
}

/** The exit code for a command that failed, once its error is written; other errors are thrown on. */
function failed(
  output: CliOutput,
  command: AdminCommand,
  error: unknown,
  idempotencyKey: string | undefined,
): number {
  if (error instanceof UsageError) return usageError(output, error.message, commandUsage(command));
  if (error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS')) {
    return usageError(output, error.message, commandUsage(command));
  }
  if (error instanceof AdminConnectionError) {
    output.stderr(`practice-billing: ${error.message}\n`);
    return 2;
  }
  if (error instanceof ServerUnreachableError) {
    output.stderr(`practice-billing: ${error.message}\n`);
    retryHint(output, idempotencyKey);
    return 1;
  }
  throw error;
}
