// Owns judging each target as met / not met / not measured, per database pass, and refusing to judge a
// timing figure taken beside other work (the quiet-machine rule, bench/quiet.ts): such a target is
// "not judged: machine busy", with the figures. Counts of statements and transactions do not depend on
// the load and are always judged. A missed target is reported, never a failure of the run.
import type { CpuUse } from './cpu-window.ts';
import { ISOLATION_TARGETS } from './isolation.ts';
import { quietness } from './quiet.ts';
import type { PassResult, TargetResult, Verdict } from './results.ts';
import { TARGETS } from './settings.ts';
import { median } from './stats.ts';

function verdict(ok: boolean | undefined): Verdict {
  return ok === undefined ? 'not measured' : ok ? 'met' : 'not met';
}

/** `timing`: the windows a timing figure was measured in ([] when it has none but the run's start). */
export function judge(passes: PassResult[], loadAtStart: number): TargetResult[] {
  const out: TargetResult[] = [];
  for (const pass of passes) {
    const scenario = (key: string) => pass.scenarios.find((s) => s.key === key);
    const add = (target: string, value: string, ok: boolean | undefined, timing?: (CpuUse | undefined)[]) => {
      const quiet = timing && ok !== undefined ? quietness(loadAtStart, timing) : undefined;
      out.push({
        target,
        database: pass.database,
        value,
        verdict: quiet && !quiet.quiet ? 'not judged: machine busy' : verdict(ok),
        ...(quiet && !quiet.quiet ? { busy: quiet.reasons } : {}),
      });
    };
    const rounds = (key: string) => scenario(key)?.rounds.map((r) => r.cpu) ?? [];
    const perRequest = (key: string) => {
      const counts = scenario(key)?.perRequest;
      return counts?.service && counts.baseline
        ? `; statements per request ${counts.service.statements} (baseline ${counts.baseline.statements}), round trips ${counts.service.roundTrips} (${counts.baseline.roundTrips})`
        : '';
    };

    const get = scenario('get_patient');
    add(
      `GET patient ≥ ${TARGETS.getPatientRatio}× baseline, p99 ≤ ${TARGETS.getPatientP99Ms} ms`,
      get ? `${get.ratio}×, p99 ${get.service.p99Ms} ms${perRequest('get_patient')}` : '-',
      get ? get.ratio >= TARGETS.getPatientRatio && get.service.p99Ms <= TARGETS.getPatientP99Ms : undefined,
      rounds('get_patient'),
    );
    const post = scenario('post_patient');
    add(
      `POST patient ≥ ${TARGETS.postPatientRatio}× baseline`,
      post ? `${post.ratio}×${perRequest('post_patient')}` : '-',
      post ? post.ratio >= TARGETS.postPatientRatio : undefined,
      rounds('post_patient'),
    );
    if (pass.database === 'postgres') {
      const counted = pass.counted?.perClaim.total;
      add(
        `claim: ≤ ${TARGETS.statementsPerClaim} statements and ≤ ${TARGETS.transactionsPerClaim} transactions per claim (counted)`,
        counted
          ? `${counted.statements} statements, ${counted.transactions} transactions (${counted.roundTrips} round trips)`
          : '-',
        counted
          ? counted.statements <= TARGETS.statementsPerClaim &&
              counted.transactions <= TARGETS.transactionsPerClaim
          : undefined,
      );
    }
    const capacity = pass.capacity;
    const perSec = TARGETS.claimsPerSec[pass.database];
    const stepWindows = capacity?.steps.map((step) => step.cpu) ?? [];
    add(
      `claim capacity by a step load ≥ ${perSec} claims/s`,
      capacity
        ? `${capacity.claimsPerSec}/s (followed up to ${capacity.followedUpTo}/s offered${capacity.saturated ? '' : '; not saturated'})`
        : '-',
      capacity ? capacity.claimsPerSec >= perSec : undefined,
      stepWindows,
    );
    const cpu = capacity?.cpuMsPerClaimAtSaturation;
    add(
      `CPU per claim at saturation (API + worker + PostgreSQL backends) ≤ ${TARGETS.cpuMsPerClaim} ms`,
      cpu
        ? `${cpu.total} ms (API ${cpu.api}, worker ${cpu.worker}, PostgreSQL ${cpu.postgres})${capacity?.saturated ? '' : ', not saturated'}`
        : '-',
      cpu ? cpu.total <= TARGETS.cpuMsPerClaim : undefined,
      stepWindows,
    );
    const half = pass.latency?.find((l) => l.share === 0.5);
    const p50 = half?.run.endToEndP50Ms;
    const p99 = half?.run.endToEndP99Ms;
    add(
      `claim bill → outcome webhook at 50 % of capacity: p50 ≤ ${TARGETS.claimsP50Ms} ms, p99 ≤ ${TARGETS.claimsP99Ms} ms`,
      half
        ? `${half.run.offeredRate}/s: p50 ${Number.isFinite(p50) ? `${p50} ms` : 'not done'}, p99 ${Number.isFinite(p99) ? `${p99} ms` : 'not done within the drain'}`
        : '-',
      half
        ? Number.isFinite(p50) &&
            Number.isFinite(p99) &&
            p50! <= TARGETS.claimsP50Ms &&
            p99! <= TARGETS.claimsP99Ms
        : undefined,
      half ? [half.cpu] : [],
    );
    if (pass.database === 'postgres') {
      const large = pass.invoices.large;
      const ratio = pass.pageLatencyRatio?.service;
      add(
        `${large && large.invoices < 1_000_000 ? `${large.invoices.toLocaleString('en')} (not 1M)` : '1M'}-invoice page latency ≤ ${TARGETS.largePageLatencyRatio}× the 10k one`,
        ratio !== undefined ? `${ratio}×` : '-',
        ratio !== undefined ? ratio <= TARGETS.largePageLatencyRatio : undefined,
        pass.scenarios
          .filter((sc) => sc.key.startsWith('invoice_page'))
          .flatMap((sc) => sc.rounds.map((r) => r.cpu)),
      );
    }
    if (pass.database === 'pglite') {
      const starts = pass.start?.existingDataDirMs ?? [];
      const ms = starts.length ? median(starts) : undefined;
      add(
        `embedded start on an existing data directory ≤ ${TARGETS.existingStartMs} ms to first answer`,
        ms !== undefined ? `${Math.round(ms)} ms (median of ${starts.length})` : '-',
        ms !== undefined ? ms <= TARGETS.existingStartMs : undefined,
        [],
      );
    }
    const noisy = pass.noisyNeighbour;
    const noisyP50 = noisy?.claims.endToEndP50Ms;
    const max = noisy?.claims.endToEndMaxMs;
    add(
      `noisy neighbour: another practice's bill → claim outcome p50 ≤ ${ISOLATION_TARGETS.noisyP50Ms} ms, max ≤ ${ISOLATION_TARGETS.noisyMaxMs} ms, beside ${noisy?.deliveriesQueued ?? 'a backlog of'} deliveries to slow receivers`,
      noisy ? `p50 ${noisyP50} ms, max ${Number.isFinite(max) ? `${max} ms` : 'not done'}` : '-',
      noisy
        ? noisyP50! <= ISOLATION_TARGETS.noisyP50Ms &&
            Number.isFinite(max) &&
            max! <= ISOLATION_TARGETS.noisyMaxMs
        : undefined,
      [],
    );
    const over = pass.overload;
    add(
      `overload at 3× capacity: successes p99 ≤ ${ISOLATION_TARGETS.overloadSuccessP99Ms} ms, every refusal 503 with Retry-After, nothing lost, full throughput back within ${ISOLATION_TARGETS.recoveryMs / 1000} s`,
      over
        ? `${over.overload.offeredRate}/s offered: p99 ${over.overload.billP99Ms} ms, ${over.overload.billsSent - over.overload.billsOk} refused (${Object.keys(over.otherRefusals).length === 0 ? 'all 503 with Retry-After' : JSON.stringify(over.otherRefusals)}), ${over.lost} lost, back ${over.recoveryMs === null ? 'never' : `in ${over.recoveryMs} ms`}`
        : '-',
      over
        ? over.overload.billP99Ms <= ISOLATION_TARGETS.overloadSuccessP99Ms &&
            Object.keys(over.otherRefusals).length === 0 &&
            over.lost === 0 &&
            over.recoveryMs !== null &&
            over.recoveryMs <= ISOLATION_TARGETS.recoveryMs
        : undefined,
      [],
    );
    const rss = pass.memory?.servicePeakRssMiB;
    // VmHWM is in KiB; the target is read as decimal megabytes (the stricter reading).
    const megabytes = rss === undefined ? undefined : Math.round((rss * 1024 * 1024) / 1e5) / 10;
    add(
      `service peak RSS ≤ ${TARGETS.peakRssMB} MB under load`,
      rss !== undefined ? `${megabytes} MB (${rss} MiB)` : '-',
      megabytes !== undefined ? megabytes <= TARGETS.peakRssMB : undefined,
    );
  }
  return out;
}
