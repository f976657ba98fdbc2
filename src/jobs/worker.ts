// Owns background work. Today: housekeeping that keeps the database lean (Idempotency-Keys past their
// 24 hours). Each task is safe to run in several worker processes at once.
import type { FastifyBaseLogger } from 'fastify';
import { purgeExpiredKeys } from '../idempotency/idempotency-store.ts';
import type { Database } from '../platform/db/database.ts';
import { asOperator } from '../platform/db/transaction.ts';

export interface PeriodicTask {
  name: string;
  everyMs: number;
  run(db: Database): Promise<number>;
}

export const periodicTasks: PeriodicTask[] = [
  {
    name: 'purge-expired-idempotency-keys',
    everyMs: 10 * 60 * 1000,
    run: (db) => asOperator(db, (trx) => purgeExpiredKeys(trx)),
  },
];

export interface Worker {
  stop(): Promise<void>;
}

export function startWorker(
  db: Database,
  log: FastifyBaseLogger,
  tasks: PeriodicTask[] = periodicTasks,
): Worker {
  let stopped = false;
  const running = new Set<Promise<unknown>>();
  const timers = tasks.map((task) => {
    const tick = () => {
      if (stopped) return;
      const run = task
        .run(db)
        .then((count) => {
          if (count > 0) log.info({ task: task.name, count }, 'background task done');
        })
        .catch((err) => log.warn({ err, task: task.name }, 'background task failed; will retry'))
        .finally(() => running.delete(run));
      running.add(run);
    };
    setImmediate(tick);
    return setInterval(tick, task.everyMs);
  });
  return {
    async stop() {
      stopped = true;
      for (const timer of timers) clearInterval(timer);
      await Promise.allSettled([...running]);
    },
  };
}
