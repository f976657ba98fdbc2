// The shipped Grafana dashboard and Prometheus alert rules (docs/monitoring/) are built on names the
// service exposes: every metric their expressions read is one a scrape of /metrics shows (this
// process's figures and the service's; a worker exposes the same process figures on METRICS_PORT).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { call, startService, type TestService } from './harness.ts';
import { ROOT } from './processes.ts';

const DIR = path.join(ROOT, 'docs', 'monitoring');
/** Series Prometheus makes itself, not the service. */
const PROMETHEUS_OWN = new Set(['up']);
const PROMQL_WORDS = new Set([
  'sum',
  'max',
  'min',
  'avg',
  'rate',
  'irate',
  'increase',
  'histogram_quantile',
  'by',
  'without',
  'and',
  'or',
  'unless',
  'on',
  'ignoring',
]);

/** The metric names a PromQL expression reads: identifiers outside label matchers and groupings. */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/\{[^}]*\}/g, '')
    .replace(/\b(by|without|on|ignoring)\s*\([^)]*\)/g, '')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/"[^"]*"/g, '');
  return [...bare.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)]
    .map((m) => m[0])
    .filter((name) => !PROMQL_WORDS.has(name) && !/^\d/.test(name));
}

function dashboardExprs(): string[] {
  const dashboard = JSON.parse(fs.readFileSync(path.join(DIR, 'grafana-dashboard.json'), 'utf8')) as {
    panels: Array<{ targets: Array<{ expr: string }> }>;
  };
  return dashboard.panels.flatMap((panel) => panel.targets.map((t) => t.expr));
}

function ruleExprs(): string[] {
  const rules = fs.readFileSync(path.join(DIR, 'alerts.rules.yml'), 'utf8');
  return [...rules.matchAll(/^\s+expr: (.+)$/gm)].map((m) => m[1]!);
}

let svc: TestService;
before(async () => {
  svc = await startService('pglite');
});
after(async () => {
  await svc.close();
});

test('every metric the dashboard and the alert rules read is one the service exposes', async () => {
  const scrape = await call(svc.baseUrl, 'GET', '/metrics', { token: svc.adminToken });
  assert.equal(scrape.status, 200, scrape.text);
  const exposed = new Set<string>();
  for (const [, name, type] of scrape.text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    exposed.add(name!);
    if (type === 'histogram')
      for (const suffix of ['_bucket', '_sum', '_count']) exposed.add(`${name}${suffix}`);
  }
  const exprs = [...dashboardExprs(), ...ruleExprs()];
  assert.ok(exprs.length >= 15, `${exprs.length} expressions`);
  const read = new Set(exprs.flatMap(metricNames));
  for (const wanted of [
    'http_request_duration_seconds_bucket',
    'jobs_completed_total',
    'webhook_attempts_total',
    'emails_total',
    'practice_billing_jobs_oldest_waiting_seconds',
  ]) {
    assert.ok(read.has(wanted), `the dashboard and rules read ${wanted}`);
  }
  for (const name of read) {
    if (PROMETHEUS_OWN.has(name)) continue;
    assert.ok(exposed.has(name), `${name} is read by docs/monitoring/ but not exposed`);
  }
});
