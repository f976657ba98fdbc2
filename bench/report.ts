// Owns the run's outputs: bench/results/<date>.json with everything measured, the Markdown tables
// (printed and written to <date>.md) and the ratio chart <date>.svg.
import fs from 'node:fs';
import path from 'node:path';
import type { CpuPerRequest } from './ab.ts';
import type { ClaimResult } from './claim-pipeline.ts';
import type { DbCounts } from './db-counts.ts';
import { QUIET } from './quiet.ts';
import type { CountedClaims, MeasuredClaims, PassResult, RunResult } from './results.ts';
import { FOLLOWING } from './step-load.ts';
import { ratioChart } from './svg.ts';

function row(cells: (string | number | undefined)[]): string {
  return `| ${cells.map((c) => (c === undefined ? '-' : String(c))).join(' | ')} |`;
}

/** A latency, or "> drain" for one that did not finish within the drain (null once in JSON). */
function ms(value: number | null, drainMs: number): string {
  return value === null || !Number.isFinite(value)
    ? `> ${Math.round(drainMs / 1000)} s drain`
    : `${value} ms`;
}

function triple(c: DbCounts | undefined): string {
  return c ? `${c.statements} / ${c.roundTrips} / ${c.transactions}` : '-';
}

function cpuSplit(c: CpuPerRequest | undefined): string {
  return c ? `${c.server} / ${c.postgres} / ${c.bench}` : '-';
}

function cpuCell(c: MeasuredClaims['cpuMsPerClaim']): string {
  return c ? `${c.total} (${c.api} / ${c.worker} / ${c.postgres})` : '-';
}

function countedSection(counted: CountedClaims): string[] {
  const lines = [
    '',
    `**Database work per claim** (${counted.basis}): statements / round trips / transactions`,
    '',
    row(['Part', 'Jobs per claim', 'Per job', 'Per claim']),
    row(['---', '---:', '---:', '---:']),
    row(['**claim, in all**', '', '', `**${triple(counted.perClaim.total)}**`]),
    row(['API (the bill request)', '', '', triple(counted.perClaim.api)]),
    row(['worker, in all', '', '', triple(counted.perClaim.worker)]),
  ];
  for (const [kind, k] of Object.entries(counted.byKind))
    lines.push(row([`worker: ${kind}`, k.jobsPerClaim, triple(k.perJob), triple(k.perClaim)]));
  lines.push(
    row([
      'worker: outside jobs (takes, leases, wake-ups, periodic tasks)',
      '',
      '',
      triple(counted.workerOutsideJobs),
    ]),
  );
  return lines;
}

function claimsSection(pass: PassResult): string[] {
  const lines: string[] = [];
  const capacity = pass.capacity;
  if (capacity) {
    lines.push(
      '',
      `**Claim capacity by a step load** (bill + issue + submit claim → the answer webhook; a step follows while ≥ ${FOLLOWING * 100} % of its offered rate completes during it): **${capacity.claimsPerSec} claims/s**; CPU per claim in ms, API + worker + PostgreSQL backends (API / worker / PostgreSQL)`,
      '',
      row([
        'Offered',
        'Sent',
        'Completed',
        'Follows',
        'Bill p50',
        'End to end p50',
        'p99',
        'CPU ms per claim',
        'Others % of a core',
        'Load before → after',
      ]),
      row(['---:', '---:', '---:', '---', '---:', '---:', '---:', '---:', '---:', '---']),
    );
    for (const step of capacity.steps)
      lines.push(
        row([
          `${step.offeredRate}/s`,
          `${step.run.sendRate}/s`,
          `**${step.completionsPerSec}/s**`,
          step.following ? 'yes' : '**no**',
          `${step.run.billP50Ms} ms`,
          ms(step.run.endToEndP50Ms, step.run.drainMs),
          ms(step.run.endToEndP99Ms, step.run.drainMs),
          cpuCell(step.cpuMsPerClaim),
          step.cpu.othersPctOfCore,
          `${step.cpu.loadBefore} → ${step.cpu.loadAfter}`,
        ]),
      );
  }
  const runs: [string, ClaimResult, MeasuredClaims | undefined][] = [
    ...(pass.latency ?? []).map((l): [string, ClaimResult, MeasuredClaims] => [
      `${l.share * 100} % of capacity`,
      l.run,
      l,
    ]),
    ...(pass.claimsShared
      ? [
          [`${pass.claimsShared.practices} practices sharing`, pass.claimsShared, undefined] as [
            string,
            ClaimResult,
            undefined,
          ],
        ]
      : []),
  ];
  if (runs.length > 0) {
    lines.push(
      '',
      '**Claim latency**, bill sent → answer webhook received',
      '',
      row([
        'Run',
        'Offered',
        'Sent',
        'Completed',
        'End to end p50',
        'p99',
        'Bill answer p50',
        'p99',
        'Accepted / sent',
        'Unfinished',
        'CPU ms per claim',
        'Others % of a core',
      ]),
      row(['---', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:']),
    );
    for (const [name, c, measured] of runs)
      lines.push(
        row([
          name,
          `${c.offeredRate}/s for ${c.seconds} s`,
          `${c.sendRate}/s`,
          measured ? `${measured.completionsPerSec}/s` : `${c.sustainedClaimsPerSec}/s`,
          `**${ms(c.endToEndP50Ms, c.drainMs)}**`,
          ms(c.endToEndP99Ms, c.drainMs),
          `${c.billP50Ms} ms`,
          `${c.billP99Ms} ms`,
          `${c.claimsAccepted} / ${c.billsSent}`,
          c.unfinished,
          measured ? cpuCell(measured.cpuMsPerClaim) : '-',
          measured ? measured.cpu.othersPctOfCore : '-',
        ]),
      );
  }
  return lines;
}

function passSection(pass: PassResult): string[] {
  const lines = [`## ${pass.database === 'postgres' ? 'PostgreSQL' : 'Embedded PGlite'}`, ''];
  if (pass.error) lines.push(`**The pass failed:** ${pass.error}`, '');
  if (pass.scenarios.length > 0) {
    lines.push(
      row([
        'Scenario',
        'Service req/s',
        'p50 ms',
        'p99 ms',
        'Baseline req/s',
        'p50 ms',
        'p99 ms',
        'Ratio',
        'Failed answers (svc/base)',
        'Statements / round trips / transactions per request (svc; base)',
        'CPU ms per request: server / PostgreSQL / bench (svc; base)',
      ]),
      row(['---', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---', '---']),
    );
    for (const s of pass.scenarios) {
      lines.push(
        row([
          s.title,
          s.service.reqPerSec,
          s.service.p50Ms,
          s.service.p99Ms,
          s.baseline.reqPerSec,
          s.baseline.p50Ms,
          s.baseline.p99Ms,
          `**${s.ratio.toFixed(2)}×**`,
          `${s.failures.service}/${s.failures.baseline}`,
          `${triple(s.perRequest.service)}; ${triple(s.perRequest.baseline)}`,
          `${cpuSplit(s.cpuPerRequest.service)}; ${cpuSplit(s.cpuPerRequest.baseline)}`,
        ]),
      );
    }
    lines.push('');
  }
  const { small, large } = pass.invoices;
  if (small)
    lines.push(
      `- Invoices for paging: ${small.invoices.toLocaleString('en')} loaded by SQL in ${small.loadSeconds} s.`,
    );
  if (large) {
    lines.push(
      `- Grown to ${large.invoices.toLocaleString('en')} invoices in ${large.loadSeconds} s (service and baseline).${large.note ? ` **${large.note}.**` : ''}`,
    );
  }
  if (pass.pageLatencyRatio) {
    lines.push(
      `- Page latency large ÷ 10k: service **${pass.pageLatencyRatio.service}×**, baseline ${pass.pageLatencyRatio.baseline}× (${pass.pageLatencyRatio.basis}).`,
    );
  }
  const store = pass.rateLimitStore;
  if (store) {
    lines.push(
      '',
      `**Rate-limit store** (${store.basis}): PostgreSQL ÷ memory **${store.ratio}×**; each count adds ${store.addedP50Ms} ms at p50.`,
      '',
      row(['Store', 'counts/s', 'p50 ms', 'p99 ms']),
      row(['---', '---', '---', '---']),
      row(['memory', store.memory.countsPerSec, store.memory.p50Ms, store.memory.p99Ms]),
      row(['PostgreSQL', store.postgres.countsPerSec, store.postgres.p50Ms, store.postgres.p99Ms]),
    );
  }
  if (pass.counted) lines.push(...countedSection(pass.counted));
  lines.push(...claimsSection(pass));
  const busiest = [...pass.windows].sort((a, b) => b.othersPctOfCore - a.othersPctOfCore)[0];
  if (busiest)
    lines.push(
      '',
      `- Quiet machine: ${pass.windows.length} measured windows; other processes used at most ${busiest.othersPctOfCore} % of a core (${busiest.label}); rule: ≤ ${QUIET.maxOthersPctOfCore} % in each window and a 1-minute load ≤ ${QUIET.maxLoadAtStart} at the start.`,
    );
  const start = pass.start;
  if (start) {
    lines.push('');
    if (start.newDataDirMs !== undefined)
      lines.push(`- Start on a NEW data directory: ${start.newDataDirMs} ms to first 200 from /healthz.`);
    if (start.existingDataDirMs?.length)
      lines.push(`- Start on the EXISTING data directory: ${start.existingDataDirMs.join(', ')} ms.`);
    if (start.firstStartMs !== undefined)
      lines.push(`- Start on a fresh database (migrations included): ${start.firstStartMs} ms.`);
  }
  if (pass.memory) {
    lines.push(
      `- Service peak RSS (VmHWM) at the end of the load: ${pass.memory.servicePeakRssMiB} MiB (current ${pass.memory.serviceRssMiB} MiB)${pass.memory.workerPeakRssMiB !== undefined ? ` (API ${pass.memory.apiPeakRssMiB} MiB, worker ${pass.memory.workerPeakRssMiB} MiB)` : ''}; baseline peak ${pass.memory.baselinePeakRssMiB ?? '-'} MiB.`,
    );
  }
  for (const note of pass.notes) lines.push(`- Note: ${note}`);
  lines.push(
    `- Pass took ${pass.seconds} s; 1-minute load average ${pass.loadAverage.before} before, ${pass.loadAverage.after ?? '-'} after.`,
    '',
  );
  return lines;
}

export function markdown(run: RunResult): string {
  const m = run.machine;
  const lines = [
    `# practice-billing benchmark, ${run.startedAt}`,
    '',
    `Machine: ${m.cpuCount} × ${m.cpuModel}, ${m.totalMemoryGiB} GiB, ${m.platform}, Node ${m.node}. Load average at start ${m.loadAverageAtStart.join(' ')}${m.loadAverageAtEnd ? `, at end ${m.loadAverageAtEnd.join(' ')}` : ''}. Run took ${run.durationSeconds ?? '-'} s.`,
    '',
    'Service and careful baseline measured side by side (autocannon, 32 connections, warm-up discarded, alternating rounds A B A B); figures are medians over rounds, the ratio is the median of per-round service ÷ baseline throughput. A timing target is judged only on a quiet machine (bench/README.md); statement counts always.',
    '',
    '## Targets',
    '',
    row(['Database', 'Target', 'Measured', 'Verdict']),
    row(['---', '---', '---', '---']),
    ...run.targets.map((t) =>
      row([
        t.database,
        t.target,
        t.value,
        t.verdict === 'met' ? 'met' : `**${t.verdict}**${t.busy ? ` (${t.busy.join('; ')})` : ''}`,
      ]),
    ),
    '',
    ...run.passes.flatMap(passSection),
  ];
  if (run.notes.length) lines.push('## Notes', '', ...run.notes.map((n) => `- ${n}`), '');
  return `${lines.join('\n')}\n`;
}

export function writeResults(run: RunResult, dir: string): { json: string; md: string; svg: string } {
  fs.mkdirSync(dir, { recursive: true });
  const stamp = run.startedAt.replace(/:/g, '-').replace(/\.\d+Z$/, 'Z');
  const files = {
    json: path.join(dir, `${stamp}.json`),
    md: path.join(dir, `${stamp}.md`),
    svg: path.join(dir, `${stamp}.svg`),
  };
  fs.writeFileSync(files.json, `${JSON.stringify(run, null, 2)}\n`);
  fs.writeFileSync(files.md, markdown(run));
  fs.writeFileSync(files.svg, ratioChart(run.passes, `practice-billing vs bare baseline, ${run.startedAt}`));
  return files;
}
