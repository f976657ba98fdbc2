// The embedded (PGlite) pass: the service on a NEW temporary data directory (its cold start timed),
// seeded through the API, stopped while visits and invoices are loaded by SQL into its data directory,
// then started again on that EXISTING directory (timed, several times), compared with a PGlite
// baseline in a temporary directory of its own, and driven through the claim pipeline.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startBaseline } from './baseline.ts';
import { pgliteTarget } from './bulk-sql.ts';
import { onCleanup } from './cleanup.ts';
import { isolationOnly, isolationScenarios, noteShedding, sheddingEnv } from './isolation.ts';
import { type PassContext, watchService } from './pass-context.ts';
import {
  analyze,
  claimScenario,
  claimVisitsNeeded,
  invoicePlan,
  loadClaimVisits,
  loadInvoices,
  pagingScenario,
  patientScenarios,
  seedThroughApi,
} from './pass-steps.ts';
import { type RunningService, startService } from './service.ts';
import { median } from './stats.ts';

function tempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `pb-bench-${prefix}-`));
  onCleanup(`remove ${dir}`, () => {
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(`${dir}.lock`, { recursive: true, force: true });
  });
  return dir;
}

export async function pglitePass(ctx: PassContext): Promise<void> {
  const { settings } = ctx;
  if (settings.only === 'isolation') {
    await isolationOnly(ctx, { database: { dataDir: path.join(tempDir('isolation'), 'data') } });
    return;
  }
  const dataDir = path.join(tempDir('service'), 'data');
  const baselineDir = path.join(tempDir('baseline'), 'data');
  const adminToken = `adm_bench_${randomBytes(12).toString('hex')}`;
  const spec = {
    database: { dataDir },
    adminToken,
    jobPollMs: settings.jobPollMs,
    ...(settings.cpuProfDir ? { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${settings.cpuProfDir}`] } : {}),
  };

  let service: RunningService = await startService(spec);
  ctx.result.start = { newDataDirMs: service.startMs, existingDataDirMs: [] };
  ctx.log(`service started on a new data directory in ${service.startMs} ms`);
  const seeded = await seedThroughApi(ctx, service.baseUrl, adminToken);
  await service.stop();

  // The service holds its data directory alone: load by SQL while it is stopped.
  const plan = invoicePlan(settings, settings.smallInvoices);
  const sql = await pgliteTarget(dataDir);
  let claimEncounters: string[];
  try {
    const seconds = await loadInvoices(ctx, sql, seeded, plan, 1, settings.smallInvoices);
    ctx.result.invoices.small = {
      invoices: settings.smallInvoices,
      loadSeconds: Math.round(seconds * 10) / 10,
    };
    claimEncounters = await loadClaimVisits(
      ctx,
      sql,
      seeded,
      claimVisitsNeeded(settings, ctx.result.database),
    );
    await analyze(ctx, sql);
  } finally {
    await sql.close();
  }

  for (let i = 0; i < settings.existingStarts; i++) {
    if (i > 0) await service.stop();
    service = await startService(spec);
    ctx.result.start.existingDataDirMs!.push(service.startMs);
  }
  ctx.log(
    `service started on the existing data directory in ${ctx.result.start.existingDataDirMs!.join(', ')} ms (median ${median(ctx.result.start.existingDataDirMs!)})`,
  );

  const baseline = await startBaseline({ dataDir: baselineDir }, settings.poolSize);
  try {
    await watchService(ctx, service, adminToken);
    await baseline.setPractice(seeded.practice.practiceId);
    await baseline.copyPatients(seeded.patients);
    await baseline.addInvoices({
      from: 1,
      to: settings.smallInvoices,
      seed: plan.seed,
      t0: plan.t0.toISOString(),
      stepMs: plan.stepMs,
      patientIds: seeded.patients.map((p) => p.id),
    });
    await baseline.analyze();

    if (settings.only !== 'claims') await patientScenarios(ctx, service, baseline, seeded);
    if (settings.only === undefined)
      await pagingScenario(ctx, '10k', settings.smallInvoices, plan, service, baseline, seeded.practice.key);
    if (settings.only !== 'requests') {
      await claimScenario(ctx, service, adminToken, seeded, claimEncounters);
      // Shedding is off by default here; the isolation scenarios judge it, so they run on the same
      // data directory with its bounds set.
      await service.stop();
      noteShedding(ctx, spec.database);
      service = await startService({ ...spec, env: sheddingEnv(spec.database) });
      await watchService(ctx, service, adminToken);
      await isolationScenarios(ctx, service, adminToken);
    }
  } finally {
    await baseline.stop();
    await service.stop();
  }
}
