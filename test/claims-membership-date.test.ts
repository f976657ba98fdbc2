// A membership is judged on the date of service: the default coverage of a bill and of a claim is the
// first one active on the visit's (the lines') dates, first and last, and the sandbox insurer's
// "membership active" check looks at the lines' dates of service, not at the day the claim is sent. The service clock is
// pinned at 10:00 UTC (12:00 in the practice's Johannesburg), so every date below is certain.
import assert from 'node:assert/strict';
import { after, before, beforeEach, test } from 'node:test';
import { bill, DAY, HOUR, localDate } from './billing-fixtures.ts';
import {
  addCoverage,
  ESSENTIAL,
  getInvoice,
  newPatient,
  newWorld,
  readClaim,
  type World,
} from './claims-fixtures.ts';
import { describeEachBackend, startService, type TestService } from './harness.ts';
import { createEncounter } from './support/factories.ts';

const CLASSIC = 'pln_ubuntu_classic';
const ZONE = 'Africa/Johannesburg';

describeEachBackend('membership judged on the date of service', (backend) => {
  let svc: TestService;
  let w: World;
  let today: string;
  before(async () => {
    svc = await startService(backend);
    w = await newWorld(svc);
  });
  beforeEach(() => {
    const real = new Date();
    svc.clock.set(Date.UTC(real.getUTCFullYear(), real.getUTCMonth(), real.getUTCDate(), 10));
    today = localDate(ZONE, svc.clock.now());
  });
  after(async () => {
    svc.clock.reset();
    await svc.close();
  });

  const dayBefore = (days: number) => localDate(ZONE, new Date(svc.clock.now().getTime() - days * DAY));

  /** A visit a week ago, billed and issued; answers the invoice. */
  async function lastWeeksVisit(patientId: string) {
    const end = svc.clock.now().getTime() - 7 * DAY;
    const encounter = await createEncounter(w.api, {
      patientId,
      practitionerId: w.practitionerId,
      start: new Date(end - HOUR).toISOString(),
      end: new Date(end).toISOString(),
      diagnoses: [{ code: 'J06.9' }],
      procedures: [{ code: '0190', diagnosisCodes: ['J06.9'] }],
    });
    const billed = await bill(w.api, encounter.id, { issue: true });
    assert.equal(billed.status, 201, billed.text);
    assert.equal(billed.body.invoice.lineItems[0].serviceDate, dayBefore(7));
    return billed.body.invoice;
  }

  async function claim(invoiceId: string, body: Record<string, unknown> = {}) {
    const sent = await w.api('POST', `/invoices/${invoiceId}/claim`, { body });
    await svc.worker.drain();
    return { sent, claim: sent.status === 202 ? await readClaim(w, invoiceId) : undefined };
  }

  test('a visit covered on its date is claimed under that membership after the member changed plans', async () => {
    // Essential until yesterday, Classic from today.
    const { patientId, coverageId: essential } = await newPatient(w, {
      memberNumber: 'OLD-1',
      startDate: dayBefore(365),
      endDate: dayBefore(1),
    });
    const classic = await addCoverage(w, patientId, {
      planId: CLASSIC,
      memberNumber: 'NEW-1',
      startDate: today,
    });
    const invoice = await lastWeeksVisit(patientId);
    assert.equal(
      invoice.lineItems[0].unitPrice,
      ESSENTIAL.rate0190,
      "priced from the plan of the visit's date",
    );
    assert.equal(invoice.lineItems[0].pricingSource, 'medical_aid');

    const { claim: accepted } = await claim(invoice.id);
    assert.equal(accepted!.status, 'accepted', accepted!.message);
    assert.equal((await getInvoice(w, invoice.id)).coverageId, essential, 'the membership of the visit');

    // Sent under the new membership on purpose, the insurer finds it was not active then.
    const other = await lastWeeksVisit(patientId);
    const { claim: rejected } = await claim(other.id, { coverageId: classic });
    assert.equal(rejected!.status, 'rejected');
    assert.match(rejected!.message, /not active on the date of service/);
    // And the ended membership, named, is accepted for the week-old visit.
    const third = await lastWeeksVisit(patientId);
    const { claim: named } = await claim(third.id, { coverageId: essential });
    assert.equal(named!.status, 'accepted', named!.message);
  });

  test("a coverage that starts today is not accepted for last week's visit", async () => {
    const { patientId, coverageId } = await newPatient(w, { memberNumber: 'LATE-1', startDate: today });
    const invoice = await lastWeeksVisit(patientId);
    assert.notEqual(invoice.lineItems[0].pricingSource, 'medical_aid', 'no plan covered the visit');

    const { sent } = await claim(invoice.id);
    assert.equal(sent.status, 422, sent.text);
    assert.match(sent.body.detail, /no active coverage on the invoice's dates of service/);

    const { claim: rejected } = await claim(invoice.id, { coverageId });
    assert.equal(rejected!.status, 'rejected');
    assert.match(rejected!.message, /not active on the date of service/);
  });

  test('a visit of two days is covered only by a membership active on its last day too', async () => {
    const { patientId, coverageId } = await newPatient(w, {
      memberNumber: 'ENDS-1',
      startDate: dayBefore(365),
      endDate: dayBefore(8),
    });
    const encounter = await createEncounter(w.api, {
      patientId,
      practitionerId: w.practitionerId,
      start: new Date(svc.clock.now().getTime() - 8 * DAY).toISOString(),
      end: new Date(svc.clock.now().getTime() - 7 * DAY).toISOString(),
      diagnoses: [{ code: 'J06.9' }],
      procedures: [{ code: '0190', diagnosisCodes: ['J06.9'] }],
    });
    const billed = await bill(w.api, encounter.id, { issue: true });
    assert.equal(billed.status, 201, billed.text);
    const [line] = billed.body.invoice.lineItems;
    assert.deepEqual([line.serviceDate, line.serviceDateEnd], [dayBefore(8), dayBefore(7)]);
    assert.notEqual(line.pricingSource, 'medical_aid', 'the membership ended before the last day');

    const { sent } = await claim(billed.body.invoice.id);
    assert.equal(sent.status, 422, sent.text);
    assert.match(sent.body.detail, /no active coverage on the invoice's dates of service/);

    const { claim: rejected } = await claim(billed.body.invoice.id, { coverageId });
    assert.equal(rejected!.status, 'rejected');
    assert.match(rejected!.message, /not active on the date of service/);
  });
});
