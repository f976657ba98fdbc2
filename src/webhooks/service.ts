// The webhook reads the operator's routes make: endpoints, those that take an event type, an event,
// its attempts and an endpoint's, and the events not delivered since a time; and the cancelling of
// retries a recovery replaces. No rule of their own.
export {
  type AttemptRow,
  cancelPendingDeliveries,
  endpointAttempts,
  endpointsTakingEvent,
  eventAttempts,
  findEvent,
  listEndpoints,
  undeliveredEventsSince,
} from './store.ts';
