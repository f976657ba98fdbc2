// Practice prices and practitioner favourites as the operator keeps them: the reads and writes the
// admin routes make, through the price store, and the checks of a price's practitioner and code.
export { practitionerExists } from '../auth/performer-store.ts';
export { resolveCodes } from '../code-systems/service.ts';
export { deletePrice, listPrices, upsertPrice } from './store.ts';
