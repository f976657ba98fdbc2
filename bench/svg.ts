// Owns the results chart: a hand-written SVG of horizontal bars, one per scenario and database, showing
// service throughput ÷ baseline throughput, with the 1.0 line and the brief's ratio targets marked.
import type { PassResult } from './results.ts';
import { TARGETS } from './settings.ts';

const TARGET_OF: Record<string, number> = {
  get_patient: TARGETS.getPatientRatio,
  post_patient: TARGETS.postPatientRatio,
};

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

export function ratioChart(passes: PassResult[], title: string): string {
  const bars = passes.flatMap((pass) =>
    pass.scenarios.map((s) => ({
      label: `${pass.database}: ${s.title}`,
      ratio: s.ratio,
      target: TARGET_OF[s.key],
      color: pass.database === 'postgres' ? '#336791' : '#e07b39',
    })),
  );
  const labelWidth = 430;
  const plotWidth = 420;
  const rowHeight = 26;
  const top = 50;
  const width = labelWidth + plotWidth + 80;
  const height = top + bars.length * rowHeight + 50;
  const max = Math.max(1.2, ...bars.map((b) => b.ratio * 1.1));
  const x = (value: number) => labelWidth + (value / max) * plotWidth;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="10" y="22" font-size="15" font-weight="bold">${escapeXml(title)}</text>`,
    `<text x="10" y="40" fill="#555">Throughput ratio, service ÷ bare baseline (median over rounds); dashed: target</text>`,
  ];
  for (let tick = 0; tick <= max + 1e-9; tick += 0.25) {
    const tx = x(tick).toFixed(1);
    const strong = Math.abs(tick - 1) < 1e-9;
    parts.push(
      `<line x1="${tx}" y1="${top - 4}" x2="${tx}" y2="${top + bars.length * rowHeight}" stroke="${strong ? '#333' : '#ddd'}" stroke-width="${strong ? 1.5 : 1}"/>`,
      `<text x="${tx}" y="${top + bars.length * rowHeight + 16}" text-anchor="middle" fill="#555">${tick.toFixed(2)}</text>`,
    );
  }
  bars.forEach((bar, i) => {
    const y = top + i * rowHeight;
    parts.push(
      `<text x="${labelWidth - 8}" y="${y + 17}" text-anchor="end">${escapeXml(bar.label)}</text>`,
      `<rect x="${labelWidth}" y="${y + 5}" width="${Math.max(0, x(bar.ratio) - labelWidth).toFixed(1)}" height="${rowHeight - 10}" fill="${bar.color}"/>`,
      `<text x="${(x(bar.ratio) + 6).toFixed(1)}" y="${y + 17}">${bar.ratio.toFixed(2)}×</text>`,
    );
    if (bar.target !== undefined) {
      const tx = x(bar.target).toFixed(1);
      parts.push(
        `<line x1="${tx}" y1="${y + 2}" x2="${tx}" y2="${y + rowHeight - 2}" stroke="#c00" stroke-width="2" stroke-dasharray="3,2"/>`,
      );
    }
  });
  parts.push(
    `<text x="${labelWidth}" y="${height - 10}" fill="#555">service/baseline ratio (1.00 = as fast as the baseline)</text>`,
    '</svg>',
  );
  return `${parts.join('\n')}\n`;
}
