// The PostgreSQL pass: first the database work of a claim, counted on a service of its own
// (bench/counted-claims.ts); then fresh databases pb_bench_<random> for the service and pb_bench_<random>_base for
// the baseline (both dropped at the end), the service seeded through the API and by SQL and both
// databases analysed, the A/B
// scenarios, the rate-limit store comparison (on a database of its own) and the claim pipeline (its
// capacity by a step load, then its latency at 50 % and 80 % of it) at 10,000 invoices, then the invoices grown by SQL to 1,000,000
// (200,000 when a million would not fit the time budget, as the results then say) for the second
// paging comparison.
import { randomBytes } from 'node:crypto';
import { type AutovacuumStandIn, startAutovacuumStandIn } from './autovacuum.ts';
import { startBaseline } from './baseline.ts';
import { postgresTarget } from './bulk-sql.ts';
import { countedClaims } from './counted-claims.ts';
import { isolationOnly, isolationScenarios } from './isolation.ts';
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
  sharedClaimScenario,
} from './pass-steps.ts';
import { createDatabase, randomSuffix } from './postgres.ts';
import { rateLimitStoreScenario } from './rate-limit-store.ts';
import { startService } from './service.ts';

/** Time kept back, after the large load, for its paging comparison (page starts included), reports and cleanup. */
const AFTER_LARGE_LOAD_MS = 120_000;
/**
 * A load slows as the tables and their indexes grow: invoices 200,001 to 1,000,000 took 1.7 times as
 * long each as the first 200,000 on a 2-core machine, so the rest is estimated at this multiple.
 */
const LOAD_SLOWDOWN = 1.8;

/** Stops the autovacuum stand-in, if one ran, and notes what it did. */
async function noteStandIn(ctx: PassContext, standIn: AutovacuumStandIn | undefined): Promise<void> {
  if (!standIn) return;
  await standIn.stop();
  ctx.result.notes.push(
    `the server runs with autovacuum off: the bench stood in for it (bench/autovacuum.ts), analysing ${standIn.counts.analysed} and vacuuming ${standIn.counts.vacuumed} tables at autovacuum's thresholds`,
  );
}

export async function postgresPass(ctx: PassContext, databaseUrl: string): Promise<void> {
  const { settings } = ctx;
  if (settings.only === 'rate-limits') {
    await rateLimitStoreScenario(ctx, databaseUrl);
    return;
  }
  if (settings.only === 'isolation') {
    const db = await createDatabase(databaseUrl, `pb_bench_${randomSuffix()}`);
    ctx.result.notes.push(`database ${db.name}, dropped at the end`);
    const standIn = await startAutovacuumStandIn([db.url]);
    try {
      await isolationOnly(ctx, { database: { url: db.url }, separateWorker: settings.separateWorker });
    } finally {
      await noteStandIn(ctx, standIn);
      await db.drop();
    }
    return;
  }
  // Counts first: they do not depend on the machine's load, and need a service of their own.
  if (settings.only === undefined || settings.only === 'claims') await countedClaims(ctx, databaseUrl);
  const suffix = randomSuffix();
  const serviceDb = await createDatabase(databaseUrl, `pb_bench_${suffix}`);
  const baselineDb = await createDatabase(databaseUrl, `pb_bench_${suffix}_base`);
  ctx.result.notes.push(`databases ${serviceDb.name} and ${baselineDb.name}, dropped at the end`);
  ctx.result.notes.push(
    settings.separateWorker
      ? 'the service ran as two processes: the API (practice-billing serve) and the worker (practice-billing worker)'
      : 'the service ran as one process (npm start: the API and the worker)',
  );
  const adminToken = `adm_bench_${randomBytes(12).toString('hex')}`;
  if (settings.only === undefined || settings.only === 'claims') {
    ctx.result.notes.push(
      "the service runs with its own load-shedding defaults (Configuration); BENCH_ONLY=isolation sets the isolation scenarios' bounds explicitly",
    );
  }
  try {
    const service = await startService({
      database: { url: serviceDb.url },
      adminToken,
      jobPollMs: settings.jobPollMs,
      separateWorker: settings.separateWorker,
      // The service's own shedding defaults; a run of the isolation scenarios alone
      // (BENCH_ONLY=isolation) sets its bounds explicitly, the limit in flight at twice the pool.
      env: {},
      ...(settings.cpuProfDir ? { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${settings.cpuProfDir}`] } : {}),
    });
    ctx.result.start = { firstStartMs: service.startMs };
    await watchService(ctx, service, adminToken, {
      adminUrl: databaseUrl,
      serviceDatabase: serviceDb.name,
    }).catch(async (error) => {
      await service.stop();
      throw error;
    });
    const baseline = await startBaseline(baselineDb, settings.poolSize).catch(async (error) => {
      await service.stop();
      throw error;
    });
    const sql = await postgresTarget(serviceDb.url).catch(async (error) => {
      await Promise.all([baseline.stop(), service.stop()]);
      throw error;
    });
    let standIn: AutovacuumStandIn | undefined;
    try {
      const seeded = await seedThroughApi(ctx, service.baseUrl, adminToken);
      const plan = invoicePlan(settings, settings.largeInvoices);
      const patientIds = seeded.patients.map((p) => p.id);
      const baselineInvoices = (from: number, to: number) =>
        baseline.addInvoices({
          from,
          to,
          seed: plan.seed,
          t0: plan.t0.toISOString(),
          stepMs: plan.stepMs,
          patientIds,
        });

      const small = await loadInvoices(ctx, sql, seeded, plan, 1, settings.smallInvoices);
      ctx.result.invoices.small = {
        invoices: settings.smallInvoices,
        loadSeconds: Math.round(small * 10) / 10,
      };
      const claimEncounters = await loadClaimVisits(
        ctx,
        sql,
        seeded,
        claimVisitsNeeded(settings, ctx.result.database),
      );
      await baseline.setPractice(seeded.practice.practiceId);
      await baseline.copyPatients(seeded.patients);
      await baselineInvoices(1, settings.smallInvoices);
      await analyze(ctx, sql, baseline);
      standIn = await startAutovacuumStandIn([serviceDb.url, baselineDb.url]);

      const everything = settings.only === undefined;
      if (settings.only !== 'claims') {
        await patientScenarios(ctx, service, baseline, seeded);
        await rateLimitStoreScenario(ctx, databaseUrl);
      }
      const smallPage = everything
        ? await pagingScenario(
            ctx,
            '10k',
            settings.smallInvoices,
            plan,
            service,
            baseline,
            seeded.practice.key,
          )
        : undefined;
      if (settings.only !== 'requests') {
        await claimScenario(ctx, service, adminToken, seeded, claimEncounters);
        await sharedClaimScenario(ctx, service, adminToken, sql);
      }
      if (!everything) {
        if (settings.only === 'claims') await isolationScenarios(ctx, service, adminToken);
        return;
      }

      // Grow to the fallback size first, then on to the full size only if the rate seen so far says it fits.
      const largeStarted = Date.now();
      let loaded = settings.smallInvoices;
      const target = Math.min(settings.fallbackInvoices, settings.largeInvoices);
      const growTo = async (to: number) => {
        await loadInvoices(ctx, sql, seeded, plan, loaded + 1, to);
        await baselineInvoices(loaded + 1, to);
        await analyze(ctx, sql, baseline);
        loaded = to;
      };
      let note: string | undefined;
      if (ctx.budget.fits((target / 10_000) * small * 1000 + AFTER_LARGE_LOAD_MS)) {
        await growTo(target);
        if (settings.largeInvoices > loaded) {
          const perInvoiceMs = (Date.now() - largeStarted) / (loaded - settings.smallInvoices);
          const needMs =
            perInvoiceMs * LOAD_SLOWDOWN * (settings.largeInvoices - loaded) + AFTER_LARGE_LOAD_MS;
          if (ctx.budget.fits(needMs)) {
            await growTo(settings.largeInvoices);
          } else {
            note = `loaded ${loaded.toLocaleString('en')} invoices, not ${settings.largeInvoices.toLocaleString('en')}: at ${(perInvoiceMs * 1000).toFixed(0)} ms per 1,000 the rest needed ${Math.round(needMs / 1000)} s and ${Math.round(ctx.budget.remainingMs() / 1000)} s of the 15-minute budget were left`;
          }
        }
      } else {
        note = 'the large invoice load was skipped: the time budget ran out';
      }
      if (note) {
        ctx.result.notes.push(note);
        ctx.log(note);
      }
      if (loaded > settings.smallInvoices) {
        ctx.result.invoices.large = {
          invoices: loaded,
          loadSeconds: Math.round((Date.now() - largeStarted) / 100) / 10,
          ...(note ? { note } : {}),
        };
        const label = loaded >= 1_000_000 ? `${loaded / 1_000_000}M` : `${loaded / 1000}k`;
        const largePage = await pagingScenario(
          ctx,
          label,
          loaded,
          plan,
          service,
          baseline,
          seeded.practice.key,
        );
        if (smallPage && largePage) {
          ctx.result.pageLatencyRatio = {
            service: Math.round((largePage.service.p50Ms / smallPage.service.p50Ms) * 100) / 100,
            baseline: Math.round((largePage.baseline.p50Ms / smallPage.baseline.p50Ms) * 100) / 100,
            basis: `median p50 page latency at ${loaded.toLocaleString('en')} ÷ at ${settings.smallInvoices.toLocaleString('en')} invoices, ${settings.connections} connections`,
          };
        }
      }
      await isolationScenarios(ctx, service, adminToken);
    } finally {
      await noteStandIn(ctx, standIn);
      await sql.close();
      await baseline.stop();
      await service.stop();
    }
  } finally {
    await baselineDb.drop();
    await serviceDb.drop();
  }
}
