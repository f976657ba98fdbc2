import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  apiClient,
  describeEachBackend,
  patientBody,
  startService,
  type TestService,
  uniqueKey,
} from './harness.ts';

describeEachBackend('smoke', (backend) => {
  let svc: TestService;
  before(async () => {
    svc = await startService(backend);
  });
  after(async () => {
    await svc.close();
  });

  test('a patient can be registered and read back', async () => {
    const practice = await svc.newPractice();
    const api = apiClient(svc, practice.key);
    const created = await api('POST', '/patients', { body: patientBody(), idempotencyKey: uniqueKey() });
    assert.equal(created.status, 201, created.text);
    const read = await api('GET', `/patients/${created.body.id}`);
    assert.equal(read.status, 200);
    assert.deepEqual(read.body, created.body);
  });
});
