// Owns tearing down what the bench made (child processes, temporary directories, databases) exactly
// once, newest first, whether the run ends normally, fails, is interrupted or overruns its budget.
// Child process ids are also kept apart so that even a hard exit kills them (by id, nothing broader).

interface Action {
  name: string;
  run: () => Promise<void> | void;
}

const actions: Action[] = [];
const livePids = new Set<number>();
let cleaning: Promise<void> | undefined;

/** Registers an undo step; the returned function removes it once the resource was released normally. */
export function onCleanup(name: string, run: () => Promise<void> | void): () => void {
  const action = { name, run };
  actions.push(action);
  return () => {
    const index = actions.indexOf(action);
    if (index >= 0) actions.splice(index, 1);
  };
}

export function trackPid(pid: number): void {
  livePids.add(pid);
}

export function untrackPid(pid: number): void {
  livePids.delete(pid);
}

/** The child processes running now (the service, its worker, the baseline). */
export function trackedPids(): number[] {
  return [...livePids];
}

/** Runs every registered step, newest first; a failing step is reported and the rest still run. */
export function runCleanup(): Promise<void> {
  cleaning ??= (async () => {
    while (actions.length > 0) {
      const action = actions.pop()!;
      try {
        await action.run();
      } catch (error) {
        process.stderr.write(`cleanup: ${action.name} failed: ${(error as Error).message}\n`);
      }
    }
  })();
  return cleaning;
}

/** Interrupts run the cleanup then exit; a plain exit still kills any child left, by its id. */
export function installExitHandlers(): void {
  const interrupted = (signal: NodeJS.Signals) => {
    process.stderr.write(`\nbench: ${signal}: cleaning up\n`);
    const force = setTimeout(() => process.exit(130), 30_000);
    force.unref();
    void runCleanup().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  process.on('exit', () => {
    for (const pid of livePids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  });
}
