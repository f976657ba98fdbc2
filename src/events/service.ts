// The event feed's reads: events kept for EVENT_RETENTION_DAYS, listed in the order they committed.
// They have no rule beyond the store's, which they name here for the routes.
export { EVENT_RETENTION_DAYS, eventRow, listEventRows, retainedSince } from './store.ts';
