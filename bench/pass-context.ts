// Owns what a database pass carries from step to step: its settings, time budget, log and results,
// and where the service under test runs (for the CPU windows and the database counts).
import type { Budget } from './budget.ts';
import type { CpuUse, WindowSpec } from './cpu-window.ts';
import { ServiceCounter } from './db-counts.ts';
import type { PassResult } from './results.ts';
import type { RunningService } from './service.ts';
import type { Settings } from './settings.ts';

export interface PassContext {
  settings: Settings;
  budget: Budget;
  log: (line: string) => void;
  result: PassResult;
  /** Set once the service runs: its API's database counts, when this build counts them. */
  counter?: ServiceCounter | undefined;
  /** Set once the service runs: whose CPU a measured window attributes to the service. */
  cpu?: Omit<WindowSpec, 'label'>;
}

/** Where the service under test runs, for the CPU windows and the database counts. */
export async function watchService(
  ctx: PassContext,
  service: RunningService,
  adminToken: string,
  postgres?: { adminUrl: string; serviceDatabase: string },
): Promise<void> {
  ctx.cpu = {
    apiPid: service.child.pid,
    ...(service.worker ? { workerPid: service.worker.pid } : {}),
    ...(postgres ? { postgres } : {}),
  };
  ctx.counter = await ServiceCounter.open(service.baseUrl, adminToken);
  if (!ctx.counter) ctx.result.notes.push('the service does not count its database statements: no counts');
}

/** Records a measured window's CPU use in the pass's results, and answers it. */
export function recordWindow(ctx: PassContext, cpu: CpuUse): CpuUse {
  ctx.result.windows.push(cpu);
  return cpu;
}
