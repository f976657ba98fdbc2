// Owns how amounts, times and statuses are written on screen.
export function money(minor: number, currency: string): string {
  return new Intl.NumberFormat('en-ZA', { style: 'currency', currency, currencyDisplay: 'code' }).format(
    minor / 100,
  );
}

export function dateTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  return new Date(iso).toLocaleString('en-GB', {
    year: 'numeric',
    month: 'short',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    timeZone: 'UTC',
    timeZoneName: 'short',
  });
}

export function words(status: string | null | undefined): string {
  return status ? status.replaceAll('_', ' ') : '—';
}
