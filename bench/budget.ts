// Owns the run's time budget: steps ask whether enough time is left before they start, and a watchdog
// ends the run (after writing what was measured and cleaning up) if it ever overruns.

export class Budget {
  readonly startedAt = Date.now();
  readonly totalMs: number;

  constructor(totalMs: number) {
    this.totalMs = totalMs;
  }

  elapsedMs(): number {
    return Date.now() - this.startedAt;
  }

  remainingMs(): number {
    return this.totalMs - this.elapsedMs();
  }

  /** True when a step expected to take `ms` still fits, keeping `reserveMs` for reports and cleanup. */
  fits(ms: number, reserveMs = 45_000): boolean {
    return this.remainingMs() - reserveMs >= ms;
  }

  /** Calls `onOverrun` when the budget is spent; the timer does not keep the process alive. */
  watchdog(onOverrun: () => void): void {
    setTimeout(onOverrun, Math.max(0, this.remainingMs())).unref();
  }
}
