// What the invoice answers say: a line read at its Location names itself (`object` line_item); issue and
// amend take no input (no body or `{}`) and refuse anything else naming it; the reason an invoice was
// cancelled, entered in error or written off is shown on the invoice and in the audit row.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { refusedWith } from './billing-fixtures.ts';
import {
  claimAndDrain,
  getInvoice,
  issuedInvoice,
  lineRequest,
  newWorld,
  readClaim,
  sendClaim,
  type World,
} from './claims-fixtures.ts';
import { describeEachBackend, startService, type TestService, uniqueKey } from './harness.ts';

describeEachBackend('invoice answers', (backend) => {
  let svc: TestService;
  let w: World;
  before(async () => {
    svc = await startService(backend);
    w = await newWorld(svc);
  });
  after(async () => {
    await svc.close();
  });

  const auditRowsOf = async (invoiceId: string) =>
    (await svc.admin('GET', `/practices/${w.practiceId}/audit-events?limit=100`)).body.data.filter(
      (e: { resourceId: string | null }) => e.resourceId === invoiceId,
    );

  test('a line read at its Location is the line in lineItems, with object line_item', async () => {
    const { invoiceId } = await issuedInvoice(w);
    assert.equal((await w.api('POST', `/invoices/${invoiceId}/amend`)).status, 200);
    const added = await w.api('POST', `/invoices/${invoiceId}/line-items`, {
      body: lineRequest(),
      idempotencyKey: uniqueKey(),
    });
    assert.equal(added.status, 201, added.text);
    const location = new URL(added.headers.get('location')!);
    const read = await w.api('GET', location.pathname.replace('/api/v1', ''));
    assert.equal(read.status, 200, read.text);
    assert.deepEqual(read.body, { object: 'line_item', ...added.body.lineItems.at(-1) });
  });

  test('issue and amend take no body or {}; anything else is 422 naming it, and nothing changes', async () => {
    const { invoiceId } = await issuedInvoice(w);
    const amendWrong = await w.api('POST', `/invoices/${invoiceId}/amend`, { body: { reason: 'x' } });
    refusedWith(amendWrong, 422, 'validation_failed', ['reason']);
    refusedWith(
      await w.api('POST', `/invoices/${invoiceId}/amend`, { body: ['x'] }),
      422,
      'validation_failed',
      ['body'],
    );
    assert.equal((await getInvoice(w, invoiceId)).status, 'issued');
    const amended = await w.api('POST', `/invoices/${invoiceId}/amend`, { body: {} });
    assert.equal(amended.status, 200, amended.text);
    const issueWrong = await w.api('POST', `/invoices/${invoiceId}/issue`, {
      body: { dueDate: '2030-01-01' },
    });
    refusedWith(issueWrong, 422, 'validation_failed', ['dueDate']);
    assert.equal((await getInvoice(w, invoiceId)).status, 'amending');
    const issued = await w.api('POST', `/invoices/${invoiceId}/issue`, { rawBody: '' });
    assert.equal(issued.status, 200, issued.text);
    assert.equal(issued.body.status, 'issued');
    // The operator's issue and amend follow the same rule.
    const base = `/practices/${w.practiceId}/invoices/${invoiceId}`;
    refusedWith(await svc.admin('POST', `${base}/amend`, { note: 'x' }), 422, 'validation_failed', ['note']);
    assert.equal((await svc.admin('POST', `${base}/amend`, {})).status, 200);
  });

  test("a claim reversal's reason is on the claim and in the audit row", async () => {
    const { invoiceId } = await issuedInvoice(w);
    const accepted = await claimAndDrain(w, invoiceId);
    assert.equal(accepted.status, 'accepted');
    assert.equal(accepted.reversalReason, null, 'null until a reversal is asked for');
    const reversing = await sendClaim(w, invoiceId, 'claim/reverse', {
      reason: 'Billed under the wrong plan',
    });
    assert.equal(reversing.reversalReason, 'Billed under the wrong plan');
    await svc.worker.drain();
    const reversed = await readClaim(w, invoiceId);
    assert.equal(reversed.status, 'reversed');
    assert.equal(reversed.reversalReason, 'Billed under the wrong plan');
    const rows = (await auditRowsOf(invoiceId)).filter(
      (e: { route: string }) => e.route === '/api/v1/invoices/:invoiceId/claim/reverse',
    );
    assert.equal(rows.length, 1);
    assert.equal(rows[0].reason, 'Billed under the wrong plan');
  });

  test('the closing reason is on the invoice and in the audit row: cancel, entered in error, write-off', async () => {
    const open = await issuedInvoice(w);
    assert.equal((await getInvoice(w, open.invoiceId)).closingReason, null, 'null while open');

    const cancelled = await w.api('POST', `/invoices/${open.invoiceId}/cancel`, {
      body: { reason: 'Billed the wrong patient' },
    });
    assert.equal(cancelled.status, 200, cancelled.text);
    assert.equal(cancelled.body.closingReason, 'Billed the wrong patient');
    assert.equal((await getInvoice(w, open.invoiceId)).closingReason, 'Billed the wrong patient');

    const inError = await issuedInvoice(w);
    const marked = await svc.admin(
      'POST',
      `/practices/${w.practiceId}/invoices/${inError.invoiceId}/entered-in-error`,
      { reason: 'Duplicate of another invoice' },
    );
    assert.equal(marked.status, 200, marked.text);
    assert.equal(marked.body.closingReason, 'Duplicate of another invoice');

    const owing = await issuedInvoice(w);
    const written = await svc.admin(
      'POST',
      `/practices/${w.practiceId}/invoices/${owing.invoiceId}/write-off`,
      {
        reason: 'Patient emigrated',
      },
    );
    assert.equal(written.status, 200, written.text);
    assert.equal((await getInvoice(w, owing.invoiceId)).closingReason, 'Patient emigrated');

    for (const [invoiceId, route, reason] of [
      [open.invoiceId, '/api/v1/invoices/:invoiceId/cancel', 'Billed the wrong patient'],
      [
        inError.invoiceId,
        '/admin/v1/practices/:practiceId/invoices/:invoiceId/entered-in-error',
        'Duplicate of another invoice',
      ],
      [owing.invoiceId, '/admin/v1/practices/:practiceId/invoices/:invoiceId/write-off', 'Patient emigrated'],
    ] as const) {
      const rows = (await auditRowsOf(invoiceId)).filter((e: { route: string }) => e.route === route);
      assert.equal(rows.length, 1, route);
      assert.equal(rows[0].outcome, 'succeeded');
      assert.equal(rows[0].reason, reason, route);
    }
  });
});
