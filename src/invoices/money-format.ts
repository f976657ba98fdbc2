// Owns how an amount of money is written, in its two presentations: the API's words (an invoice's
// balanceExplanation, the notification's message) write `ZAR 1234.56`; the printed account writes
// `R 1 234.56`, rand as R and thousands apart. Amounts are whole minor units.

function majorUnits(cents: number, thousandsApart: boolean): string {
  const abs = Math.abs(Math.round(cents));
  const whole = Math.floor(abs / 100).toString();
  const grouped = thousandsApart ? whole.replace(/\B(?=(\d{3})+(?!\d))/g, ' ') : whole;
  return `${grouped}.${String(abs % 100).padStart(2, '0')}`;
}

/** The API's words: `ZAR 1234.56`, `-USD 0.05`. */
export function formatAmount(cents: number, currency: string): string {
  const sign = cents < 0 ? '-' : '';
  return `${sign}${currency} ${majorUnits(cents, false)}`;
}

/** The printed account: `R 1 234.56` for rand, `-USD 0.05` for another currency. */
export function formatPrintedAmount(cents: number, currency: string): string {
  const sign = cents < 0 ? '-' : '';
  const symbol = currency === 'ZAR' ? 'R' : currency;
  return `${sign}${symbol} ${majorUnits(cents, true)}`;
}
