// Where a billed line's price comes from (DECISIONS "Bill" and "Rates map to pricingSource"): the first
// rate found in the order practitioner favourite, practice price, plan rate (the patient's first active
// coverage, or BillRequest.coverageId), scheme rate, governing body, code default; and
// GET /invoices/{id}/line-items/{lineItemId}/rates listing every known rate in that order with the
// line's current price marked, paged.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  type Api,
  addCoverage,
  allPages,
  bill,
  billingPractice,
  type Json,
  lineBody,
  newPatient,
  newVisit,
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

const BODY = 'Sandbox Health Professions Tariff Board';

function priced(invoice: Json) {
  return Object.fromEntries(
    invoice.lineItems.map((l: Json) => [l.code, [l.unitPrice, l.pricingSource, l.total]]),
  );
}

describeEachBackend('pricing and rates', (backend) => {
  let svc: TestService;
  let practice: TestPractice & { api: Api };
  let practiceName: string;
  let houseUrl: string;
  let patientId: string;
  let protea: string;
  let invoice: Json;

  before(async () => {
    svc = await startService(backend);
    practice = await billingPractice(svc);
    practiceName = (await svc.admin('GET', `/practices/${practice.practiceId}`)).body.name;
    const price = (body: Record<string, unknown>) =>
      svc.admin('POST', `/practices/${practice.practiceId}/prices`, { system: TARIFF_URL, ...body });
    assert.equal(
      (await price({ code: '0190', amount: 11100, practitionerId: practice.practitionerId })).status,
      201,
    );
    assert.equal((await price({ code: '0190', amount: 22200 })).status, 201);
    assert.equal((await price({ code: '0191', amount: 33300 })).status, 201);
    const system = await practice.api('POST', '/code-systems', {
      body: { name: 'House procedures', usage: ['procedure'] },
      idempotencyKey: uniqueKey(),
    });
    assert.equal(system.status, 201, system.text);
    houseUrl = system.body.url;
    const concept = await practice.api('POST', `/code-systems/${system.body.id}/concepts`, {
      body: { code: 'H1', display: 'House dressing', defaultPrice: 4321 },
      idempotencyKey: uniqueKey(),
    });
    assert.equal(concept.status, 201, concept.text);

    patientId = await newPatient(practice.api);
    // an inactive plan is skipped; the first active coverage is Karoo Hospital Plus
    await addCoverage(practice.api, patientId, 'pln_ubuntu_saver');
    await addCoverage(practice.api, patientId, 'pln_karoo_hospital_plus');
    protea = await addCoverage(practice.api, patientId, 'pln_protea_executive');
    const visit = await newVisit(svc, practice.api, practice.practitionerId, patientId, {
      procedures: ['0190', '0191', '0192', '4057', '0160']
        .map((code) => ({ code }))
        .concat([{ code: 'H1', system: houseUrl } as { code: string }]),
    });
    const answer = await bill(practice.api, visit.id);
    assert.equal(answer.status, 201, answer.text);
    invoice = answer.body.invoice;
  });
  after(async () => {
    await svc.close();
  });

  test('each line takes the first rate found, with its pricingSource', () => {
    assert.deepEqual(priced(invoice), {
      '0190': [11100, 'favorite', 11100], // practitioner favourite beats the practice price
      '0191': [33300, 'custom', 33300], // practice price beats the plan
      '0192': [102850, 'medical_aid', 102850], // Karoo Hospital Plus rate
      '4057': [6180, 'medical_aid', 6180], // the plan has none: Karoo Mutual scheme rate
      '0160': [36000, 'governing_body', 36000], // neither plan nor scheme
      H1: [4321, 'custom', 4321], // the code's own default price
    });
    assert.equal(invoice.coverageId, null, 'pricing does not make it a claimed coverage');
  });

  test('coverageId chooses the plan; without coverage the governing body prices it', async () => {
    const visit = await newVisit(svc, practice.api, practice.practitionerId, patientId, {
      procedures: [{ code: '0192' }, { code: '0160' }],
    });
    const chosen = await bill(practice.api, visit.id, { coverageId: protea });
    assert.equal(chosen.status, 201, chosen.text);
    assert.deepEqual(priced(chosen.body.invoice), {
      '0192': [157300, 'medical_aid', 157300],
      '0160': [46800, 'medical_aid', 46800],
    });
    const uninsured = await newPatient(practice.api);
    const plain = await newVisit(svc, practice.api, practice.practitionerId, uninsured, {
      procedures: [{ code: '0192' }],
    });
    const answer = await bill(practice.api, plain.id);
    assert.deepEqual(priced(answer.body.invoice), { '0192': [121000, 'governing_body', 121000] });
  });

  test("another practitioner's visit does not get the favourite", async () => {
    const other = await svc.admin('POST', `/practices/${practice.practiceId}/practitioners`, {
      name: 'Dr Other',
    });
    const visit = await newVisit(svc, practice.api, other.body.id, patientId, {
      procedures: [{ code: '0190' }],
    });
    const answer = await bill(practice.api, visit.id);
    assert.deepEqual(priced(answer.body.invoice), { '0190': [22200, 'custom', 22200] });
  });

  const ratesOf = (code: string, inv: Json = invoice) => {
    const line = inv.lineItems.find((l: Json) => l.code === code);
    return `/invoices/${inv.id}/line-items/${line.id}/rates`;
  };

  test('rates lists every known rate in source order, marking the current one', async () => {
    const answer = await practice.api('GET', ratesOf('0190'));
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.body.object, 'list');
    assert.equal(answer.body.hasMore, false);
    assert.equal(answer.body.nextCursor, null);
    const rate = (
      source: string,
      name: string | null,
      amount: number,
      pricingSource: string,
      current = false,
    ) => ({
      object: 'rate',
      source,
      name,
      amount,
      currency: 'ZAR',
      pricingSource,
      current,
    });
    assert.deepEqual(answer.body.data, [
      rate('practitioner', 'Dr Bill', 11100, 'favorite', true),
      rate('practice', practiceName, 22200, 'custom'),
      rate('insurance_plan', 'Karoo Hospital Plus', 46750, 'medical_aid'),
      rate('insurance_scheme', 'Karoo Mutual Medical Aid', 52250, 'medical_aid'),
      rate('governing_body', BODY, 55000, 'governing_body'),
    ]);
    const house = await practice.api('GET', ratesOf('H1'));
    assert.deepEqual(house.body.data, [rate('code_default', null, 4321, 'custom', true)]);
    const scheme = await practice.api('GET', ratesOf('4057'));
    assert.deepEqual(
      scheme.body.data.map((r: Json) => [r.source, r.amount, r.current]),
      [
        ['insurance_scheme', 6180, true],
        ['governing_body', 6500, false],
      ],
    );
  });

  test('current follows the line: a chosen rate, then a price set by hand', async () => {
    const visit = await newVisit(svc, practice.api, practice.practitionerId, patientId, {
      procedures: [{ code: '0190' }],
    });
    const fresh = (await bill(practice.api, visit.id)).body.invoice;
    const line = fresh.lineItems[0];
    const path = `/invoices/${fresh.id}/line-items/${line.id}`;
    const use = (unitPrice: number, pricingSource?: string) =>
      practice.api('PUT', path, {
        body: lineBody({
          code: '0190',
          serviceDate: line.serviceDate,
          unitPrice,
          ...(pricingSource ? { pricingSource } : {}),
        }),
      });
    const currentOf = async () =>
      (await practice.api('GET', `${path}/rates`)).body.data
        .filter((r: Json) => r.current)
        .map((r: Json) => r.source);
    assert.deepEqual(await currentOf(), ['practitioner']);
    assert.equal((await use(55000, 'governing_body')).status, 200);
    assert.deepEqual(await currentOf(), ['governing_body']);
    assert.equal((await use(46750, 'medical_aid')).status, 200);
    assert.deepEqual(await currentOf(), ['insurance_plan']);
    assert.equal((await use(55000)).status, 200, 'same amount, set by hand');
    assert.deepEqual(await currentOf(), []);
  });

  test('rates page one at a time to the same list; a cursor of another line is invalid_cursor', async () => {
    const full = (await practice.api('GET', ratesOf('0190'))).body.data;
    const first = await practice.api('GET', `${ratesOf('0190')}?limit=1`);
    assert.equal(first.body.data.length, 1);
    assert.equal(first.body.hasMore, true);
    assert.equal(typeof first.body.nextCursor, 'string');
    assert.deepEqual(await allPages(practice.api, `${ratesOf('0190')}?limit=1`), full);
    const elsewhere = await practice.api(
      'GET',
      `${ratesOf('0191')}?limit=1&cursor=${encodeURIComponent(first.body.nextCursor)}`,
    );
    refusedWith(elsewhere, 400, 'invalid_cursor');
    refusedWith(await practice.api('GET', `${ratesOf('0190')}?cursor=nonsense`), 400, 'invalid_cursor');
  });

  test('an unknown line, or a line of another invoice, is 404', async () => {
    const visit = await newVisit(svc, practice.api, practice.practitionerId, patientId);
    const other = (await bill(practice.api, visit.id)).body.invoice;
    refusedWith(
      await practice.api('GET', `/invoices/${invoice.id}/line-items/li_madeup00000000/rates`),
      404,
      'not_found',
    );
    refusedWith(
      await practice.api('GET', `/invoices/${invoice.id}/line-items/${other.lineItems[0].id}/rates`),
      404,
      'not_found',
    );
  });
});
