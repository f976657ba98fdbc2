// Owns the catalogue of `practice-billing admin <resource> <action>` commands, one for each admin route,
// and how a command's arguments become the HTTP request: the path, the query and the JSON body. The
// catalogue is read from admin-commands.json, which `npm run cli:commands` derives from the admin
// route declarations (src/cli/derive-commands.ts; a test fails while it differs), so that a command
// starts without loading the routes and the capabilities behind them.
import fs from 'node:fs';
import type { AdminRequest } from './admin-client.ts';
import { type AdminCommand, type FlagSpec, UsageError } from './command.ts';

export const ADMIN_COMMANDS_FILE = new URL('./admin-commands.json', import.meta.url);

export const ADMIN_COMMANDS: AdminCommand[] = JSON.parse(fs.readFileSync(ADMIN_COMMANDS_FILE, 'utf8'));

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
    case 'number':
      if (raw.trim() === '' || !Number.isFinite(Number(raw)))
        throw new UsageError(`--${spec.flag} must be a number, got "${raw}".`);
      return Number(raw);
    case 'boolean': {
      const value = raw.trim().toLowerCase();
      if (['true', 'on', 'yes', '1'].includes(value)) return true;
      if (['false', 'off', 'no', '0'].includes(value)) return false;
      throw new UsageError(`--${spec.flag} must be true or false, got "${raw}".`);
    }
    case 'json':
      try {
        return JSON.parse(raw);
      } catch {
        throw new UsageError(`--${spec.flag} must be JSON, got "${raw}".`);
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

/** A value as a query parameter or path segment carries it. */
function asText(value: unknown): string {
  if (Array.isArray(value)) return value.join(',');
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
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
      throw new UsageError(
        `Give the ${command.target.flag} id, after the action or as --${command.target.flag} <id>.`,
      );
    }
    path = path.replace(`:${command.target.param}`, encodeURIComponent(targetId));
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
    if ('query' in spec.to) query[spec.to.query] = asText(value);
    else if ('path' in spec.to) path = path.replace(`:${spec.to.path}`, encodeURIComponent(asText(value)));
    else setPath(body, spec.to.body, value);
  }
  return {
    method: command.method,
    path,
    ...(Object.keys(query).length > 0 ? { query } : {}),
    ...(command.sendsBody ? { body } : {}),
  };
}
