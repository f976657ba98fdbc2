// What a traced statement shows of itself (its shape, no literal), and how the environment turns
// tracing, the log format and the metrics port on and off.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/platform/config.ts';
import { currentTraceparent, inSpan } from '../../src/platform/observability/spans.ts';
import { statementShape } from '../../src/platform/observability/statement-shape.ts';
import { queryNamesOnly } from '../../src/platform/observability/tracing.ts';

test('a statement keeps its shape and loses every literal', () => {
  const held = `insert into "audit_events" ("practice_id", "route", "status") values (E'org_1', E'/api/v1/patients', 201);
    INSERT INTO idempotency_keys (response_body) VALUES (E'{"givenNames":["Lerato"],"lastName":"O\\'Neil","birthDate":"1990-02-28"}');
    SELECT $$Dlamini$$, $t$x$t$, 'a''b', -3.5 FROM t2 WHERE id = $1 AND n > 10`;
  const shaped = statementShape(held);
  for (const secret of [
    'Lerato',
    "O\\'Neil",
    'Neil',
    '1990-02-28',
    'Dlamini',
    'org_1',
    "a''b",
    '201',
    '3.5',
    '10',
  ]) {
    assert.ok(!shaped.includes(secret), `${secret} in ${shaped}`);
  }
  assert.match(
    shaped,
    /^insert into "audit_events" \("practice_id", "route", "status"\) values \(\?, \?, \?\);/,
  );
  assert.match(shaped, /FROM t2 WHERE id = \$1 AND n > \?$/);
});

test('a statement whose literal cannot be told apart gives way to its first word', () => {
  assert.equal(statementShape("SELECT 'Lerato"), 'SELECT');
  assert.equal(statementShape('SELECT $tag$Lerato'), 'SELECT');
});

test('tracing is on only with an OTLP endpoint, and OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER=none turn it off', () => {
  assert.equal(loadConfig({}).tracing, undefined);
  assert.deepEqual(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).tracing, {
    serviceName: undefined,
  });
  assert.deepEqual(
    loadConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c/v1/traces', OTEL_SERVICE_NAME: 'billing' })
      .tracing,
    { serviceName: 'billing' },
  );
  assert.equal(
    loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' }).tracing,
    undefined,
  );
  assert.equal(
    loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'none' })
      .tracing,
    undefined,
  );
});

test('LOG_FORMAT, METRICS_TOKEN and METRICS_PORT', () => {
  const defaults = loadConfig({});
  assert.equal(defaults.logFormat, 'json');
  assert.equal(defaults.metricsToken, undefined);
  assert.equal(defaults.metricsPort, undefined);
  const set = loadConfig({ LOG_FORMAT: 'pretty', METRICS_TOKEN: 'mtk_1', METRICS_PORT: '9464' });
  assert.equal(set.logFormat, 'pretty');
  assert.equal(set.metricsToken, 'mtk_1');
  assert.equal(set.metricsPort, 9464);
  assert.throws(() => loadConfig({ LOG_FORMAT: 'xml' }), ConfigError);
  assert.throws(() => loadConfig({ METRICS_PORT: 'ninety' }), ConfigError);
});

test('without tracing started, no trace context is stored and spans only call through', async () => {
  assert.equal(currentTraceparent(), null);
  assert.equal(await inSpan('job', {}, async (span) => (span === undefined ? 'through' : 'span')), 'through');
});

test("a query string's values are not recorded, only its parameters' names", () => {
  assert.equal(
    queryNamesOnly('externalSystem=urn%3Ademo&externalId=MRN-1001'),
    'externalSystem=REDACTED&externalId=REDACTED',
  );
  assert.equal(queryNamesOnly('token=abc&token=def'), 'token=REDACTED');
  assert.equal(queryNamesOnly(''), '');
});
