// Process entry for `npm start`: the API and its background worker in one process. V8's compiled code
// is cached between starts (in NODE_COMPILE_CACHE, else the system's temporary directory); the rest
// is imported only after, since modules imported statically are compiled before any code runs.
import module from 'node:module';

module.enableCompileCache?.();
const { loadConfig } = await import('./platform/config.ts');
const { runService } = await import('./server.ts');

try {
  await runService(loadConfig(), { api: true, worker: true });
} catch (error) {
  process.stderr.write(`practice-billing: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
