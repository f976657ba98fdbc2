// Owns reading CPU time from Linux's /proc: a process's user + system time (all its threads) from
// /proc/<pid>/stat, and the whole machine's busy time from /proc/stat. Times are in milliseconds;
// a process that has exited reads as undefined.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';

function clockTicks(): number {
  try {
    const ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    return Number.isFinite(ticks) && ticks > 0 ? ticks : 100;
  } catch {
    return 100;
  }
}

const MS_PER_TICK = 1000 / clockTicks();

/** utime + stime of a process, in ms; undefined once it has exited (or when /proc is not there). */
export function processCpuMs(pid: number): number | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count fields after its last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields[0] is field 3 (state), so utime (14) and stime (15) are fields[11] and fields[12].
    return (Number(fields[11]) + Number(fields[12])) * MS_PER_TICK;
  } catch {
    return undefined;
  }
}

/** CPU time all cores spent busy (everything but idle and iowait) since boot, in ms. */
export function machineBusyMs(): number | undefined {
  try {
    const line = fs.readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
    const ticks = line.trim().split(/\s+/).slice(1).map(Number);
    const [user, nice, system, idle, iowait, irq, softirq, steal] = ticks;
    const busy = user! + nice! + system! + (irq ?? 0) + (softirq ?? 0) + (steal ?? 0);
    return Number.isFinite(busy) && idle !== undefined && iowait !== undefined
      ? busy * MS_PER_TICK
      : undefined;
  } catch {
    return undefined;
  }
}

/** The 1-minute load average, two decimals. */
export function loadAverage1(): number {
  return Math.round(os.loadavg()[0]! * 100) / 100;
}
