// CI's second run of the suite (.ci/run: the embedded database, test clocks just before midnight UTC,
// TEST_MIDNIGHT_RUN=true) is there for what depends on the calendar. A test whose subject is processes
// and faults (SIGKILLs and restarts, a stopped database, start-up) reads no practice date; it ran on
// both databases in CI's first run, and is left out of the second to keep CI within its time bound.

/** The skip reason for such a test in CI's midnight run; false in any other run. */
export const skipInMidnightRun: string | false =
  process.env.TEST_MIDNIGHT_RUN === 'true' &&
  "a process and fault test: run in CI's first run, on both databases";
