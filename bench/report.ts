// Owns the run's outputs: bench/results/<date>.json with everything measured, the Markdown tables
// (printed and written to <date>.md) and the ratio chart <date>.svg.
import fs from 'node:fs';
import path from 'node:path';
import type { PassResult, RunResult } from './results.ts';
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
      ]),
      row(['---', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:']),
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
  const runs = [pass.claims, pass.claimsAtLatencyRate, pass.claimsShared].filter(
    (c): c is NonNullable<typeof c> => !!c,
  );
  if (runs.length > 0) {
    lines.push(
      '',
      `**Claim pipeline** (bill + issue + submit claim → accepted webhook), one practice${pass.claimsShared ? `; the last row ${pass.claimsShared.practices} practices sharing the load` : ''}`,
      '',
      row([
        'Offered',
        'Sent',
        'Sustained accepted',
        'Overall incl. drain',
        'End to end p50',
        'p99',
        'Bill answer p50',
        'p99',
        'Accepted / sent',
        'Unfinished',
        'Other outcomes',
      ]),
      row(['---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---']),
    );
  }
  for (const c of runs) {
    lines.push(
      row([
        `${c.offeredRate}/s for ${c.seconds} s`,
        `${c.sendRate}/s`,
        `**${c.sustainedClaimsPerSec}/s**`,
        `${c.overallClaimsPerSec}/s`,
        `**${ms(c.endToEndP50Ms, c.drainMs)}**`,
        ms(c.endToEndP99Ms, c.drainMs),
        `${c.billP50Ms} ms`,
        `${c.billP99Ms} ms`,
        `${c.claimsAccepted} / ${c.billsSent}`,
        c.unfinished,
        Object.keys(c.otherOutcomes).length || Object.keys(c.billFailures).length
          ? JSON.stringify({ ...c.otherOutcomes, ...c.billFailures })
          : 'none',
      ]),
    );
  }
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
  lines.push(`- Pass took ${pass.seconds} s.`, '');
  return lines;
}

export function markdown(run: RunResult): string {
  const m = run.machine;
  const lines = [
    `# practice-billing benchmark, ${run.startedAt}`,
    '',
    `Machine: ${m.cpuCount} × ${m.cpuModel}, ${m.totalMemoryGiB} GiB, ${m.platform}, Node ${m.node}. Load average at start ${m.loadAverageAtStart.join(' ')}${m.loadAverageAtEnd ? `, at end ${m.loadAverageAtEnd.join(' ')}` : ''}. Run took ${run.durationSeconds ?? '-'} s.`,
    '',
    'Service and bare baseline measured side by side (autocannon, 32 connections, warm-up discarded, alternating rounds A B A B); figures are medians over rounds, the ratio is the median of per-round service ÷ baseline throughput.',
    '',
    '## Targets',
    '',
    row(['Database', 'Target', 'Measured', 'Verdict']),
    row(['---', '---', '---', '---']),
    ...run.targets.map((t) =>
      row([t.database, t.target, t.value, t.verdict === 'met' ? 'met' : `**${t.verdict}**`]),
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
