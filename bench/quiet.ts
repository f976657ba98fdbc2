// Owns the quiet-machine rule: a timing figure is judged only when it was taken on a machine doing
// nothing else. The load average cannot tell the bench's own work from anyone else's, so it is judged
// once, before the run starts; during the run, each measured window's CPU used by other processes
// (bench/cpu-window.ts: /proc/stat's busy time minus the bench, the service and the PostgreSQL
// processes serving them) is what tells.
import type { CpuUse } from './cpu-window.ts';

export const QUIET = {
  /** The 1-minute load average when the run starts. */
  maxLoadAtStart: 1.0,
  /** Other processes' CPU during a measured window, as a share of one core. */
  maxOthersPctOfCore: 10,
};

export interface QuietVerdict {
  quiet: boolean;
  /** Why not, with the figures; empty when quiet. */
  reasons: string[];
}

/** Judges the run's start and the windows a figure was measured in. */
export function quietness(loadAtStart: number, windows: (CpuUse | undefined)[]): QuietVerdict {
  const reasons: string[] = [];
  if (loadAtStart > QUIET.maxLoadAtStart)
    reasons.push(`1-min load ${loadAtStart} at the start (> ${QUIET.maxLoadAtStart})`);
  for (const w of windows) {
    if (w && w.othersPctOfCore > QUIET.maxOthersPctOfCore)
      reasons.push(
        `others used ${w.othersPctOfCore} % of a core during ${w.label} (> ${QUIET.maxOthersPctOfCore} %)`,
      );
  }
  return { quiet: reasons.length === 0, reasons };
}
