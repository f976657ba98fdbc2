// Owns which time zones a practice can be in: the IANA zones this Node's time zone data names
// (canonical names, as Intl.supportedValuesOf lists them) and UTC. The request schema's enum and the
// service's check are this one list, so the OpenAPI document states exactly what is accepted.

export const DEFAULT_TIME_ZONE = 'Africa/Johannesburg';

export const TIME_ZONES: readonly string[] = [...Intl.supportedValuesOf('timeZone'), 'UTC'].sort();

const KNOWN = new Set(TIME_ZONES);

export function isTimeZone(value: string): boolean {
  return KNOWN.has(value);
}
