// Run by test/harness-leaks.test.ts as a test file of its own: a block that starts a service and,
// with LEAVE_RUNNING=1, does not stop it.
import { after, before, test } from 'node:test';
import { describeEachBackend, startService, type TestService } from '../harness.ts';

describeEachBackend('a block with a service', (backend) => {
  let svc: TestService;
  before(async () => {
    svc = await startService(backend);
  });
  after(async () => {
    if (process.env.LEAVE_RUNNING !== '1') await svc.close();
  });
  test('answers', async () => {
    const answer = await fetch(`${svc.baseUrl}/api/v1/patients`);
    if (answer.status !== 401) throw new Error(`expected 401, got ${answer.status}`);
  });
});
