import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { billedInvoice, billingPractice } from './billing-fixtures.ts';
import { describeEachBackend, startService, type TestService } from './harness.ts';

describeEachBackend('operator notifications', (backend) => {
  let svc: TestService;
  before(async () => {
    svc = await startService(backend);
  });
  after(async () => {
    await svc.close();
  });

  test('issuing an invoice tells the patient; the operator reads it newest first, paged', async () => {
    const practice = await billingPractice(svc);
    const first = await billedInvoice(svc, practice, { issue: true });
    const second = await billedInvoice(svc, practice, { issue: true });
    const page1 = await svc.admin('GET', `/practices/${practice.practiceId}/notifications?limit=1`);
    assert.equal(page1.status, 200, page1.text);
    assert.equal(page1.body.data.length, 1);
    assert.equal(page1.body.hasMore, true);
    const [newest] = page1.body.data;
    assert.equal(newest.recipient, 'patient');
    assert.equal(newest.kind, 'invoice_issued');
    assert.equal(newest.subjectId, second.id);
    assert.equal(newest.patientId, second.patientId);
    assert.match(newest.message, new RegExp(second.number));
    const page2 = await svc.admin(
      'GET',
      `/practices/${practice.practiceId}/notifications?limit=1&cursor=${encodeURIComponent(page1.body.nextCursor)}`,
    );
    assert.deepEqual(
      page2.body.data.map((n: { subjectId: string }) => n.subjectId),
      [first.id],
    );
    assert.equal(page2.body.hasMore, false);
  });

  test("another practice's notifications are not listed, and an unknown practice is 404", async () => {
    const practice = await billingPractice(svc);
    await billedInvoice(svc, practice, { issue: true });
    const other = await billingPractice(svc);
    const list = await svc.admin('GET', `/practices/${other.practiceId}/notifications`);
    assert.deepEqual(list.body.data, []);
    assert.equal((await svc.admin('GET', '/practices/org_nope/notifications')).status, 404);
  });
});
