// Owns judging each target of the brief as met / not met / not measured, per database pass. A missed
// target is reported, never a failure of the run.
import { ISOLATION_TARGETS } from './isolation.ts';
import type { PassResult, TargetResult, Verdict } from './results.ts';
import { TARGETS } from './settings.ts';
import { median } from './stats.ts';

function verdict(ok: boolean | undefined): Verdict {
  return ok === undefined ? 'not measured' : ok ? 'met' : 'not met';
}

export function judge(passes: PassResult[]): TargetResult[] {
  const out: TargetResult[] = [];
  for (const pass of passes) {
    const scenario = (key: string) => pass.scenarios.find((s) => s.key === key);
    const add = (target: string, value: string, ok: boolean | undefined) =>
      out.push({ target, database: pass.database, value, verdict: verdict(ok) });

    const get = scenario('get_patient');
    add(
      `GET patient ≥ ${TARGETS.getPatientRatio}× baseline, p99 ≤ ${TARGETS.getPatientP99Ms} ms`,
      get ? `${get.ratio}×, p99 ${get.service.p99Ms} ms` : '-',
      get ? get.ratio >= TARGETS.getPatientRatio && get.service.p99Ms <= TARGETS.getPatientP99Ms : undefined,
    );
    const post = scenario('post_patient');
    add(
      `POST patient ≥ ${TARGETS.postPatientRatio}× baseline`,
      post ? `${post.ratio}×` : '-',
      post ? post.ratio >= TARGETS.postPatientRatio : undefined,
    );
    const claims = pass.claims;
    const perSec = TARGETS.claimsPerSec[pass.database];
    add(
      `claim pipeline, one practice, ≥ ${perSec} claims/s sustained`,
      claims ? `${claims.sustainedClaimsPerSec}/s at ${claims.offeredRate}/s offered` : '-',
      claims ? claims.sustainedClaimsPerSec >= perSec : undefined,
    );
    if (pass.database === 'postgres') {
      const atRate = pass.claimsAtLatencyRate;
      const p50 = atRate?.endToEndP50Ms;
      add(
        `claim pipeline, one practice, p50 ≤ ${TARGETS.claimsP50Ms} ms end to end at ${atRate?.offeredRate ?? 100} claims/s offered`,
        atRate ? (Number.isFinite(p50) ? `${p50} ms` : 'not done within the drain') : '-',
        atRate ? Number.isFinite(p50) && p50! <= TARGETS.claimsP50Ms : undefined,
      );
    }
    if (pass.database === 'postgres') {
      const large = pass.invoices.large;
      const ratio = pass.pageLatencyRatio?.service;
      add(
        `${large && large.invoices < 1_000_000 ? `${large.invoices.toLocaleString('en')} (not 1M)` : '1M'}-invoice page latency ≤ ${TARGETS.largePageLatencyRatio}× the 10k one`,
        ratio !== undefined ? `${ratio}×` : '-',
        ratio !== undefined ? ratio <= TARGETS.largePageLatencyRatio : undefined,
      );
    }
    if (pass.database === 'pglite') {
      const starts = pass.start?.existingDataDirMs ?? [];
      const ms = starts.length ? median(starts) : undefined;
      add(
        `embedded start on an existing data directory ≤ ${TARGETS.existingStartMs} ms to first answer`,
        ms !== undefined ? `${Math.round(ms)} ms (median of ${starts.length})` : '-',
        ms !== undefined ? ms <= TARGETS.existingStartMs : undefined,
      );
    }
    const noisy = pass.noisyNeighbour;
    const p50 = noisy?.claims.endToEndP50Ms;
    const max = noisy?.claims.endToEndMaxMs;
    add(
      `noisy neighbour: another practice's bill → claim outcome p50 ≤ ${ISOLATION_TARGETS.noisyP50Ms} ms, max ≤ ${ISOLATION_TARGETS.noisyMaxMs} ms, beside ${noisy?.deliveriesQueued ?? 'a backlog of'} deliveries to slow receivers`,
      noisy ? `p50 ${p50} ms, max ${Number.isFinite(max) ? `${max} ms` : 'not done'}` : '-',
      noisy
        ? p50! <= ISOLATION_TARGETS.noisyP50Ms && Number.isFinite(max) && max! <= ISOLATION_TARGETS.noisyMaxMs
        : undefined,
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
