import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { apiClient, startService, type TestService } from './harness.ts';

const path = '/patients?externalSystem=urn%3Ax&externalId=1';

describe('caller address behind a proxy', () => {
  let direct: TestService;
  let proxied: TestService;
  before(async () => {
    direct = await startService('pglite');
    proxied = await startService('pglite', { env: { TRUST_PROXY: '127.0.0.1' } });
  });
  after(async () => {
    await direct.close();
    await proxied.close();
  });

  test('X-Forwarded-For names the caller only when the proxy is trusted (TRUST_PROXY)', async () => {
    const forwarded = { 'x-forwarded-for': '203.0.113.5' };
    const trusted = await proxied.newPractice({ allowedIps: ['203.0.113.0/24'] });
    assert.equal((await apiClient(proxied, trusted.key)('GET', path, { headers: forwarded })).status, 200);
    assert.equal((await apiClient(proxied, trusted.key)('GET', path)).status, 401);

    const untrusted = await direct.newPractice({ allowedIps: ['203.0.113.0/24'] });
    assert.equal((await apiClient(direct, untrusted.key)('GET', path, { headers: forwarded })).status, 401);
  });
});
