// Owns "now". Services ask the clock instead of calling Date directly so tests can move time.
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** The calendar date (YYYY-MM-DD) at instant `at` in an IANA time zone. */
export function dateIn(timeZone: string, at: Date): string {
  return new Intl.DateTimeFormat('en-CA', {
    timeZone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
  }).format(at);
}
