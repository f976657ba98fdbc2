// Owns starting OpenTelemetry tracing in a process: the Node SDK, configured by the standard OTEL_*
// variables alone (endpoint, protocol http/protobuf or http/json, service name, sampler), with the
// instrumentations of incoming and outgoing HTTP (node:http), PostgreSQL (pg) and undici (webhook
// deliveries, the insurer). Started before the service's modules are loaded: the pg instrumentation
// patches pg's files as they are first required, so this module requires pg itself once the SDK runs,
// and the service's later `import` gets the patched module from the same cache. Traces only: metrics
// are Prometheus's (src/platform/observability/metrics.ts), logs are pino's. Nothing of the SDK is
// loaded when tracing is off.
import { createRequire } from 'node:module';
import { tracingStarted } from './spans.ts';
import { statementShape } from './statement-shape.ts';

export interface Tracing {
  /** Sends what is still buffered and stops. */
  shutdown(): Promise<void>;
}

const off: Tracing = { shutdown: async () => {} };
let started: Tracing | undefined;

/**
 * Starts tracing once per process when configured (src/platform/config.ts decides); otherwise nothing.
 * `defaultName` names the service unless OTEL_SERVICE_NAME does.
 */
export async function startTracing(
  configured: { serviceName: string | undefined } | undefined,
  defaultName: string,
): Promise<Tracing> {
  if (!configured) return off;
  if (started) return started;
  const { NodeSDK } = await import('@opentelemetry/sdk-node');
  const sdk = new NodeSDK({
    serviceName: configured.serviceName ?? defaultName,
    // Metrics and logs are not exported by OTLP: Prometheus scrapes the metrics, logs go to stdout.
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: await instrumentations(),
  });
  sdk.start();
  tracingStarted();
  // pg's client file is patched when it is required: require it here, after the SDK, so that every
  // later import of pg (an ES module import of a CommonJS package shares the require cache) is traced.
  const require = createRequire(import.meta.url);
  require('pg');
  started = { shutdown: () => sdk.shutdown() };
  return started;
}

/** HTTP in and out (node:http), PostgreSQL (pg) and undici, each told what it must not record. */
async function instrumentations() {
  const [{ HttpInstrumentation }, { PgInstrumentation }, { UndiciInstrumentation }] = await Promise.all([
    import('@opentelemetry/instrumentation-http'),
    import('@opentelemetry/instrumentation-pg'),
    import('@opentelemetry/instrumentation-undici'),
  ]);
  return [
    new HttpInstrumentation({
      // The exports themselves are not traced: the SDK sends them with tracing suppressed.
      // Scrapes and probes are not requests anyone waits on.
      ignoreIncomingRequestHook: (request) => /^\/(metrics|healthz|readyz)(\?|$)/.test(request.url ?? ''),
      // A query string's values may identify a patient (GET /patients?externalId=...): names only.
      startIncomingSpanHook: (request) => {
        const at = (request.url ?? '').indexOf('?');
        return at < 0 ? {} : { 'url.query': queryNamesOnly(request.url!.slice(at + 1)) };
      },
    }),
    new PgInstrumentation({
      // Parameters are never recorded; and since the transaction's frame carries its values inline
      // (SET LOCAL takes no parameters, src/platform/db/transaction.ts), the statement's text is
      // recorded with every literal replaced by a placeholder.
      enhancedDatabaseReporting: false,
      requireParentSpan: true,
      requestHook: (span, { query }) => {
        const text = statementShape(query.text);
        span.setAttribute('db.query.text', text);
        const recorded = (span as { attributes?: Record<string, unknown> }).attributes;
        if (recorded && 'db.statement' in recorded) span.setAttribute('db.statement', text);
      },
    }),
    // An endpoint's address may carry a token in its query string: its values are not recorded.
    new UndiciInstrumentation({
      startSpanHook: (request) => {
        const at = request.path.indexOf('?');
        if (at < 0) return {};
        const query = queryNamesOnly(request.path.slice(at + 1));
        return { 'url.query': query, 'url.full': `${request.origin}${request.path.slice(0, at)}?${query}` };
      },
    }),
  ];
}

/** A query string with every value replaced by REDACTED: which parameters were sent, not what. */
export function queryNamesOnly(query: string): string {
  const params = new URLSearchParams(query);
  return [...new Set(params.keys())].map((name) => `${encodeURIComponent(name)}=REDACTED`).join('&');
}
