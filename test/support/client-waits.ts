// The waits the client package schedules between its retries, seen by wrapping the global setTimeout
// and clearTimeout while a test watches: how long each wait was asked for, and whether it ran out or
// was cleared (an abort). A test of the retries judges these instead of how long a call took.

export interface ClientWait {
  ms: number;
  /** 'ran out' once its timer fired, 'cleared' when cleared before; undefined while pending. */
  ended: 'ran out' | 'cleared' | undefined;
}

/**
 * Whether setTimeout was called by the client package's own code (its sources or its build), not by
 * code it calls (fetch): the frame under watchedSet's.
 */
function calledByClient(): boolean {
  const caller = (new Error().stack ?? '').split('\n')[3] ?? '';
  return /[/\\]packages[/\\]client[/\\]/.test(caller);
}

/** Records the client package's timers from now until stop(); onWait hears each as it is scheduled. */
export function watchClientWaits(onWait?: (wait: ClientWait) => void): { waits: ClientWait[]; stop(): void } {
  const originalSet = globalThis.setTimeout;
  const originalClear = globalThis.clearTimeout;
  const waits: ClientWait[] = [];
  const byTimer = new Map<unknown, ClientWait>();
  const watchedSet = (callback: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => {
    if (!calledByClient()) return originalSet(callback, ms, ...args);
    const wait: ClientWait = { ms: ms ?? 0, ended: undefined };
    waits.push(wait);
    const timer = originalSet(() => {
      wait.ended ??= 'ran out';
      callback(...args);
    }, ms);
    byTimer.set(timer, wait);
    onWait?.(wait);
    return timer;
  };
  const watchedClear = (timer?: Parameters<typeof clearTimeout>[0]) => {
    const wait = byTimer.get(timer);
    if (wait) wait.ended ??= 'cleared';
    originalClear(timer);
  };
  globalThis.setTimeout = watchedSet as typeof setTimeout;
  globalThis.clearTimeout = watchedClear as typeof clearTimeout;
  return {
    waits,
    stop() {
      globalThis.setTimeout = originalSet;
      globalThis.clearTimeout = originalClear;
    },
  };
}
