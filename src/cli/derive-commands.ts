// Owns deriving the admin CLI's command catalogue from the admin route declarations (read as data: no
// database is opened) and serialising it as src/cli/admin-commands.json, which the CLI reads.
import { allAdminRoutes } from '../admin-routes.ts';
import { type AdminCommand, commandOf } from './command.ts';

export function deriveAdminCommands(): AdminCommand[] {
  return allAdminRoutes.map(commandOf);
}

export function serialiseCommands(commands: AdminCommand[]): string {
  return `${JSON.stringify(commands, null, 2)}\n`;
}
