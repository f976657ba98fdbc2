// Owns running the service under test as child processes, the way an operator does: `npm start`'s
// command (the API and its worker in one process, with its Node flags), or on PostgreSQL the API
// (`practice-billing serve`) and the worker (`practice-billing worker`) as two processes with the
// same flags. With the bench's settings: a free
// PORT, ADMIN_TOKEN, LOG_LEVEL=warn, no insurer or remittance delay, a short job poll, private webhook
// addresses allowed, and either DATABASE_URL (+ SECRET_ENCRYPTION_KEY) or an embedded DATA_DIR, and
// whatever more the spec's env sets.
// Start-up time is measured from spawn to the first 200 from /healthz.
import { randomBytes } from 'node:crypto';
import { startArgs } from '../scripts/start-args.ts';
import { type Child, cleanEnv, freePort, spawnChild, waitFor200 } from './children.ts';

export interface ServiceSpec {
  database: { url: string } | { dataDir: string };
  adminToken: string;
  jobPollMs: number;
  /** Extra Node flags, e.g. --cpu-prof. */
  nodeArgs?: string[];
  /** PostgreSQL only: run the worker as a process of its own beside the API. */
  separateWorker?: boolean;
  /** More environment for the service, e.g. the load-shedding bounds. */
  env?: Record<string, string>;
  /** A script run as the worker instead of `practice-billing worker` (with the separate worker), and its extra environment. */
  worker?: { script: string; env: Record<string, string> };
}

export interface RunningService {
  /** The process serving the API (and running the worker too, unless `worker` is set). */
  child: Child;
  worker?: Child;
  baseUrl: string;
  /** Spawn to first 200 from /healthz, in ms. */
  startMs: number;
  stop(): Promise<number | null>;
}

export async function startService(spec: ServiceSpec, timeoutMs = 120_000): Promise<RunningService> {
  const port = await freePort();
  const env = cleanEnv({
    PORT: String(port),
    HOST: '127.0.0.1',
    ADMIN_TOKEN: spec.adminToken,
    LOG_LEVEL: 'warn',
    INSURER_DELAY_MS: '0',
    REMITTANCE_DELAY_MS: '0',
    JOB_POLL_MS: String(spec.jobPollMs),
    WEBHOOK_ALLOW_PRIVATE: 'true',
    // serve and worker migrate only when told to; the bench's databases start empty.
    MIGRATE_ON_START: 'true',
    ...('url' in spec.database
      ? { DATABASE_URL: spec.database.url, SECRET_ENCRYPTION_KEY: randomBytes(32).toString('hex') }
      : { DATA_DIR: spec.database.dataDir }),
    ...spec.env,
  });
  const nodeArgs = [...(spec.nodeArgs ?? []), ...startArgs()];
  const separate = spec.separateWorker === true && 'url' in spec.database;
  // The start script's flags with the command's entry instead of src/main.ts.
  const command = (name: string) => [...nodeArgs.slice(0, -1), 'bin/practice-billing.js', name];
  const child = spawnChild('service', separate ? command('serve') : nodeArgs, env);
  const worker = !separate
    ? undefined
    : spec.worker
      ? spawnChild('worker', [...nodeArgs.slice(0, -1), spec.worker.script], { ...env, ...spec.worker.env })
      : spawnChild('worker', command('worker'), env);
  const stop = async () => {
    const [code] = await Promise.all([child.stop(), worker?.stop()]);
    return code;
  };
  const baseUrl = `http://127.0.0.1:${port}`;
  try {
    const readyAt = await waitFor200(child, `${baseUrl}/healthz`, timeoutMs);
    return {
      child,
      ...(worker ? { worker } : {}),
      baseUrl,
      startMs: Math.round(readyAt - child.spawnedAt),
      stop,
    };
  } catch (error) {
    await Promise.all([child.stop(2_000), worker?.stop(2_000)]);
    throw error;
  }
}
