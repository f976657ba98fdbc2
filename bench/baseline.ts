// Owns the baseline child process from the bench's side: starting bench/baseline-server.ts on its own
// database (a PostgreSQL URL or a fresh PGlite data directory) with the service's pool size, and
// seeding it with copies of the service's practice, patients and invoices.
import { expect } from './api.ts';
import { type Child, cleanEnv, freePort, spawnChild, waitFor200 } from './children.ts';
import type { DbCounts } from './db-counts.ts';
import type { LoadedPatient } from './seed-api.ts';

export interface RunningBaseline {
  child: Child;
  baseUrl: string;
  /** The PostgreSQL database it serves; none on PGlite, whose database runs inside its process. */
  database?: string;
  setPractice(practiceId: string): Promise<void>;
  copyPatients(patients: LoadedPatient[]): Promise<void>;
  addInvoices(spec: {
    from: number;
    to: number;
    seed: string;
    t0: string;
    stepMs: number;
    patientIds: string[];
  }): Promise<void>;
  /** ANALYZE the baseline's database once seeded. */
  analyze(): Promise<void>;
  /** The statements, round trips and transactions it has sent since it started. */
  counts(): Promise<DbCounts>;
  stop(): Promise<number | null>;
}

export async function startBaseline(
  database: { url: string; name: string } | { dataDir: string },
  poolSize: number,
): Promise<RunningBaseline> {
  const port = await freePort();
  const env = cleanEnv({
    BASELINE_PORT: String(port),
    BASELINE_POOL_SIZE: String(poolSize),
    ...('url' in database
      ? { BASELINE_DATABASE_URL: database.url }
      : { BASELINE_DATA_DIR: database.dataDir }),
  });
  const child = spawnChild('baseline', ['bench/baseline-server.ts'], env, { keepStdinOpen: true });
  const baseUrl = `http://127.0.0.1:${port}`;
  try {
    await waitFor200(child, `${baseUrl}/healthz`, 120_000);
  } catch (error) {
    await child.stop(2_000);
    throw error;
  }
  const post = (path: string, body: unknown) => expect(200, baseUrl, 'POST', path, { body });
  return {
    child,
    baseUrl,
    ...('url' in database ? { database: database.name } : {}),
    setPractice: async (practiceId) => {
      await post('/_bench/practice', { practiceId });
    },
    copyPatients: async (patients) => {
      for (let i = 0; i < patients.length; i += 1000) {
        await post('/_bench/patients', { rows: patients.slice(i, i + 1000).map((p) => p.answer) });
      }
    },
    addInvoices: async (spec) => {
      const chunk = 100_000;
      for (let from = spec.from; from <= spec.to; from += chunk) {
        await post('/_bench/invoices', { ...spec, from, to: Math.min(spec.to, from + chunk - 1) });
      }
    },
    analyze: async () => {
      await post('/_bench/analyze', {});
    },
    counts: async () => (await expect(200, baseUrl, 'GET', '/_bench/counts')).body as DbCounts,
    stop: () => child.stop(),
  };
}
