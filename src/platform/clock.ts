// Owns "now". Services ask the clock instead of calling Date directly so tests can move time.
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A day of elapsed time, in milliseconds. */
export const DAY_MS = 24 * 60 * 60 * 1000;

// Building an Intl.DateTimeFormat costs far more than formatting with one, and a request may ask for
// dates many times: one formatter per time zone is kept (practices use a handful of zones).
const dateFormats = new Map<string, Intl.DateTimeFormat>();

/** The calendar date (YYYY-MM-DD) at instant `at` in an IANA time zone. */
export function dateIn(timeZone: string, at: Date): string {
  let format = dateFormats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-CA', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
    });
    dateFormats.set(timeZone, format);
  }
  return format.format(at);
}
