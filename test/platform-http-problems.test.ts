// A Problem names each wrong field once, by the name the caller sent: a line date wrong in two ways is
// one entry with the first reason; a list query with a wrong limit and a cursor no list issued names
// both; a repeated-value query parameter is named `type`, not `type.0`.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { DAY, errorFields, refusedWith } from './billing-fixtures.ts';
import { draftInvoice, lineRequest, newWorld, type World } from './claims-fixtures.ts';
import { describeEachBackend, startService, type TestService, uniqueKey } from './harness.ts';

describeEachBackend('Problems name each field once', (backend) => {
  let svc: TestService;
  let w: World;
  before(async () => {
    svc = await startService(backend);
    w = await newWorld(svc);
  });
  after(async () => {
    await svc.close();
  });

  const dayFromNow = (days: number) =>
    new Date(svc.clock.now().getTime() + days * DAY).toISOString().slice(0, 10);

  test('serviceDateEnd in the future and before serviceDate is one entry, the first reason', async () => {
    const { invoiceId } = await draftInvoice(w);
    const refused = await w.api('POST', `/invoices/${invoiceId}/line-items`, {
      body: lineRequest({ serviceDate: dayFromNow(5), serviceDateEnd: dayFromNow(3) }),
      idempotencyKey: uniqueKey(),
    });
    refusedWith(refused, 422, 'validation_failed');
    assert.deepEqual(errorFields(refused), ['serviceDate', 'serviceDateEnd']);
    const end = refused.body.errors.find((e: { field: string }) => e.field === 'serviceDateEnd');
    assert.match(end.message, /^serviceDateEnd cannot be in the future/);
  });

  test('a wrong limit and a cursor no list issued are both named', async () => {
    const refused = await w.api('GET', '/code-systems?limit=0&cursor=abc');
    refusedWith(refused, 400, 'invalid_request', ['cursor', 'limit']);
    // a cursor alone is still judged by the list
    refusedWith(await w.api('GET', '/code-systems?cursor=abc'), 400, 'invalid_cursor', ['cursor']);
  });

  test('a query parameter is named as sent, not by the position of its value', async () => {
    const refused = await w.api('GET', '/events?type=invoice.amended');
    refusedWith(refused, 400, 'invalid_request', ['type']);
    assert.match(refused.body.detail, /\btype\b/);
    assert.doesNotMatch(refused.text, /type\.0/);
  });
});
