// Owns running the service under test as a child process, the way an operator does
// (`npm start`'s command: the API and its worker in one process, with its Node flags), with the bench's settings: a free
// PORT, ADMIN_TOKEN, LOG_LEVEL=warn, no insurer or remittance delay, a short job poll, private webhook
// addresses allowed, and either DATABASE_URL (+ SECRET_ENCRYPTION_KEY) or an embedded DATA_DIR.
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
}

export interface RunningService {
  child: Child;
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
    ...('url' in spec.database
      ? { DATABASE_URL: spec.database.url, SECRET_ENCRYPTION_KEY: randomBytes(32).toString('hex') }
      : { DATA_DIR: spec.database.dataDir }),
  });
  const child = spawnChild('service', [...(spec.nodeArgs ?? []), ...startArgs()], env);
  const baseUrl = `http://127.0.0.1:${port}`;
  try {
    const readyAt = await waitFor200(child, `${baseUrl}/healthz`, timeoutMs);
    return { child, baseUrl, startMs: Math.round(readyAt - child.spawnedAt), stop: () => child.stop() };
  } catch (error) {
    await child.stop(2_000);
    throw error;
  }
}
