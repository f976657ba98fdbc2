// VAT on a VAT-registered practice's claims: each line is claimed with its share of the invoice's VAT
// (schemes pay providers VAT-inclusive amounts, up to their own rates), so a service the scheme's rate
// covers in full, VAT included, leaves the patient nothing to pay; and the invoice explains in words
// and amounts why the patient owes what they owe.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  claimAndDrain,
  ESSENTIAL,
  getInvoice,
  invoiceAction,
  issuedInvoice,
  lineRequest,
  newWorld,
  type World,
} from './claims-fixtures.ts';
import { describeEachBackend, startService, type TestService } from './harness.ts';

describeEachBackend('VAT on claims', (backend) => {
  let svc: TestService;
  let w: World;
  before(async () => {
    svc = await startService(backend);
    w = await newWorld(svc);
    const settings = await svc.admin('PUT', `/practices/${w.practiceId}/billing-settings`, {
      vatRateBasisPoints: 1500,
      paymentTermsDays: 30,
      invoiceNumberPrefix: 'INV-',
    });
    assert.equal(settings.status, 200, settings.text);
  });
  after(async () => {
    await svc.close();
  });

  /** An issued invoice for one 0190 line priced `net` before VAT. */
  const vatInvoice = async (net: number) => {
    const { invoiceId } = await issuedInvoice(w, { procedures: [{ code: '0190', dx: ['J06.9'] }] });
    await invoiceAction(w, invoiceId, 'amend');
    const line = (await getInvoice(w, invoiceId)).lineItems[0];
    const replaced = await w.api('PUT', `/invoices/${invoiceId}/line-items/${line.id}`, {
      body: lineRequest({ unitPrice: net, pricingSource: null, serviceDate: line.serviceDate }),
    });
    assert.equal(replaced.status, 200, replaced.text);
    return { invoiceId, invoice: await invoiceAction(w, invoiceId, 'issue') };
  };

  test("a line the scheme's rate covers with its VAT is claimed and paid VAT included: the patient owes nothing", async () => {
    const { invoiceId, invoice } = await vatInvoice(40_000);
    assert.equal(invoice.totalNet, 40_000);
    assert.equal(invoice.totalGross, 46_000);
    assert.equal(invoice.totalVat, 6_000);
    const claim = await claimAndDrain(w, invoiceId);
    assert.equal(claim.status, 'accepted');
    assert.equal(claim.items[0].submitted, 46_000, 'claimed with its VAT');
    assert.equal(claim.items[0].benefit, 46_000);
    const paid = await getInvoice(w, invoiceId);
    assert.equal(paid.status, 'balanced');
    assert.equal(paid.paidByScheme, 46_000);
    assert.equal(paid.balanceDue, 0);
    assert.match(paid.balanceExplanation, /ZAR 400\.00 for the services plus VAT of ZAR 60\.00/);
    assert.match(paid.balanceExplanation, /Nothing is owed\.$/);
  });

  test("a line above the scheme's VAT-inclusive rate: the scheme pays its rate and the account says why the patient owes the rest", async () => {
    const { invoiceId, invoice } = await vatInvoice(ESSENTIAL.rate0190);
    assert.equal(invoice.totalGross, 56_925);
    const claim = await claimAndDrain(w, invoiceId);
    assert.equal(claim.status, 'accepted');
    assert.equal(claim.items[0].submitted, 56_925);
    assert.equal(claim.items[0].benefit, ESSENTIAL.rate0190);
    assert.equal(claim.items[0].decision, 'approved_with_warning');
    const owed = await getInvoice(w, invoiceId);
    assert.equal(owed.paidByScheme, ESSENTIAL.rate0190);
    assert.equal(owed.paidByPatient, 0);
    assert.equal(owed.balanceDue, 7_425);
    assert.equal(
      owed.balanceExplanation,
      'Total ZAR 569.25: ZAR 495.00 for the services plus VAT of ZAR 74.25. Your medical scheme paid ZAR 495.00, VAT included: it pays each service up to its own rate, and not for services your plan does not cover; the rest is yours to pay. You owe ZAR 74.25.',
    );
  });
});
