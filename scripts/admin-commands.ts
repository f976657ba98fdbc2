// Writes the admin CLI's command catalogue derived from the admin route declarations to
// src/cli/admin-commands.json (run after changing an admin route; a test fails while it is stale).
import fs from 'node:fs';
import path from 'node:path';
import { ADMIN_COMMANDS_FILE } from '../src/cli/admin-commands.ts';
import { deriveAdminCommands, serialiseCommands } from '../src/cli/derive-commands.ts';

fs.writeFileSync(ADMIN_COMMANDS_FILE, serialiseCommands(deriveAdminCommands()));
process.stdout.write(`wrote ${path.relative(process.cwd(), ADMIN_COMMANDS_FILE.pathname)}\n`);
