// The console in a real browser (the headless Chromium of the @sparticuz/chromium package, or
// CHROMIUM_PATH: test/support/browser.ts, driven by playwright-core) against the real service with its
// worker running: sign in with the admin token, find the rejected claim, correct the member number and
// resubmit, see the insurer accept it, redeliver a webhook that failed (a 204 shows as delivered),
// record a payment and then a refund, see a credit owed to the patient, write off (and see what was
// written off) and mark entered in error (each destructive action asks first; a declined confirmation
// does nothing), see that a message about one invoice does not follow to the next, filter the audit
// log, download an invoice's account and read the outbox, and visit every page. A screenshot of each page goes to .tmp/console-screenshots/.
//
// It runs on one database only (PostgreSQL when DATABASE_URL is set, else the embedded one): the
// console only calls the admin API, whose answers on both databases are covered by
// back-office-invoices.test.ts, and a second browser run would double this file's time for nothing new.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { CONSOLE_DIST } from '../src/console/serve.ts';
import { pdfPages } from './accounts-fixtures.ts';
import { billVisit, type Json, newPatient, type World } from './claims-fixtures.ts';
import { apiClient, patientBody, startService, type TestService, uniqueKey } from './harness.ts';
import { browser } from './support/browser.ts';
import { addEndpoint, Receiver } from './webhooks-fixtures.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const SHOTS = path.join(ROOT, '.tmp', 'console-screenshots');
/** Mid-morning in Johannesburg: the whole run falls on one calendar day there. */
const PINNED = Date.parse('2026-03-10T08:00:00Z');

let svc: TestService;
let receiver: Receiver;
let context: BrowserContext;
let page: Page;
let userDataDir: string;
let w: World;
let practiceName: string;
let rejectedInvoice: Json;
let draftInvoice: Json;
let owingInvoice: Json;
let mistakenInvoice: Json;
let creditInvoice: Json;
let practiceKeyId: string;
/** Every confirmation the console asked for, in order; each is accepted unless `dismissNext` is set. */
const confirmations: string[] = [];
let dismissNext = false;

/** Waits until the console has asked a confirmation matching `question`. */
async function confirmed(question: RegExp): Promise<void> {
  await eventually(async () => confirmations.some((q) => question.test(q)), `a confirmation ${question}`);
}

/** The amount, in cents, of a fact (a money field) the invoice page shows under `label`. */
async function invoiceFact(label: string): Promise<number> {
  const text = await page.locator('dl.facts div').filter({ hasText: label }).locator('dd').textContent();
  return Number((text ?? '').replace(/\D/g, ''));
}

/** How many facts the invoice page shows under `label` (0 when it leaves the field out). */
function invoiceFactCount(label: string): Promise<number> {
  return page.locator('dl.facts div').filter({ hasText: label }).count();
}

async function shot(name: string): Promise<void> {
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
}

/** Waits until `check` holds, reloading the page between tries when asked. */
async function eventually(check: () => Promise<boolean>, what: string, reload = false): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 300));
    if (reload) await page.reload();
  }
  assert.fail(`timed out waiting for ${what}`);
}

before(async () => {
  if (!fs.existsSync(path.join(CONSOLE_DIST, 'index.html')))
    execFileSync(process.execPath, [path.join(ROOT, 'scripts', 'build-console.ts')], { stdio: 'inherit' });
  fs.rmSync(SHOTS, { recursive: true, force: true });
  fs.mkdirSync(SHOTS, { recursive: true });

  svc = await startService(process.env.DATABASE_URL ? 'postgres' : 'pglite', { workerPolls: true });
  svc.clock.offsetMs = PINNED - Date.now();
  const practice = await svc.newPractice();
  practiceKeyId = practice.keyId;
  practiceName = (await svc.admin('GET', `/practices/${practice.practiceId}`)).body.name;
  w = {
    svc,
    api: apiClient(svc, practice.key),
    practiceId: practice.practiceId,
    practitionerId: practice.practitionerId,
  };
  // The receiver is down at first: every delivery fails until the test brings it back.
  receiver = await Receiver.forService(svc);
  receiver.reply = () => ({ status: 500, body: 'receiver down' });
  await addEndpoint(svc, w.practiceId, receiver);

  // Two claims the insurer accepts (and pays), one patient payment, and one claim rejected for its
  // member number. The second accepted claim is sent after the patient paid R 200 at the desk: the
  // scheme pays the whole invoice, and the R 200 is a credit owed to the patient.
  const { patientId: claimedPatient } = await newPatient(w);
  await billVisit(w, claimedPatient, undefined, { issue: true, submitClaim: true });
  const { patientId: creditPatient } = await newPatient(w);
  creditInvoice = (await billVisit(w, creditPatient, undefined, { issue: true })).body.invoice;
  const desk = await svc.admin('POST', `/practices/${w.practiceId}/payments`, {
    invoiceId: creditInvoice.id,
    amount: 20_000,
    method: 'card',
  });
  assert.equal(desk.status, 201, desk.text);
  const claimed = await w.api('POST', `/invoices/${creditInvoice.id}/claim`, {});
  assert.equal(claimed.status, 202, claimed.text);
  const { patientId: payingPatient } = await newPatient(w);
  const paid = (await billVisit(w, payingPatient, undefined, { issue: true })).body.invoice;
  assert.equal(
    (
      await svc.admin('POST', `/practices/${w.practiceId}/payments`, {
        invoiceId: paid.id,
        amount: 20_000,
        method: 'card',
      })
    ).status,
    201,
  );
  const { patientId: draftPatient } = await newPatient(w);
  draftInvoice = (await billVisit(w, draftPatient, undefined, {})).body.invoice;
  const { patientId: owingPatient } = await newPatient(w);
  owingInvoice = (await billVisit(w, owingPatient, undefined, { issue: true })).body.invoice;
  const { patientId: mistakenPatient } = await newPatient(w);
  mistakenInvoice = (await billVisit(w, mistakenPatient, undefined, {})).body.invoice;
  const { patientId } = await newPatient(w, { memberNumber: 'REJECT-4711' });
  rejectedInvoice = (await billVisit(w, patientId, undefined, { issue: true, submitClaim: true })).body
    .invoice;
  await eventually(async () => {
    const read = await w.api('GET', `/invoices/${rejectedInvoice.id}/claim`);
    return read.body?.status === 'rejected';
  }, 'the sandbox insurer to reject the claim');
  await eventually(
    async () => (await w.api('GET', `/invoices/${creditInvoice.id}`)).body.creditDue === 20_000,
    "the scheme's payment after the desk payment",
  );
  await eventually(
    async () => receiver.requests.some((r) => r.payload?.data?.id === rejectedInvoice.id),
    'a failed delivery of the invoice events',
  );

  const chosen = await browser();
  console.log(`# browser: ${chosen.source}`);
  userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pb-console-chromium-'));
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: chosen.executablePath,
    env: { ...process.env, ...chosen.env },
    headless: true,
    viewport: { width: 1366, height: 768 },
    // The operator works where the practice is, whatever the machine's own time zone.
    timezoneId: 'Africa/Johannesburg',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(15_000);
  page.on('dialog', async (dialog) => {
    confirmations.push(dialog.message());
    if (dismissNext) {
      dismissNext = false;
      await dialog.dismiss();
    } else await dialog.accept();
  });
});

after(async () => {
  await context?.close();
  if (userDataDir) fs.rmSync(userDataDir, { recursive: true, force: true });
  await svc?.close();
  await receiver?.close();
});

test('an operator signs in with the admin token, from the keyboard', async () => {
  await page.goto(`${svc.baseUrl}/console/`);
  await page.getByRole('heading', { name: 'Practice Billing console' }).waitFor();
  await shot('01-sign-in');

  await page.getByLabel('Admin token').fill('not-the-token');
  await page.keyboard.press('Enter');
  await page
    .getByRole('alert')
    .filter({ hasText: /admin API needs/i })
    .waitFor();

  await page.getByLabel('Admin token').fill(svc.adminToken);
  await page.keyboard.press('Enter');
  await page.getByRole('radio', { name: /Operator: every practice/ }).waitFor();
  await page.getByLabel('Start with practice').selectOption(w.practiceId);
  await shot('02-choose-view');
  await page.getByRole('button', { name: 'Open console' }).focus();
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
  await page.keyboard.press('Tab');
  assert.equal(
    await page.evaluate(() => document.activeElement?.textContent),
    'Skip to content',
    'the first Tab reaches the skip link',
  );
  const stored = await page.evaluate(() => document.cookie);
  assert.equal(stored, '', 'the token is not kept in a cookie');
});

test('the dashboard shows the day: claims by outcome, money, and the failing endpoint', async () => {
  await page.getByRole('img', { name: /Today's claims by outcome/ }).waitFor();
  const chart = await page.getByRole('img', { name: /Today's claims by outcome/ }).getAttribute('aria-label');
  assert.match(chart ?? '', /accepted: 2/);
  assert.match(chart ?? '', /rejected: 1/);
  const failing = page.getByRole('row').filter({ hasText: receiver.url() });
  const cells = await failing.getByRole('cell').allTextContents();
  assert.match(cells[1] ?? '', /failed/);
  assert.ok(Number(cells[3]) >= 3, `the undelivered events are counted: ${cells.join(' | ')}`);
  // The service's load: the job queue per lane, from GET /admin/v1/metrics.
  const lanes = page.getByRole('table', { name: 'Job queue by lane' });
  await lanes.waitFor();
  const laneRows = await lanes.getByRole('row').allTextContents();
  assert.ok(
    laneRows.some((row) => /^claims/i.test(row)) && laneRows.some((row) => /^webhooks/i.test(row)),
    `both lanes are shown: ${laneRows.join(' | ')}`,
  );
  await shot('03-dashboard');
});

test('find the rejected claim, correct the member number, resubmit and see it accepted', async () => {
  await page.getByRole('link', { name: 'Invoices', exact: true }).click();
  await page.getByRole('heading', { name: 'Invoices' }).waitFor();
  await page.getByRole('table').waitFor();
  await shot('04-invoices');

  await page.getByLabel('Claim status').selectOption('rejected');
  await page.getByRole('button', { name: 'Apply' }).click();
  await eventually(
    async () => (await page.getByRole('row').count()) === 2,
    'only the rejected invoice listed',
  );
  const link = page.getByRole('link', { name: rejectedInvoice.number });
  await link.click();

  await page.getByRole('heading', { name: `Invoice ${rejectedInvoice.number}` }).waitFor();
  await page.getByRole('heading', { name: /Claim\s+rejected/ }).waitFor();
  assert.match((await page.locator('.note.error').first().textContent()) ?? '', /REJECT-4711|member/i);
  await shot('05-invoice-rejected');

  await page.getByLabel('Corrected member number').fill('M-4711');
  await page.getByRole('button', { name: 'Save and resubmit claim' }).click();
  await page
    .getByRole('status')
    .filter({ hasText: /claim resubmitted/ })
    .waitFor();
  await page.getByRole('heading', { name: /Claim\s+accepted/ }).waitFor({ timeout: 20_000 });
  const coverageRows = page.getByRole('row').filter({ hasText: 'M-4711' });
  assert.match(
    (await coverageRows.textContent()) ?? '',
    /yes/,
    'the invoice now uses the corrected coverage',
  );
  await shot('06-invoice-accepted');

  const claim = await w.api('GET', `/invoices/${rejectedInvoice.id}/claim`);
  assert.equal(claim.body.status, 'accepted', 'the public API sees the same outcome');
});

test('a webhook that failed is redelivered and arrives', async () => {
  const issuedRow = page.getByRole('row').filter({ hasText: 'invoice.issued' });
  assert.match((await issuedRow.textContent()) ?? '', /500/, 'the failed attempt is shown');
  // The first retry comes 5 s after the first failure and the next one minutes later. Waiting for the
  // first retry to fail too keeps it from arriving after the receiver is back: a retry delivered
  // first would (rightly) cancel the redelivery this test makes.
  await eventually(
    async () => /#2 500/.test((await issuedRow.textContent()) ?? ''),
    'the first retry of the failed delivery',
    true,
  );
  const event = (await svc.admin('GET', `/practices/${w.practiceId}/invoices/${rejectedInvoice.id}`)).body
    .events[0];
  assert.equal(event.type, 'invoice.issued');

  // A receiver that answers 204 No Content took the delivery as well as one that answers 200.
  receiver.reply = () => ({ status: 204 });
  const before = receiver.requests.filter((r) => r.webhookId === event.id).length;
  await issuedRow.getByRole('button', { name: 'Redeliver' }).click();
  await page
    .getByRole('status')
    .filter({ hasText: /invoice.issued queued for delivery to 1 endpoint/ })
    .waitFor();
  await eventually(
    async () =>
      receiver.requests.filter((r) => r.webhookId === event.id).length > before &&
      receiver.requests.at(-1)?.verified === true,
    'the redelivered event at the receiver',
  );
  await eventually(
    async () =>
      /#1 204/.test((await page.getByRole('row').filter({ hasText: 'invoice.issued' }).textContent()) ?? ''),
    'the delivered attempt on the invoice page',
    true,
  );
  const deliveredRow = page.getByRole('row').filter({ hasText: 'invoice.issued' });
  assert.doesNotMatch(
    (await deliveredRow.getAttribute('class')) ?? '',
    /row-bad/,
    'a 204 is shown as delivered, not failed',
  );
  await shot('07-invoice-redelivered');
});

test('a payment recorded from the invoice page balances it', async () => {
  await page.getByRole('link', { name: 'Invoices', exact: true }).click();
  await page.getByLabel('Status', { exact: true }).selectOption('partially_paid');
  await page.getByRole('button', { name: 'Apply' }).click();
  await eventually(
    async () => (await page.getByRole('row').count()) === 2,
    'the partially paid invoice alone',
  );
  await page.getByRole('row').nth(1).getByRole('link').click();
  await page.getByRole('heading', { name: /Invoice .* partially paid/ }).waitFor();
  const balance =
    (await page.locator('dl.facts div').filter({ hasText: 'Balance due' }).locator('dd').textContent()) ?? '';
  const amount = balance.replace(/[^\d,]/g, '').replace(',', '.');
  await page.getByLabel(/Amount/).fill(amount);
  await page.getByLabel('Method').selectOption('card');
  await page.getByLabel('Reference').fill('POS-77');
  // Taken at the desk earlier this morning, on the day of the visit, and recorded now: the time typed
  // is the browser's local time (Johannesburg, 05:30Z).
  await page.getByLabel('Received (empty: now)').fill('2026-03-10T07:30');
  const typedAt = await page.evaluate(() => new Date('2026-03-10T07:30').toISOString());
  assert.equal(typedAt, '2026-03-10T05:30:00.000Z');
  // The first answer is lost on the way back, after the service recorded the payment: the console
  // retries with the same Idempotency-Key, and the service replays instead of recording it twice.
  const sent: Array<string | undefined> = [];
  const paymentsRoute = '**/admin/v1/practices/*/payments';
  await page.route(paymentsRoute, async (route) => {
    sent.push(route.request().headers()['idempotency-key']);
    if (sent.length > 1) return route.continue();
    const first = await route.fetch();
    assert.equal(first.status(), 201, await first.text());
    return route.abort('connectionreset');
  });
  await page.getByRole('button', { name: 'Record payment' }).click();
  await page.getByRole('heading', { name: /Invoice .* balanced/ }).waitFor();
  await page.getByRole('cell', { name: 'POS-77' }).waitFor();
  await page.unroute(paymentsRoute);
  assert.equal(sent.length, 2, 'the console retried once');
  assert.match(sent[0] ?? '', /^console_[0-9a-f]{32}$/);
  assert.equal(sent[1], sent[0], 'the retry carries the same key');
  const invoiceId = /\/invoices\/(inv_\w+)/.exec(page.url())?.[1];
  assert.ok(invoiceId, page.url());
  const payments = await w.api('GET', `/invoices/${invoiceId}/payments`);
  const recorded = payments.body.data.filter((p: Json) => p.reference === 'POS-77');
  assert.equal(recorded.length, 1);
  assert.equal(recorded[0].receivedAt, typedAt, 'received when the operator said, not when recorded');
  await shot('08-invoice-paid');
});

test("the patient's record is downloaded from the invoice page", async () => {
  const invoiceId = /\/invoices\/(inv_\w+)/.exec(page.url())?.[1];
  assert.ok(invoiceId, page.url());
  const patientId = (await w.api('GET', `/invoices/${invoiceId}`)).body.patientId as string;
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.getByRole('button', { name: "Download the patient's record" }).click(),
  ]);
  assert.equal(download.suggestedFilename(), `${patientId}-record.json`);
  const record = JSON.parse(fs.readFileSync((await download.path())!, 'utf8'));
  assert.equal(record.patient.id, patientId);
  assert.ok(record.invoices.some((i: Json) => i.id === invoiceId));
  assert.ok(
    record.auditEvents.some((e: Json) => e.actor === 'operator'),
    'this read is audited',
  );
});

test('a refund recorded from the paid invoice page, after a confirmation, makes it owe that amount again', async () => {
  await page.getByLabel(/Refund amount/).fill('10.00');
  await page.getByLabel('Paid back by').selectOption('cash');
  await page.getByLabel('Reason for the refund').fill('Consultation fee reduced');
  await page.getByRole('button', { name: 'Record refund' }).click();
  await confirmed(/give back|given back/);
  await page.getByRole('heading', { name: /Invoice .* partially paid/ }).waitFor();
  await page.getByRole('cell', { name: 'Consultation fee reduced' }).waitFor();
  const invoiceId = /\/invoices\/(inv_\w+)/.exec(page.url())?.[1];
  assert.ok(invoiceId, page.url());
  const refunds = await w.api('GET', `/invoices/${invoiceId}/refunds`);
  assert.deepEqual(
    refunds.body.data.map((r: Json) => [r.amount, r.method, r.reason]),
    [[1000, 'cash', 'Consultation fee reduced']],
  );
  assert.equal((await w.api('GET', `/invoices/${invoiceId}`)).body.balanceDue, 1000);
  await shot('08b-invoice-refunded');
});

test('an invoice the scheme paid after the patient paid at the desk shows the credit owed to the patient', async () => {
  await page.evaluate((id) => {
    window.location.hash = `#/invoices/${id}`;
  }, creditInvoice.id);
  await page.getByRole('heading', { name: `Invoice ${creditInvoice.number}` }).waitFor();
  assert.equal(await invoiceFact('Credit due to the patient'), 20_000);
  assert.equal(await invoiceFact('Balance due'), 0);
  assert.equal(await invoiceFactCount('Written off'), 0, 'nothing was written off: not shown');
  await shot('08c-invoice-credit-due');
});

test('a draft invoice is cancelled with a reason', async () => {
  await page.getByRole('link', { name: 'Invoices', exact: true }).click();
  await page.getByLabel('Number or patient').fill(draftInvoice.number);
  await page.keyboard.press('Enter');
  await page.getByRole('link', { name: draftInvoice.number }).click();
  await page.getByRole('heading', { name: /Invoice .* draft/ }).waitFor();
  await page.getByLabel('Reason for cancelling').fill('Billed twice by mistake');
  await page.getByRole('button', { name: 'Cancel invoice' }).click();
  await page.getByRole('heading', { name: /Invoice .* cancelled/ }).waitFor();
  await confirmed(new RegExp(`Cancel invoice ${draftInvoice.number}\\?`));
  const read = await w.api('GET', `/invoices/${draftInvoice.id}`);
  assert.equal(read.body.status, 'cancelled');
  await shot('09-invoice-cancelled');
});

test('a message about one invoice does not follow to the next', async () => {
  await page.getByRole('status').filter({ hasText: 'Invoice cancelled.' }).waitFor();
  await page.evaluate((id) => {
    window.location.hash = `#/invoices/${id}`;
  }, owingInvoice.id);
  await page.getByRole('heading', { name: `Invoice ${owingInvoice.number}` }).waitFor();
  assert.equal(await page.getByRole('status').filter({ hasText: 'Invoice cancelled.' }).count(), 0);
});

test('a write-off asks first; declined, nothing happens; agreed, the balance is written off', async () => {
  await page.getByLabel('Reason for writing off').fill('Patient untraceable');
  dismissNext = true;
  await page.getByRole('button', { name: 'Write off balance' }).click();
  await confirmed(new RegExp(`Write off the balance of invoice ${owingInvoice.number}\\?`));
  assert.equal(
    (await w.api('GET', `/invoices/${owingInvoice.id}`)).body.status,
    'issued',
    'declined: unchanged',
  );
  await page.getByRole('button', { name: 'Write off balance' }).click();
  await page.getByRole('heading', { name: /Invoice .* written off/ }).waitFor();
  assert.equal((await w.api('GET', `/invoices/${owingInvoice.id}`)).body.status, 'written_off');
  assert.equal(await invoiceFact('Written off'), owingInvoice.totalGross);
  assert.equal(await invoiceFact('Balance due'), 0);
  assert.equal(await invoiceFactCount('Credit due'), 0, 'no credit is owed: not shown');
  await shot('09b-invoice-written-off');
});

test('an invoice is marked entered in error, after a confirmation', async () => {
  await page.evaluate((id) => {
    window.location.hash = `#/invoices/${id}`;
  }, mistakenInvoice.id);
  await page.getByRole('heading', { name: `Invoice ${mistakenInvoice.number}` }).waitFor();
  assert.equal(await page.getByRole('status').filter({ hasText: 'Balance written off.' }).count(), 0);
  await page.getByLabel('Why it was entered in error').fill('Wrong patient');
  await page.getByRole('button', { name: 'Mark entered in error' }).click();
  await page.getByRole('heading', { name: /Invoice .* entered in error/ }).waitFor();
  await confirmed(new RegExp(`Mark invoice ${mistakenInvoice.number} entered in error\\?`));
  assert.equal((await w.api('GET', `/invoices/${mistakenInvoice.id}`)).body.status, 'entered_in_error');
});

test('the webhooks page lists the endpoint and its attempts; disable, enable, recover, rotate', async () => {
  await page.getByRole('link', { name: 'Webhooks' }).click();
  await page.getByRole('heading', { name: 'Webhook endpoints' }).waitFor();
  await page.getByRole('link', { name: receiver.url() }).click();
  await page.getByRole('heading', { name: /Deliveries to/ }).waitFor();
  await page.getByRole('table', { name: /Delivery attempts/ }).waitFor();
  assert.ok((await page.getByRole('button', { name: 'Redeliver' }).count()) > 0);
  const endpointRow = page.getByRole('row').filter({ hasText: receiver.url() });
  await endpointRow.getByRole('button', { name: 'Disable' }).click();
  await endpointRow.getByText('disabled', { exact: true }).waitFor();
  await confirmed(/^Disable /);
  await endpointRow.getByRole('button', { name: 'Enable' }).click();
  await endpointRow.getByRole('button', { name: 'Disable' }).waitFor();
  await page.getByLabel('Failed since (UTC)').fill('2026-03-10T00:00');
  await page.getByRole('button', { name: 'Deliver again what failed' }).click();
  await page
    .getByRole('status')
    .filter({ hasText: /queued again: \d+ that had failed for good, \d+ still retrying/ })
    .waitFor();
  await page.getByRole('button', { name: 'Rotate secret' }).click();
  await page
    .getByRole('status')
    .filter({ hasText: /whsec_/ })
    .waitFor();
  await confirmed(/^Rotate the signing secret/);
  await shot('10-webhooks');
});

test('API clients: issue a key (shown once), revoke it, suspend and resume the client', async () => {
  await page.getByRole('link', { name: 'API clients' }).click();
  await page.getByRole('heading', { name: 'API clients and keys' }).waitFor();
  await page.getByRole('button', { name: 'Issue a key' }).first().click();
  await page
    .getByRole('status')
    .filter({ hasText: /shown once/ })
    .waitFor();
  const notice = (await page.getByRole('status').textContent()) ?? '';
  assert.match(notice, /pbk_/);
  const keyId = /New key (key_\S+)/.exec(notice)?.[1] ?? '';
  await shot('11-clients');
  const keyRow = page.getByRole('row').filter({ hasText: keyId });
  assert.match((await keyRow.textContent()) ?? '', /operator:[0-9a-f]{12}/, 'who issued it');
  assert.match((await keyRow.textContent()) ?? '', /never/, 'not used yet');
  // The practice's own key has been used by the setup: its row says when.
  const usedRow = page.getByRole('row').filter({ hasText: practiceKeyId });
  assert.doesNotMatch(
    (await usedRow.textContent()) ?? '',
    /never/,
    'the key in use shows when it was last used',
  );
  await keyRow.getByRole('button', { name: 'Revoke' }).click();
  await keyRow.getByRole('button', { name: 'Revoke' }).waitFor({ state: 'detached' });
  await confirmed(new RegExp(`Revoke key ${keyId}\\?`));
  const revoked = await svc.admin(
    'GET',
    `/clients/${(await svc.admin('GET', `/practices/${w.practiceId}/clients`)).body.data[0].id}/keys`,
  );
  assert.ok(revoked.body.data.find((k: Json) => k.id === keyId).revokedAt, 'the key is revoked');
  await page.getByRole('button', { name: 'Suspend client' }).click();
  await confirmed(/^Suspend /);
  await page.getByRole('button', { name: 'Resume client' }).click();
  await page.getByRole('button', { name: 'Suspend client' }).waitFor();
});

test('the audit log shows the operator resubmission', async () => {
  await page.getByRole('link', { name: 'Audit log' }).click();
  await page.getByRole('heading', { name: 'Audit log' }).waitFor();
  await page
    .getByText('/admin/v1/practices/:practiceId/invoices/:invoiceId/claim/resubmit')
    .first()
    .waitFor();
  await shot('12-audit');
  await page.getByLabel('Method').selectOption('POST');
  await page.getByLabel('Path contains').fill('/write-off');
  await page.getByRole('button', { name: 'Filter' }).click();
  await eventually(async () => (await page.getByRole('row').count()) === 2, 'only the write-off listed');
  assert.match((await page.getByRole('row').nth(1).textContent()) ?? '', /POST.*write-off/);
  await page.getByLabel('HTTP status').fill('404');
  await page.getByRole('button', { name: 'Filter' }).click();
  await page.getByText('No audit event matches.').waitFor();
});

test('a practice view stays in its practice', async () => {
  await page.getByRole('link', { name: 'Practices' }).click();
  await page.getByRole('heading', { name: 'Practices' }).waitFor();
  await shot('13-practices');
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByLabel('Admin token').fill(svc.adminToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('radio', { name: 'One practice only' }).check();
  await page.getByLabel('Practice', { exact: true }).selectOption(w.practiceId);
  await page.getByRole('button', { name: 'Open console' }).click();
  await page.getByText(`Practice view: ${practiceName}`).waitFor();
  assert.equal(
    await page.getByRole('link', { name: 'Practices' }).count(),
    0,
    'no other practice is offered',
  );
  assert.equal(await page.locator('header select').count(), 0, 'no practice switcher');
  await shot('14-practice-view');
});

test('the account is downloaded from the invoice page, and the outbox shows what the patient would receive', async () => {
  // A patient with an e-mail address, billed and issued: without SMTP_URL the account goes to the outbox.
  const email = `lerato.${uniqueKey()}@example.org`;
  const patient = await w.api('POST', '/patients', {
    body: patientBody({ contactPoints: [{ system: 'email', value: email, rank: 1 }] }),
    idempotencyKey: uniqueKey(),
  });
  assert.equal(patient.status, 201, patient.text);
  const issued = (await billVisit(w, patient.body.id, undefined, { issue: true })).body.invoice;
  await eventually(async () => {
    const outbox = await svc.admin('GET', `/practices/${w.practiceId}/outbox`);
    return outbox.body.data.some((m: Json) => m.to === email);
  }, "the patient's e-mail in the outbox");

  await page.evaluate((id) => {
    window.location.hash = `#/invoices/${id}`;
  }, issued.id);
  await page.getByRole('heading', { name: `Invoice ${issued.number}` }).waitFor();
  await page.getByRole('heading', { name: 'The patient is told' }).waitFor();
  await page.getByRole('cell', { name: /kept in the outbox/ }).waitFor();
  const [account] = await Promise.all([
    page.waitForEvent('download'),
    page.getByRole('button', { name: 'Download account' }).click(),
  ]);
  assert.equal(account.suggestedFilename(), `${issued.number}.pdf`);
  const text = (await pdfPages(fs.readFileSync(await account.path()))).join('\n');
  assert.ok(text.includes(`Invoice number: ${issued.number}`), text);
  await shot('15-invoice-account');

  await page.getByRole('link', { name: 'Outbox' }).click();
  await page.getByRole('heading', { name: 'Outbox' }).waitFor();
  const row = page.getByRole('row').filter({ hasText: email });
  await row.waitFor();
  assert.match((await row.textContent()) ?? '', new RegExp(`Account ${issued.number}`));
  const [attached] = await Promise.all([
    page.waitForEvent('download'),
    row.getByRole('button', { name: `Open ${issued.number}.pdf` }).click(),
  ]);
  const mailed = (await pdfPages(fs.readFileSync(await attached.path()))).join('\n');
  assert.ok(mailed.includes(`Invoice number: ${issued.number}`), mailed);
  await shot('16-outbox');
});
