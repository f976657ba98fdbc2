import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { accountPatient, accountPractice, issuedAccount, pdfPages } from './accounts-fixtures.ts';
import { describeEachBackend, startService, type TestService, uniqueKey } from './harness.ts';
import { attachmentsOf, headerOf, startSmtp, type TestSmtp, textOf } from './support/smtp.ts';
import { addEndpoint, billVisit, Receiver } from './webhooks-fixtures.ts';

async function notificationOf(svc: TestService, practiceId: string, invoiceId: string) {
  const list = await svc.admin('GET', `/practices/${practiceId}/notifications`);
  assert.equal(list.status, 200, list.text);
  return (list.body.data as Array<Record<string, string>>).filter((n) => n.subjectId === invoiceId);
}

describeEachBackend('the patient is told by e-mail', (backend) => {
  let smtp: TestSmtp;
  let refusing: TestSmtp;
  let svc: TestService;
  let refused: TestService;
  before(async () => {
    smtp = await startSmtp();
    refusing = await startSmtp({ refuse: true });
    const from = { MAIL_FROM: 'Practice Accounts <accounts@practice.example>' };
    svc = await startService(backend, { env: { SMTP_URL: smtp.url, ...from } });
    refused = await startService(backend, { env: { SMTP_URL: refusing.url, ...from } });
  });
  after(async () => {
    await svc.close();
    await refused.close();
    await smtp.close();
    await refusing.close();
  });

  test('one message per issue, with the account attached; the body says little and no diagnosis', async () => {
    const practice = await accountPractice(svc);
    const email = `patient.${uniqueKey()}@example.org`;
    const { patientId } = await accountPatient(practice, { email, lastName: 'Dlamini' });
    const invoice = await issuedAccount(svc, practice, patientId);
    const before = (await notificationOf(svc, practice.practiceId, invoice.id))[0]!;
    assert.equal(before.delivery, 'queued', 'nothing is sent inside the issuing transaction');
    await svc.worker.drain();
    await svc.worker.drain();
    const mine = () => smtp.received.filter((m) => m.to.includes(email));
    assert.equal(mine().length, 1, 'exactly one message');
    const [mail] = mine();
    assert.match(headerOf(mail!.raw, 'subject') ?? '', new RegExp(`Tax invoice ${invoice.number} from`));
    const text = textOf(mail!.raw);
    assert.match(text, new RegExp(`tax invoice ${invoice.number}`));
    assert.match(text, /Amount due: R \d/);
    assert.match(text, new RegExp(`Due date: ${invoice.dueDate}`));
    for (const secret of ['J06.9', 'Dlamini', 'Lerato', email])
      assert.ok(!text.includes(secret), `no ${secret} in the body`);
    const [pdf, ...more] = attachmentsOf(mail!.raw);
    assert.equal(more.length, 0);
    assert.equal(pdf!.filename, `${invoice.number}.pdf`);
    assert.equal(pdf!.contentType, 'application/pdf');
    const pages = (await pdfPages(pdf!.bytes)).join('\n');
    assert.ok(pages.includes(`Tax invoice number: ${invoice.number}`), pages);
    assert.ok(pages.includes('J06.9'));
    const after = (await notificationOf(svc, practice.practiceId, invoice.id))[0]!;
    assert.equal(after.delivery, 'sent');
    assert.match(after.deliveryDetail ?? '', /^250/);
    assert.ok(!JSON.stringify(after).includes(email), 'the notification does not show the address');
  });

  test('issuing again after an amendment sends the corrected account, once', async () => {
    const practice = await accountPractice(svc);
    const email = `patient.${uniqueKey()}@example.org`;
    const { patientId } = await accountPatient(practice, { email });
    const invoice = await issuedAccount(svc, practice, patientId);
    await svc.worker.drain();
    const amend = await practice.api('POST', `/invoices/${invoice.id}/amend`, {
      idempotencyKey: uniqueKey(),
    });
    assert.equal(amend.status, 200, amend.text);
    const again = await practice.api('POST', `/invoices/${invoice.id}/issue`, {
      idempotencyKey: uniqueKey(),
    });
    assert.equal(again.status, 200, again.text);
    await svc.worker.drain();
    const mine = smtp.received.filter((m) => m.to.includes(email));
    assert.equal(mine.length, 2, 'one message per issue');
    assert.match(headerOf(mine[1]!.raw, 'subject') ?? '', /^Corrected /);
    assert.match(textOf(mine[1]!.raw), /It replaces the one sent before/);
    const notes = await notificationOf(svc, practice.practiceId, invoice.id);
    assert.deepEqual(
      notes.map((n) => n.delivery),
      ['sent', 'sent'],
    );
  });

  test('a patient with no e-mail address: recorded so by the issue itself, nothing sent, the issue stands', async () => {
    const practice = await accountPractice(svc);
    const { patientId } = await accountPatient(practice);
    const count = smtp.received.length;
    const invoice = await issuedAccount(svc, practice, patientId);
    // Known when the invoice is issued: recorded then, before any job runs, and no job is queued.
    const [note] = await notificationOf(svc, practice.practiceId, invoice.id);
    assert.equal(note!.delivery, 'no_address');
    assert.equal(note!.deliveryDetail, 'no e-mail address');
    assert.equal(await svc.worker.drain(), 0, 'no e-mail job was queued');
    assert.equal(smtp.received.length, count);
    const read = await practice.api('GET', `/invoices/${invoice.id}`);
    assert.equal(read.body.status, 'issued');
  });

  test('an e-mail contact point that is not an address fails the message at the issue, not the issue', async () => {
    const practice = await accountPractice(svc);
    const { patientId } = await accountPatient(practice, { email: 'not an address' });
    const invoice = await issuedAccount(svc, practice, patientId);
    const [note] = await notificationOf(svc, practice.practiceId, invoice.id);
    assert.equal(note!.delivery, 'failed');
    assert.match(note!.deliveryDetail ?? '', /not an e-mail address/);
    const events = await practice.api('GET', '/events?type=invoice.delivery_failed');
    assert.deepEqual(
      events.body.data.map((e: { data: { id: string } }) => e.data.id),
      [invoice.id],
    );
    assert.equal(await svc.worker.drain(), 0, 'no e-mail job was queued');
  });

  test('an address removed before the e-mail job runs: the job records no address, nothing sent', async () => {
    const practice = await accountPractice(svc);
    const { patientId } = await accountPatient(practice, { email: `patient.${uniqueKey()}@example.org` });
    const count = smtp.received.length;
    const invoice = await issuedAccount(svc, practice, patientId);
    const [queued] = await notificationOf(svc, practice.practiceId, invoice.id);
    assert.equal(queued!.delivery, 'queued');
    const patched = await practice.api('PATCH', `/patients/${patientId}`, { body: { contactPoints: [] } });
    assert.equal(patched.status, 200, patched.text);
    await svc.worker.drain();
    const [note] = await notificationOf(svc, practice.practiceId, invoice.id);
    assert.equal(note!.delivery, 'no_address');
    assert.equal(smtp.received.length, count);
  });

  test("a mail server's refusal fails the message; invoice.delivery_failed names the invoice only", async () => {
    const practice = await accountPractice(refused);
    const email = `patient.${uniqueKey()}@example.org`;
    const { patientId } = await accountPatient(practice, { email });
    const invoice = await issuedAccount(refused, practice, patientId);
    await refused.worker.drain();
    assert.equal(refusing.received.length, 0);
    const [note] = await notificationOf(refused, practice.practiceId, invoice.id);
    assert.equal(note!.delivery, 'failed');
    assert.match(note!.deliveryDetail ?? '', /550/);
    const events = await practice.api('GET', '/events?type=invoice.delivery_failed');
    assert.equal(events.status, 200, events.text);
    assert.equal(events.body.data.length, 1);
    assert.equal(events.body.data[0].data.object, 'invoice');
    assert.equal(events.body.data[0].data.id, invoice.id);
    assert.ok(!events.text.includes(email), 'the event does not carry the address');
    const read = await practice.api('GET', `/invoices/${invoice.id}`);
    assert.equal(read.body.status, 'issued');
  });
});

describeEachBackend('the practice is told by e-mail', (backend) => {
  let smtp: TestSmtp;
  let svc: TestService;
  let receiver: Receiver;
  before(async () => {
    smtp = await startSmtp();
    svc = await startService(backend, { env: { SMTP_URL: smtp.url } });
    receiver = await Receiver.forService(svc);
    receiver.reply = () => ({ status: 410, body: 'gone' });
  });
  after(async () => {
    await receiver.close();
    await svc.close();
    await smtp.close();
  });

  test("a webhook endpoint turned off is e-mailed to the practice's address, once; without one it is recorded", async () => {
    const practice = await svc.newPractice();
    const email = `ops.${uniqueKey()}@practice.example`;
    const patched = await svc.admin('PATCH', `/practices/${practice.practiceId}`, { email });
    assert.equal(patched.status, 200, patched.text);
    const ep = await addEndpoint(svc, practice.practiceId, receiver, { eventTypes: ['invoice.issued'] });
    await billVisit(svc, practice);
    await svc.worker.drain();
    await svc.worker.drain();
    const mine = smtp.received.filter((m) => m.to.includes(email));
    assert.equal(mine.length, 1);
    assert.match(headerOf(mine[0]!.raw, 'subject') ?? '', /webhook endpoint was turned off/);
    assert.ok(textOf(mine[0]!.raw).includes(ep.body.url), 'the message names the endpoint');
    const list = await svc.admin('GET', `/practices/${practice.practiceId}/notifications`);
    const notice = (list.body.data as Array<Record<string, string>>).find(
      (n) => n.kind === 'webhook_endpoint_disabled',
    );
    assert.equal(notice?.delivery, 'sent');

    const silent = await svc.newPractice();
    await addEndpoint(svc, silent.practiceId, receiver, { eventTypes: ['invoice.issued'] });
    await billVisit(svc, silent);
    await svc.worker.drain();
    const theirs = await svc.admin('GET', `/practices/${silent.practiceId}/notifications`);
    const unsent = (theirs.body.data as Array<Record<string, string>>).find(
      (n) => n.kind === 'webhook_endpoint_disabled',
    );
    assert.equal(unsent?.delivery, 'no_address');
  });
});

describe('a mail server that is down', () => {
  let svc: TestService;
  before(async () => {
    const gone = await startSmtp();
    const url = gone.url;
    await gone.close();
    svc = await startService('pglite', { env: { SMTP_URL: url } });
  });
  after(async () => {
    await svc.close();
  });

  test('the message stays queued with the reason and is tried again later', async () => {
    const practice = await accountPractice(svc);
    const { patientId } = await accountPatient(practice, { email: 'someone@example.org' });
    const invoice = await issuedAccount(svc, practice, patientId);
    await svc.worker.drain();
    const [note] = await notificationOf(svc, practice.practiceId, invoice.id);
    assert.equal(note!.delivery, 'queued');
    assert.match(note!.deliveryDetail ?? '', /try 1 of 6 failed \(the mail server could not be reached/);
    svc.clock.advance(2 * 60_000);
    await svc.worker.drain();
    const [later] = await notificationOf(svc, practice.practiceId, invoice.id);
    assert.match(later!.deliveryDetail ?? '', /try 2 of 6 failed/);
  });
});

describeEachBackend('without SMTP_URL: the outbox', (backend) => {
  let svc: TestService;
  before(async () => {
    svc = await startService(backend);
  });
  after(async () => {
    await svc.close();
  });

  test('the message a patient would receive is kept: to, subject, time, text and the attached account', async () => {
    const practice = await accountPractice(svc);
    const email = `patient.${uniqueKey()}@example.org`;
    const { patientId } = await accountPatient(practice, { email });
    const invoice = await issuedAccount(svc, practice, patientId);
    await svc.worker.drain();
    const outbox = await svc.admin('GET', `/practices/${practice.practiceId}/outbox`);
    assert.equal(outbox.status, 200, outbox.text);
    assert.equal(outbox.body.data.length, 1);
    const [message] = outbox.body.data;
    assert.equal(message.to, email);
    assert.match(message.subject, new RegExp(invoice.number));
    assert.match(message.text, /Amount due/);
    assert.equal(message.attachment.filename, `${invoice.number}.pdf`);
    assert.ok(message.createdAt);
    const [note] = await notificationOf(svc, practice.practiceId, invoice.id);
    assert.equal(note!.delivery, 'sent');
    assert.match(note!.deliveryDetail ?? '', /outbox/);
    const response = await fetch(
      `${svc.baseUrl}/admin/v1/practices/${practice.practiceId}/outbox/${message.id}/attachment`,
      { headers: { authorization: `Bearer ${svc.adminToken}` } },
    );
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), 'application/pdf');
    const bytes = new Uint8Array(await response.arrayBuffer());
    assert.equal(bytes.length, message.attachment.size);
    const pages = (await pdfPages(bytes)).join('\n');
    assert.ok(pages.includes(`Tax invoice number: ${invoice.number}`), pages);
    const other = await svc.admin('GET', `/practices/${practice.practiceId}/outbox/mail_nope/attachment`);
    assert.equal(other.status, 404);
  });
});
