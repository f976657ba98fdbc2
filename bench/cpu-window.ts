// Owns measuring who used the machine's CPU during one measured window: the service's API and worker
// processes, the PostgreSQL backends serving the service's database (found in pg_stat_activity by
// database, polled through the window so that backends opened during it count too), the rest of the
// bench (this process, the baseline, backends of the bench's other databases, PostgreSQL's own
// background processes), and everything else: the machine's busy time from /proc/stat minus all of
// those, which the quiet-machine rule (bench/quiet.ts) judges.
import pg from 'pg';
import { trackedPids } from './cleanup.ts';
import { benchDatabases } from './postgres.ts';
import { loadAverage1, machineBusyMs, processCpuMs } from './proc.ts';
import { round } from './stats.ts';

type Role = 'api' | 'worker' | 'postgres' | 'bench';

export interface WindowSpec {
  label: string;
  /**
   * The service's API process (on the embedded database: the one process, database included); in an
   * A/B round of the baseline, the baseline server.
   */
  apiPid?: number;
  workerPid?: number;
  /** PostgreSQL: the server's URL (for pg_stat_activity) and the measured side's database name. */
  postgres?: { adminUrl: string; serviceDatabase?: string };
}

export interface CpuUse {
  label: string;
  seconds: number;
  loadBefore: number;
  loadAfter: number;
  /** CPU ms in the window, per user. */
  apiMs: number;
  workerMs: number;
  /** The backends serving the measured side's database. */
  postgresMs: number;
  benchMs: number;
  othersMs: number;
  /** Others' CPU as a share of one core over the window, in %. */
  othersPctOfCore: number;
}

interface Snapshot {
  at: number;
  load: number;
  busyMs: number;
  selfMs: number;
  pids: Map<number, number>;
}

const POLL_MS = 500;

function selfCpuMs(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

export class CpuWindow {
  private readonly roles = new Map<number, Role>();
  private readonly lastSeen = new Map<number, number>();
  private client: pg.Client | undefined;
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private start: Snapshot | undefined;
  private finish: Snapshot | undefined;

  private readonly spec: WindowSpec;

  private constructor(spec: WindowSpec) {
    this.spec = spec;
  }

  /** Connects (PostgreSQL), finds the processes to watch and starts polling for new backends. */
  static async open(spec: WindowSpec): Promise<CpuWindow> {
    const window = new CpuWindow(spec);
    if (spec.postgres) {
      window.client = new pg.Client({ connectionString: spec.postgres.adminUrl });
      window.client.on('error', () => {});
      await window.client.connect();
    }
    await window.refresh();
    window.timer = setInterval(() => {
      window.polling ??= window.refresh().finally(() => {
        window.polling = undefined;
      });
    }, POLL_MS);
    window.timer.unref();
    return window;
  }

  private async refresh(): Promise<void> {
    for (const pid of trackedPids()) if (!this.roles.has(pid)) this.roles.set(pid, 'bench');
    if (this.spec.apiPid) this.roles.set(this.spec.apiPid, 'api');
    if (this.spec.workerPid) this.roles.set(this.spec.workerPid, 'worker');
    if (this.client && this.spec.postgres) {
      // Backends of the bench's databases, this connection's own, and the server's background
      // processes (no database); backends of any other database are someone else's.
      const { rows } = await this.client
        .query<{ pid: number; datname: string | null }>(
          `SELECT pid, datname FROM pg_stat_activity
            WHERE datname = ANY($1) OR datname IS NULL OR pid = pg_backend_pid()`,
          [[...benchDatabases]],
        )
        .catch(() => ({ rows: [] as { pid: number; datname: string | null }[] }));
      for (const row of rows) {
        if (this.roles.has(row.pid)) continue;
        this.roles.set(row.pid, row.datname === this.spec.postgres.serviceDatabase ? 'postgres' : 'bench');
      }
    }
    for (const pid of this.roles.keys()) {
      const ms = processCpuMs(pid);
      if (ms !== undefined) this.lastSeen.set(pid, ms);
    }
  }

  private snapshot(): Snapshot {
    const pids = new Map<number, number>();
    for (const pid of this.roles.keys()) {
      const ms = processCpuMs(pid) ?? this.lastSeen.get(pid);
      if (ms !== undefined) {
        pids.set(pid, ms);
        this.lastSeen.set(pid, ms);
      }
    }
    return {
      at: performance.now(),
      load: loadAverage1(),
      busyMs: machineBusyMs() ?? 0,
      selfMs: selfCpuMs(),
      pids,
    };
  }

  /** The window starts now (synchronous, so that it can be called at the first send). */
  begin(): void {
    this.start = this.snapshot();
  }

  /** The window ends now; polling stops. */
  end(): void {
    this.finish = this.snapshot();
    clearInterval(this.timer);
  }

  /** The CPU used in the window, per user; closes the PostgreSQL connection. */
  async close(): Promise<CpuUse> {
    clearInterval(this.timer);
    await this.polling;
    await this.client?.end().catch(() => {});
    const start = this.start;
    const finish = this.finish;
    if (!start || !finish) throw new Error(`CPU window ${this.spec.label} was not begun and ended`);
    const ms: Record<Role, number> = { api: 0, worker: 0, postgres: 0, bench: finish.selfMs - start.selfMs };
    for (const [pid, role] of this.roles) {
      const after = finish.pids.get(pid) ?? this.lastSeen.get(pid);
      if (after === undefined) continue;
      // A process first seen after the window began started within it.
      ms[role] += after - (start.pids.get(pid) ?? 0);
    }
    const seconds = (finish.at - start.at) / 1000;
    const othersMs = Math.max(0, finish.busyMs - start.busyMs - ms.api - ms.worker - ms.postgres - ms.bench);
    return {
      label: this.spec.label,
      seconds: round(seconds, 2),
      loadBefore: start.load,
      loadAfter: finish.load,
      apiMs: Math.round(ms.api),
      workerMs: Math.round(ms.worker),
      postgresMs: Math.round(ms.postgres),
      benchMs: Math.round(ms.bench),
      othersMs: Math.round(othersMs),
      othersPctOfCore: round(seconds > 0 ? othersMs / seconds / 10 : 0, 1),
    };
  }
}

/** Runs fn inside one window opened just before it and ended just after it. */
export async function measured<T>(
  spec: WindowSpec,
  fn: () => Promise<T>,
): Promise<{ value: T; cpu: CpuUse }> {
  const window = await CpuWindow.open(spec);
  window.begin();
  try {
    const value = await fn();
    window.end();
    return { value, cpu: await window.close() };
  } catch (error) {
    window.end();
    await window.close().catch(() => {});
    throw error;
  }
}
