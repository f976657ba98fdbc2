// Owns the shape of an admin CLI command: the route it calls and how its flags fill the request.
import type { AdminRequest } from './admin-client.ts';

/** A mistake in how the command was written: the CLI prints it with the usage and exits 2. */
export class UsageError extends Error {}

export type FlagKind = 'text' | 'list' | 'integer' | 'boolean';

export interface FlagSpec {
  /** The flag without its dashes: `rate-limit-per-minute`. */
  flag: string;
  kind: FlagKind;
  /** Where the value goes: a dotted body field (`defaultSystems.condition`) or a query parameter. */
  to: { body: string } | { query: string } | { path: string };
  required?: boolean;
  help: string;
}

export type Target = 'practice' | 'client' | 'key';

export interface AdminCommand {
  resource: string;
  action: string;
  summary: string;
  method: AdminRequest['method'];
  /** The route under /admin/v1 exactly as routes.ts declares it. */
  route: string;
  /** The record the route names: given as the one positional argument, or as --practice/--client/--key. */
  target?: Target;
  /** Sends a JSON body built from the body flags (`{}` when none is given). */
  sendsBody?: boolean;
  flags: FlagSpec[];
}
