// Invoices that never dead-end: lines no rate was found for must be priced before issuing (0 on
// purpose is fine), each keeping its date however early the visit started; an invoice for 0 is
// balanced and can still be cancelled or marked entered in error, releasing its visit; a paid invoice
// can be reopened, and issuing it again (at any VAT rate) may not bring its total below what was
// paid; a draft issued later is dated the day it is issued.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { BillRequest } from '../src/invoices/schemas.ts';
import {
  type Api,
  asOps,
  bill,
  billingPractice,
  DAY,
  type Json,
  localDate,
  MINUTE,
  newPatient,
  newVisit,
  plusDays,
  refusedWith,
  TARIFF_URL,
} from './billing-fixtures.ts';
import {
  describeEachBackend,
  startService,
  type TestPractice,
  type TestService,
  uniqueKey,
} from './harness.ts';

describeEachBackend('invoices without dead ends', (backend) => {
  let svc: TestService;
  let practice: TestPractice & { api: Api };
  let houseUrl: string;
  before(async () => {
    svc = await startService(backend);
    practice = await billingPractice(svc);
    // A practice code without a price: no rate is found for it anywhere.
    const system = await practice.api('POST', '/code-systems', {
      body: { name: 'House extras', usage: ['procedure'] },
      idempotencyKey: uniqueKey(),
    });
    assert.equal(system.status, 201, system.text);
    houseUrl = system.body.url;
    const concept = await practice.api('POST', `/code-systems/${system.body.id}/concepts`, {
      body: { code: 'H0', display: 'Courtesy check' },
      idempotencyKey: uniqueKey(),
    });
    assert.equal(concept.status, 201, concept.text);
  });
  after(async () => {
    await svc.close();
  });

  const post = (p: TestPractice & { api: Api }, invoiceId: string, action: string, body?: unknown) =>
    p.api('POST', `/invoices/${invoiceId}/${action}`, body === undefined ? {} : { body });
  const pay = (p: TestPractice, invoiceId: string, amount: number) =>
    svc.admin('POST', `/practices/${p.practiceId}/payments`, { invoiceId, amount, method: 'card' });
  const read = async (p: TestPractice & { api: Api }, invoiceId: string) => {
    const answer = await p.api('GET', `/invoices/${invoiceId}`);
    assert.equal(answer.status, 200, answer.text);
    return answer.body;
  };
  const eventTypes = async (invoiceId: string) =>
    (
      await asOps(svc, (trx) =>
        trx.selectFrom('events').select('type').where('object_id', '=', invoiceId).orderBy('seq').execute(),
      )
    ).map((e) => e.type);
  const assertBusinessRule = (answer: Json, detail: RegExp) => {
    refusedWith(answer, 422, 'business_rule');
    assert.match(answer.body.detail, detail);
  };

  /** Records a visit of the unpriced house code and 0190 (priced by the governing body). */
  async function unpricedVisit(start?: Date) {
    const patientId = await newPatient(practice.api);
    return newVisit(svc, practice.api, practice.practitionerId, patientId, {
      ...(start ? { start, end: new Date(start.getTime() + 20 * MINUTE) } : {}),
      procedures: [
        { code: '0190', diagnosisCodes: ['J06.9'] },
        { system: houseUrl, code: 'H0', diagnosisCodes: ['J06.9'] },
      ],
    });
  }

  /** Bills a visit of the unpriced house code and 0190 (priced by the governing body). */
  async function billUnpriced(issue: boolean, body: BillRequest = issue ? { issue: true } : {}) {
    const visit = await unpricedVisit();
    const billed = await bill(practice.api, visit.id, body);
    assert.equal(billed.status, 201, billed.text);
    return billed.body;
  }

  /** Prices the house line at 0 on purpose (a price set by hand), keeping its date unless given one. */
  const priceHouseLine = (invoiceId: string, house: Json, serviceDate: string = house.serviceDate) =>
    practice.api('PUT', `/invoices/${invoiceId}/line-items/${house.id}`, {
      body: {
        system: houseUrl,
        code: 'H0',
        serviceDate,
        quantity: 1,
        unitPrice: 0,
        diagnoses: [{ code: 'J06.9' }],
      },
    });

  test('a line no rate was found for is not issued until priced: bill says why, issue is 422 naming the line', async () => {
    const billed = await billUnpriced(true);
    const invoice = billed.invoice;
    const house = invoice.lineItems[1];
    assert.deepEqual([house.code, house.unitPrice, house.pricingSource], ['H0', 0, null]);
    assert.equal(billed.issued, false);
    assert.equal(invoice.status, 'draft');
    assert.match(billed.issueSkippedReason, new RegExp(`line 2 \\(H0, ${house.id}\\)`));
    assert.match(
      billed.issueSkippedReason,
      new RegExp(`^Invoice ${invoice.number} `),
      'names the final number',
    );

    const refused = await post(practice, invoice.id, 'issue');
    assertBusinessRule(refused, new RegExp(`line 2 \\(H0, ${house.id}\\).*Set each one's price`));
    assert.doesNotMatch(refused.body.detail, /0190/, 'the priced line is not named');
    assert.equal((await read(practice, invoice.id)).status, 'draft');
    assert.deepEqual(await eventTypes(invoice.id), [], 'nothing was issued or announced');

    // Priced at 0 on purpose (a price set by hand): it is issued.
    const priced = await priceHouseLine(invoice.id, house);
    assert.equal(priced.status, 200, priced.text);
    const issued = await post(practice, invoice.id, 'issue');
    assert.equal(issued.status, 200, issued.text);
    assert.equal(issued.body.status, 'issued');
    assert.equal(issued.body.totalGross, invoice.lineItems[0].total);
  });

  test('with submitClaim, a bill not issued for an unpriced line says the claim waits for issuing', async () => {
    const billed = await billUnpriced(true, { issue: true, submitClaim: true });
    assert.deepEqual([billed.issued, billed.claimQueued], [false, false]);
    assert.equal(
      billed.claimSkippedReason,
      `Invoice ${billed.invoice.number} was not issued (see issueSkippedReason); only an issued invoice can be claimed.`,
    );
  });

  test('a line of a visit started 119 days before it was recorded and billed 10 days later is priced keeping its date, then issued', async () => {
    const today = svc.clock.now();
    const billedAt = Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate() - 2, 10);
    svc.clock.set(billedAt - 10 * DAY);
    try {
      const visit = await unpricedVisit(new Date(billedAt - 129 * DAY));
      svc.clock.set(billedAt);
      const billed = await bill(practice.api, visit.id);
      assert.equal(billed.status, 201, billed.text);
      const invoice = billed.body.invoice;
      const house = invoice.lineItems[1];
      assert.equal(house.serviceDate, plusDays(invoice.date, -129), 'the visit started before the window');

      const priced = await priceHouseLine(invoice.id, house);
      assert.equal(priced.status, 200, priced.text);
      assert.equal(priced.body.lineItems[1].serviceDate, house.serviceDate);
      const earlier = await priceHouseLine(invoice.id, house, plusDays(house.serviceDate, -1));
      refusedWith(earlier, 422, 'validation_failed', ['serviceDate']);

      svc.clock.set(billedAt + DAY);
      const issued = await post(practice, invoice.id, 'issue');
      assert.equal(issued.status, 200, issued.text);
      assert.equal(issued.body.status, 'issued');
    } finally {
      svc.clock.reset();
    }
  });

  test('an invoice for 0 is balanced at once, and can be cancelled: its visit is billed again', async () => {
    const billed = await billUnpriced(false);
    const invoice = billed.invoice;
    const [consult, house] = invoice.lineItems;
    assert.equal(
      (await practice.api('DELETE', `/invoices/${invoice.id}/line-items/${consult.id}`)).status,
      200,
    );
    const zero = await practice.api('PUT', `/invoices/${invoice.id}/line-items/${house.id}`, {
      body: { system: houseUrl, code: 'H0', serviceDate: house.serviceDate, quantity: 1, unitPrice: 0 },
    });
    assert.equal(zero.status, 200, zero.text);
    const issued = await post(practice, invoice.id, 'issue');
    assert.equal(issued.status, 200, issued.text);
    assert.deepEqual(
      [issued.body.status, issued.body.totalGross, issued.body.amountPaid, issued.body.balanceDue],
      ['balanced', 0, 0, 0],
    );
    const encounterId = invoice.encounterIds[0];
    refusedWith(
      await practice.api('POST', `/encounters/${encounterId}/bill`, { idempotencyKey: uniqueKey() }),
      409,
      'duplicate',
    );
    // nothing is owed, so there is nothing to write off
    assertBusinessRule(
      await svc.admin('POST', `/practices/${practice.practiceId}/invoices/${invoice.id}/write-off`, {
        reason: 'x',
      }),
      /is balanced; only an invoice that is issued, partially_paid, overdue can be written off/,
    );
    const cancelled = await post(practice, invoice.id, 'cancel', { reason: 'Nothing to charge' });
    assert.equal(cancelled.status, 200, cancelled.text);
    assert.equal(cancelled.body.status, 'cancelled');
    assert.deepEqual(await eventTypes(invoice.id), ['invoice.issued', 'invoice.cancelled']);
    const again = await bill(practice.api, encounterId, { issue: true });
    assert.equal(again.status, 201, again.text);
    assert.notEqual(again.body.invoice.id, invoice.id);
  });

  test('an invoice for 0 can be marked entered in error by the operator, or reopened and corrected', async () => {
    const zeroInvoice = async () => {
      const { invoice } = await billUnpriced(false);
      const house = invoice.lineItems[1];
      await practice.api('DELETE', `/invoices/${invoice.id}/line-items/${invoice.lineItems[0].id}`);
      await practice.api('PUT', `/invoices/${invoice.id}/line-items/${house.id}`, {
        body: { system: houseUrl, code: 'H0', serviceDate: house.serviceDate, quantity: 1, unitPrice: 0 },
      });
      const issued = await post(practice, invoice.id, 'issue');
      assert.equal(issued.body.status, 'balanced', issued.text);
      return issued.body;
    };
    const wrong = await zeroInvoice();
    const marked = await svc.admin(
      'POST',
      `/practices/${practice.practiceId}/invoices/${wrong.id}/entered-in-error`,
      { reason: 'Wrong patient' },
    );
    assert.equal(marked.status, 200, marked.text);
    assert.equal(marked.body.status, 'entered_in_error');
    assert.equal((await bill(practice.api, wrong.encounterIds[0])).status, 201, 'its visit is released');

    const corrected = await zeroInvoice();
    const amending = await post(practice, corrected.id, 'amend');
    assert.equal(amending.status, 200, amending.text);
    assert.equal(amending.body.status, 'amending');
    const line = amending.body.lineItems[0];
    const charged = await practice.api('PUT', `/invoices/${corrected.id}/line-items/${line.id}`, {
      body: { system: houseUrl, code: 'H0', serviceDate: line.serviceDate, quantity: 1, unitPrice: 2500 },
    });
    assert.equal(charged.status, 200, charged.text);
    const reissued = await post(practice, corrected.id, 'issue');
    assert.deepEqual([reissued.body.status, reissued.body.balanceDue], ['issued', 2500]);
  });

  test('a paid invoice can be reopened; corrections down to what was paid are issued, below it the refusal asks for a refund', async () => {
    const { invoice } = await billUnpriced(false);
    await practice.api('DELETE', `/invoices/${invoice.id}/line-items/${invoice.lineItems[1].id}`);
    const issued = (await post(practice, invoice.id, 'issue')).body;
    const total = issued.totalGross as number;
    assert.equal((await pay(practice, invoice.id, total)).status, 201);
    assert.equal((await read(practice, invoice.id)).status, 'balanced');
    assertBusinessRule(
      await post(practice, invoice.id, 'cancel', { reason: 'x' }),
      new RegExp(`has ${total} paid on it.*record a refund of them first\\.$`),
    );

    const amending = await post(practice, invoice.id, 'amend');
    assert.equal(amending.status, 200, amending.text);
    assert.equal(amending.body.status, 'amending');
    const line = amending.body.lineItems[0];
    const lower = await practice.api('PUT', `/invoices/${invoice.id}/line-items/${line.id}`, {
      body: { code: '0190', serviceDate: line.serviceDate, quantity: 1, unitPrice: total - 100 },
    });
    assertBusinessRule(lower, /below what was paid\. Record a refund of at least 100 first\./);
    const added = await practice.api('POST', `/invoices/${invoice.id}/line-items`, {
      body: { code: '0191', serviceDate: line.serviceDate, quantity: 1, unitPrice: 3000 },
      idempotencyKey: uniqueKey(),
    });
    assert.equal(added.status, 201, added.text);
    const reissued = await post(practice, invoice.id, 'issue');
    assert.deepEqual(
      [reissued.body.status, reissued.body.amountPaid, reissued.body.balanceDue],
      ['partially_paid', total, 3000],
    );
    assert.deepEqual(await eventTypes(invoice.id), ['invoice.issued', 'payment.created', 'invoice.issued']);
  });

  test('issuing again at a lower VAT rate may not bring the total below what was paid: 422, nothing changed', async () => {
    const own = await billingPractice(svc, { vatRateBasisPoints: 1500 });
    const price = await svc.admin('POST', `/practices/${own.practiceId}/prices`, {
      system: TARIFF_URL,
      code: '0190',
      amount: 55_000,
    });
    assert.equal(price.status, 201, price.text);
    const visit = await newVisit(svc, own.api, own.practitionerId, await newPatient(own.api));
    const invoice = (await bill(own.api, visit.id, { issue: true })).body.invoice;
    assert.deepEqual([invoice.totalNet, invoice.totalGross], [55_000, 63_250]);
    assert.equal((await pay(own, invoice.id, 60_000)).status, 201);
    assert.equal((await post(own, invoice.id, 'amend')).status, 200);
    const settings = await svc.admin('PUT', `/practices/${own.practiceId}/billing-settings`, {
      vatRateBasisPoints: 0,
      paymentTermsDays: 30,
      invoiceNumberPrefix: 'INV-',
    });
    assert.equal(settings.status, 200, settings.text);
    const before = await read(own, invoice.id);

    const refused = await post(own, invoice.id, 'issue');
    assertBusinessRule(
      refused,
      /would be for 55000 but 60000 is paid on it.*Record a refund of at least 5000 first\./,
    );
    const now = await read(own, invoice.id);
    assert.deepEqual(now, before, 'the refused issue changed nothing');
    assert.deepEqual(
      [now.status, now.totalGross, now.amountPaid, now.balanceDue],
      ['amending', 63_250, 60_000, 3_250],
    );
    assert.deepEqual(await eventTypes(invoice.id), ['invoice.issued', 'payment.created']);
  });

  test('a draft issued days later is dated that day in the practice time zone, due after the terms from it; a re-issue keeps both', async () => {
    const auckland = await billingPractice(svc, { timezone: 'Pacific/Auckland', paymentTermsDays: 14 });
    // 12:30 UTC: Auckland is already on the next calendar day.
    const today = svc.clock.now();
    const billedAt = Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate() - 6, 12, 30);
    svc.clock.set(billedAt);
    try {
      const visit = await newVisit(
        svc,
        auckland.api,
        auckland.practitionerId,
        await newPatient(auckland.api),
        {
          start: new Date(billedAt - 40 * MINUTE),
          end: new Date(billedAt - 20 * MINUTE),
        },
      );
      const draft = (await bill(auckland.api, visit.id)).body.invoice;
      const billedOn = localDate('Pacific/Auckland', new Date(billedAt));
      assert.equal(billedOn, plusDays(new Date(billedAt).toISOString().slice(0, 10), 1));
      assert.deepEqual([draft.date, draft.dueDate], [billedOn, plusDays(billedOn, 14)]);

      svc.clock.set(billedAt + 3 * DAY);
      const issued = await post(auckland, draft.id, 'issue');
      assert.equal(issued.status, 200, issued.text);
      const issuedOn = plusDays(billedOn, 3);
      assert.equal(issuedOn, localDate('Pacific/Auckland', svc.clock.now()));
      assert.deepEqual(
        [issued.body.status, issued.body.date, issued.body.dueDate],
        ['issued', issuedOn, plusDays(issuedOn, 14)],
      );

      svc.clock.set(billedAt + 5 * DAY);
      assert.equal((await post(auckland, draft.id, 'amend')).status, 200);
      const reissued = await post(auckland, draft.id, 'issue');
      assert.deepEqual([reissued.body.date, reissued.body.dueDate], [issuedOn, plusDays(issuedOn, 14)]);
    } finally {
      svc.clock.reset();
    }
  });
});
