// Process entry for `npm start`: the API and its background worker in one process.
import { loadConfig } from './config.ts';
import { runService } from './server.ts';

try {
  await runService(loadConfig(), { api: true, worker: true });
} catch (error) {
  process.stderr.write(`practice-billing: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
