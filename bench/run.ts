// `npm run bench`: the whole benchmark in one bounded run. For each database pass (embedded PGlite,
// then PostgreSQL when DATABASE_URL is set) it runs the service and a bare baseline side by side,
// drives both with the same load, measures the claim pipeline, start-up and memory, then writes
// bench/results/<date>.json, .md and .svg, prints the Markdown, and judges each target (never failing
// the run for a missed one). Child processes, temporary directories and databases are cleaned up on
// every way out, and a watchdog ends the run if it ever overruns its budget.
import os from 'node:os';
import path from 'node:path';
import { Budget } from './budget.ts';
import { ROOT } from './children.ts';
import { installExitHandlers, runCleanup } from './cleanup.ts';
import type { PassContext } from './pass-context.ts';
import { pglitePass } from './pass-pglite.ts';
import { postgresPass } from './pass-postgres.ts';
import { loadAverage1 } from './proc.ts';
import { processesOnly } from './processes.ts';
import { markdown, writeResults } from './report.ts';
import type { PassResult, RunResult } from './results.ts';
import { type PassName, settings } from './settings.ts';
import { judge } from './targets.ts';

const budget = new Budget(settings.budgetMs);
const log = (line: string) => {
  const elapsed = (budget.elapsedMs() / 1000).toFixed(0).padStart(4);
  process.stdout.write(`[${elapsed} s] ${line}\n`);
};

const run: RunResult = {
  startedAt: new Date().toISOString(),
  machine: {
    cpuModel: os.cpus()[0]?.model ?? 'unknown',
    cpuCount: os.cpus().length,
    totalMemoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
    loadAverageAtStart: os.loadavg().map((l) => Math.round(l * 100) / 100),
  },
  settings: { ...settings, databaseUrl: settings.databaseUrl ? '(set)' : undefined },
  passes: [],
  targets: [],
  notes: [],
};

let finished = false;

function finish(): void {
  if (finished) return;
  finished = true;
  run.finishedAt = new Date().toISOString();
  run.durationSeconds = Math.round(budget.elapsedMs() / 1000);
  run.machine.loadAverageAtEnd = os.loadavg().map((l) => Math.round(l * 100) / 100);
  run.targets = judge(run.passes, run.machine.loadAverageAtStart[0] ?? 0);
  const files = writeResults(run, settings.resultsDir ?? path.join(ROOT, 'bench', 'results'));
  process.stdout.write(`\n${markdown(run)}`);
  process.stdout.write(
    `Results: ${path.relative(ROOT, files.json)}, ${path.relative(ROOT, files.md)}, ${path.relative(ROOT, files.svg)}\n`,
  );
}

async function runPass(name: PassName): Promise<void> {
  const result: PassResult = {
    database: name,
    scenarios: [],
    invoices: {},
    windows: [],
    notes: [],
    seconds: 0,
    loadAverage: { before: loadAverage1() },
  };
  run.passes.push(result);
  const ctx: PassContext = { settings, budget, log: (line) => log(`${name}: ${line}`), result };
  const started = Date.now();
  try {
    if (settings.only === 'processes') await processesOnly(ctx, settings.databaseUrl!);
    else if (name === 'pglite') await pglitePass(ctx);
    else await postgresPass(ctx, settings.databaseUrl!);
  } catch (error) {
    result.error = error instanceof Error ? error.message.split('\n')[0]! : String(error);
    log(`${name}: pass failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  } finally {
    result.seconds = Math.round((Date.now() - started) / 1000);
    result.loadAverage.after = loadAverage1();
  }
}

async function main(): Promise<void> {
  installExitHandlers();
  budget.watchdog(() => {
    log('the time budget is spent: stopping, writing what was measured and cleaning up');
    run.notes.push('The run overran its time budget and was stopped; later steps are missing.');
    void runCleanup()
      .catch(() => {})
      .finally(() => {
        finish();
        process.exit(0);
      });
  });
  if (!settings.databaseUrl) run.notes.push('DATABASE_URL is not set: the PostgreSQL pass did not run.');
  log(`passes: ${settings.passes.join(', ')}; budget ${Math.round(settings.budgetMs / 1000)} s`);
  try {
    for (const name of settings.passes) await runPass(name);
  } finally {
    await runCleanup();
  }
  finish();
}

await main();
process.exit(0);
