// Owns the set of country codes an address may carry: the ISO 3166-1 alpha-2 codes officially
// assigned, from the i18n-iso-countries package (XK, a user-assigned code, is not one of them). Its
// codes module alone: the package's entry also loads the country names in every language.
import countries from 'i18n-iso-countries/index.js';

export const COUNTRY_CODES: readonly string[] = Object.keys(countries.getAlpha2Codes())
  .filter((code) => code !== 'XK')
  .sort();
