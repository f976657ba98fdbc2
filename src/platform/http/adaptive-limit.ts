// Owns the number of API requests a process serves at once when it is told a latency target: a limit
// that follows what the machine finishes, by additive increase and multiplicative decrease. A fixed
// limit keeps the same number of requests inside whatever the machine's pace, so their latency is
// that number over the pace (Little's law) and grows without bound as the pace falls (the worker, the
// database or anything else taking the cores). Here every answered request is a sample: one slower
// than the target cuts the limit by DECREASE_FACTOR, at most once per round (only a request admitted
// after the last cut may cut again, as TCP cuts once per round trip, so that the requests already
// inside when the machine slowed do not cut it to the floor between them); one within the target adds
// 1/limit, so a whole limit's worth of quick answers adds one. The limit stays between FLOOR (or the
// ceiling, if lower) and the ceiling, the configured LOAD_SHED_MAX_IN_FLIGHT. Without a target the
// limit is the ceiling.
import { performance } from 'node:perf_hooks';

/** What one answer slower than the target leaves of the limit. */
export const DECREASE_FACTOR = 0.9;

/** The fewest requests in flight the limit ever comes down to. */
export const FLOOR = 4;

export class AdaptiveInFlightLimit {
  readonly ceiling: number;
  readonly targetMs: number;
  #limit: number;
  /** When the limit was last cut (performance.now()); admissions before it cannot cut it again. */
  #lastCutAt = Number.NEGATIVE_INFINITY;

  /** ceiling: the most in flight (0: no limit at all); targetMs: the latency target (0: a fixed limit). */
  constructor(ceiling: number, targetMs: number) {
    this.ceiling = ceiling;
    this.targetMs = ceiling > 0 ? targetMs : 0;
    this.#limit = ceiling;
  }

  /** The requests in flight past which the next is refused now; 0 when there is no limit. */
  get current(): number {
    return Math.floor(this.#limit);
  }

  /**
   * An answered request: admitted at admittedAt (performance.now()), answered tookMs later. Requests
   * refused after their admission (a 503) are not samples: they did not run.
   */
  answered(admittedAt: number, tookMs: number, now = performance.now()): void {
    if (this.targetMs <= 0) return;
    if (tookMs <= this.targetMs) {
      this.#limit = Math.min(this.ceiling, this.#limit + 1 / this.#limit);
      return;
    }
    if (admittedAt < this.#lastCutAt) return;
    this.#limit = Math.max(Math.min(FLOOR, this.ceiling), this.#limit * DECREASE_FACTOR);
    this.#lastCutAt = now;
  }
}
