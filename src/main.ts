// Process entry for `npm start`: the API and its background worker in one process. V8's compiled code
// is cached between starts (in NODE_COMPILE_CACHE, else the system's temporary directory); the rest
// is imported only after, since modules imported statically are compiled before any code runs.
// Tracing (when OTEL_* names an endpoint) starts before the service's modules load, so that its
// instrumentations see them load (src/platform/observability/tracing.ts).
import module from 'node:module';

module.enableCompileCache?.();
const { loadConfig } = await import('./platform/config.ts');
const { startTracing } = await import('./platform/observability/tracing.ts');

try {
  const config = loadConfig();
  const tracing = await startTracing(config.tracing, 'practice-billing');
  const { runService } = await import('./server.ts');
  await runService(config, { api: true, worker: true, tracing });
} catch (error) {
  process.stderr.write(`practice-billing: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
