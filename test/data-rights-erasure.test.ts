// De-identifying a patient (POPIA s14(4), s24): on request with POST /patients/{id}/erase, and by the
// worker once retention has ended. The person must be gone from every table, the events feed and
// later webhooks, while the books add up as before.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { periodicTasks } from '../src/job-catalogue.ts';
import { recordDelivery } from '../src/notifications/store.ts';
import { addYears as addYearsTo } from '../src/patients/retention.ts';
import {
  type Api,
  addCoverage,
  asOps,
  billedInvoice,
  billingPractice,
  DAY,
  newVisit,
} from './billing-fixtures.ts';
import { billVisit, newPatient as newClaimsPatient, newWorld, W19_SECOND_LINE } from './claims-fixtures.ts';
import { describeEachBackend, startService, type TestService, uniqueKey } from './harness.ts';
import { addEndpoint, Receiver } from './webhooks-fixtures.ts';

const YEAR = 365 * DAY;
const SYSTEM = 'urn:test:mrn';

interface Person {
  givenName: string;
  lastName: string;
  birthDate: string;
  externalValue: string;
}

function aPerson(birthDate: string): Person {
  const tag = randomBytes(4).toString('hex');
  return { givenName: `Zanele${tag}`, lastName: `Mokoena${tag}`, birthDate, externalValue: `mrn-${tag}` };
}

async function register(api: Api, person: Person): Promise<string> {
  const answer = await api('POST', '/patients', {
    body: {
      givenNames: [person.givenName, 'Thandi'],
      lastName: person.lastName,
      birthDate: person.birthDate,
      externalId: { system: SYSTEM, value: person.externalValue },
      identifiers: [
        { type: 'national_id', value: `${person.birthDate.replaceAll('-', '').slice(2)}5009087` },
      ],
      contactPoints: [{ system: 'email', value: `${person.givenName}@example.org` }],
      addresses: [{ lines: [`12 ${person.lastName} Street`], city: 'Durban', country: 'ZA' }],
    },
    idempotencyKey: uniqueKey(),
  });
  assert.equal(answer.status, 201, answer.text);
  return answer.body.id;
}

/** Every table and column (each row read whole as text) where any of `needles` still appears. */
async function tablesMentioning(svc: TestService, needles: string[]): Promise<string[]> {
  const tables = await sql<{ table_name: string }>`
    SELECT table_name FROM information_schema.tables
    WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name`.execute(svc.db.kysely);
  const patterns = needles.map((n) => `%${n}%`);
  const found: string[] = [];
  for (const { table_name } of tables.rows) {
    const hits = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM ${sql.table(table_name)} AS t WHERE t::text ILIKE ANY(${patterns})`.execute(
      svc.db.kysely,
    );
    if (hits.rows[0]!.n > 0) found.push(table_name);
  }
  return found;
}

/** The notification that e-mailed the patient their account of the invoice, as the operator sees it. */
async function accountNotice(svc: TestService, practiceId: string, invoiceId: string) {
  const list = await svc.admin('GET', `/practices/${practiceId}/notifications?subjectId=${invoiceId}`);
  assert.equal(list.status, 200, list.text);
  const notice = list.body.data.find((n: { recipient: string }) => n.recipient === 'patient');
  assert.ok(notice, list.text);
  return notice as { id: string; delivery: string; deliveryDetail: string | null };
}

/** The practice's books: invoices, payments, refunds and claims, counted and summed. */
async function books(svc: TestService, practiceId: string) {
  const result = await sql`
    SELECT
      (SELECT json_build_array(count(*), sum(total_net), sum(total_gross), sum(amount_paid))::text
         FROM invoices WHERE practice_id = ${practiceId}) AS invoices,
      (SELECT json_build_array(count(*), sum(total), string_agg(code, ',' ORDER BY id))::text
         FROM invoice_lines WHERE practice_id = ${practiceId}) AS lines,
      (SELECT json_build_array(count(*), sum(amount))::text FROM payments WHERE practice_id = ${practiceId}) AS payments,
      (SELECT json_build_array(count(*), sum(amount))::text FROM refunds WHERE practice_id = ${practiceId}) AS refunds,
      (SELECT json_build_array(count(*), sum(submitted), sum(benefit))::text
         FROM claim_items WHERE practice_id = ${practiceId}) AS claims`.execute(svc.db.kysely);
  return result.rows[0];
}

describeEachBackend('de-identifying a patient', (backend) => {
  let svc: TestService;
  let receiver: Receiver;
  before(async () => {
    svc = await startService(backend);
    receiver = await Receiver.forService(svc);
  });
  after(async () => {
    await receiver.close();
    await svc.close();
  });

  async function pay(api: Api, invoiceId: string): Promise<void> {
    const invoice = await api('GET', `/invoices/${invoiceId}`);
    const paid = await api('POST', `/invoices/${invoiceId}/payments`, {
      body: { method: 'card', amount: invoice.body.balanceDue },
      idempotencyKey: uniqueKey(),
    });
    assert.equal(paid.status, 201, paid.text);
  }

  test('on request: refused while an invoice is open or inside retention; with a lawful ground the person is gone and the books add up', async () => {
    const practice = await billingPractice(svc);
    await addEndpoint(svc, practice.practiceId, receiver);
    const person = aPerson('1957-11-03');
    const patientId = await register(practice.api, person);
    const plans = await practice.api('GET', '/insurance-plans?limit=1');
    await addCoverage(practice.api, patientId, plans.body.data[0].id);
    const invoice = await billedInvoice(svc, practice, { patientId, issue: true });
    const erase = (body: Record<string, unknown>, idempotencyKey?: string) =>
      practice.api('POST', `/patients/${patientId}/erase`, {
        body,
        ...(idempotencyKey ? { idempotencyKey } : {}),
      });

    const open = await erase({ reason: 'Request by the patient, 2026-12-01' });
    assert.equal(open.status, 422, open.text);
    assert.equal(open.body.code, 'business_rule');
    assert.match(open.body.detail, /open_invoice/);
    assert.match(open.body.detail, /retention_required/);
    await pay(practice.api, invoice.id);
    const kept = await erase({ reason: 'Request by the patient, 2026-12-01' });
    assert.equal(kept.status, 422, kept.text);
    assert.doesNotMatch(kept.body.detail, /open_invoice/);
    assert.match(kept.body.detail, /retention_required/);

    const booksBefore = await books(svc, practice.practiceId);
    const since = new Date(svc.clock.now().getTime() - 1000).toISOString();
    await svc.worker.drain();
    const deliveredBefore = receiver.requests.length;
    // A mail server refused the account's e-mail quoting the address, and the mail job recorded it.
    const email = `${person.givenName}@example.org`;
    const notice = await accountNotice(svc, practice.practiceId, invoice.id);
    await asOps(svc, (trx) =>
      recordDelivery(
        trx,
        practice.practiceId,
        notice.id,
        'failed',
        `550 5.1.1 <${email}>: Recipient address rejected: User unknown`,
        svc.clock.now(),
      ),
    );
    const lawful = {
      reason: 'Request by the patient, 2026-12-01',
      lawfulGround:
        'The patient moved abroad and withdrew consent; no claim is pending (POPIA s11(2)(b), s14(1)(d)).',
    };
    const key = uniqueKey();
    const erased = await erase(lawful, key);
    assert.equal(erased.status, 200, erased.text);
    const replayed = await erase(lawful, key);
    assert.equal(replayed.status, 200, replayed.text);
    assert.equal(replayed.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(replayed.body, erased.body);
    const read = await practice.api('GET', `/patients/${patientId}`);
    assert.equal(read.status, 200, read.text);
    for (const patient of [erased.body, read.body]) {
      assert.equal(patient.erased, true);
      assert.equal(patient.birthYear, 1957);
      assert.deepEqual(
        [patient.givenNames, patient.lastName, patient.birthDate, patient.externalId, patient.identifiers],
        [[], null, null, null, []],
      );
      assert.deepEqual([patient.contactPoints, patient.addresses, patient.prefix], [[], [], null]);
    }

    // Nowhere in the database: every table's rows, read whole as text.
    assert.deepEqual(await tablesMentioning(svc, [person.givenName, person.lastName, person.birthDate]), []);
    const erasedNotice = await accountNotice(svc, practice.practiceId, invoice.id);
    assert.equal(erasedNotice.delivery, 'failed');
    assert.equal(erasedNotice.deliveryDetail, 'removed when the patient was de-identified');
    assert.deepEqual(await books(svc, practice.practiceId), booksBefore);
    // The visit's diagnoses and procedures are gone; the invoice stays, no longer naming a person.
    const visits = await practice.api('GET', `/encounters?patientId=${patientId}`);
    assert.equal(visits.status, 200, visits.text);
    for (const visit of visits.body.data) assert.deepEqual([visit.diagnoses, visit.procedures], [[], []]);
    const changed = await practice.api('GET', `/invoices?updatedSince=${encodeURIComponent(since)}`);
    const listed = changed.body.data.find((i: { id: string }) => i.id === invoice.id);
    assert.ok(listed, 'the updatedSince feed lists the invoice again');
    assert.equal(listed.recipientName, null);
    assert.equal(listed.balanceDue, 0);

    // The events feed and the webhooks name the patient's id only.
    const feed = await practice.api('GET', '/events?type=patient.erased');
    assert.equal(feed.status, 200, feed.text);
    assert.deepEqual(
      feed.body.data.map((e: { data: unknown }) => e.data),
      [{ object: 'patient', id: patientId, url: `${svc.baseUrl}/api/v1/patients/${patientId}` }],
    );
    await svc.worker.drain();
    const later = receiver.requests.slice(deliveredBefore);
    assert.ok(later.some((r) => JSON.parse(r.body).type === 'patient.erased' && r.body.includes(patientId)));
    for (const text of [(await practice.api('GET', '/events')).text, ...later.map((r) => r.body)]) {
      for (const needle of [person.givenName, person.lastName, person.birthDate])
        assert.ok(!text.includes(needle));
    }

    const refilled = await practice.api('PATCH', `/patients/${patientId}`, {
      body: { lastName: person.lastName },
    });
    assert.equal(refilled.status, 422, refilled.text);
    assert.equal(refilled.body.code, 'business_rule');
    const visit = await practice.api('POST', '/encounters', {
      body: {
        patientId,
        practitionerId: practice.practitionerId,
        start: new Date(svc.clock.now().getTime() - DAY).toISOString(),
        end: new Date(svc.clock.now().getTime() - DAY + 600_000).toISOString(),
        diagnoses: [{ code: 'J06.9' }],
        procedures: [{ code: '0190', diagnosisCodes: ['J06.9'] }],
      },
      idempotencyKey: uniqueKey(),
    });
    assert.equal(visit.status, 422, visit.text);
    assert.deepEqual(
      visit.body.errors.map((e: { field: string }) => e.field),
      ['patientId'],
    );
    const coverage = await practice.api('POST', `/patients/${patientId}/coverages`, {
      body: { planId: plans.body.data[0].id, memberNumber: 'M-NEW-1' },
      idempotencyKey: uniqueKey(),
    });
    assert.equal(coverage.status, 422, coverage.text);
    assert.equal(coverage.body.code, 'business_rule');
    const again = await erase({ reason: 'Twice' });
    assert.equal(again.status, 422, again.text);
    assert.match(again.body.detail, /already_erased/);
    // The practice's own number is free again.
    const newcomer = await register(practice.api, {
      ...aPerson('1990-01-01'),
      externalValue: person.externalValue,
    });
    assert.notEqual(newcomer, patientId);
  });

  test('retentionYears is part of the billing settings: 6 by default, never below 6', async () => {
    const practice = await billingPractice(svc);
    const path = `/practices/${practice.practiceId}/billing-settings`;
    assert.equal((await svc.admin('GET', path)).body.retentionYears, 6);
    const settings = { vatRateBasisPoints: 0, paymentTermsDays: 30, invoiceNumberPrefix: 'INV-' };
    const low = await svc.admin('PUT', path, { ...settings, retentionYears: 5 });
    assert.equal(low.status, 422, low.text);
    assert.deepEqual(
      low.body.errors.map((e: { field: string }) => e.field),
      ['retentionYears'],
    );
    const set = await svc.admin('PUT', path, { ...settings, retentionYears: 10 });
    assert.equal(set.status, 200, set.text);
    assert.equal((await svc.admin('GET', path)).body.retentionYears, 10);
  });

  test("the worker de-identifies dormant patients, keeping a minor until their 21st birthday and the practice's longer retention", async () => {
    const task = periodicTasks(svc.deps.config).find((t) => t.name === 'erase-dormant-patients');
    assert.ok(task);
    const run = () => task.run({ db: svc.db, clock: svc.clock } as Parameters<typeof task.run>[0]);
    const six = await billingPractice(svc);
    const ten = await billingPractice(svc);
    const tenPath = `/practices/${ten.practiceId}/billing-settings`;
    await svc.admin('PUT', tenPath, {
      vatRateBasisPoints: 0,
      paymentTermsDays: 30,
      invoiceNumberPrefix: 'INV-',
      retentionYears: 10,
    });
    const today = svc.clock.now();
    const tenYearsAgo = new Date(today.getTime() - 10 * YEAR - 30 * DAY).toISOString().slice(0, 10);
    const adult = aPerson('1970-05-05');
    const minor = aPerson(tenYearsAgo);
    const adultId = await register(six.api, adult);
    const minorId = await register(six.api, minor);
    const longKeptId = await register(ten.api, aPerson('1971-06-06'));
    const openId = await register(six.api, aPerson('1972-07-07'));
    const lifelongId = await register(six.api, aPerson('1973-08-08'));
    const kept = await six.api('PUT', `/patients/${lifelongId}/retention`, { body: { lifelong: true } });
    assert.equal(kept.status, 200, kept.text);
    assert.deepEqual([kept.body.lifelong, kept.body.retentionEndsOn, kept.body.dormant], [true, null, false]);
    const adultRetention = await six.api('GET', `/patients/${adultId}/retention`);
    assert.equal(adultRetention.status, 200, adultRetention.text);
    assert.equal(adultRetention.body.retentionEndsOn > adultRetention.body.lastActivityOn, true);
    assert.equal(adultRetention.body.dormant, false);
    const minorRetention = await six.api('GET', `/patients/${minorId}/retention`);
    assert.equal(
      minorRetention.body.retentionEndsOn,
      addYearsTo(minor.birthDate, 21),
      "the minor's 21st birthday",
    );
    await pay(six.api, (await billedInvoice(svc, six, { patientId: adultId, issue: true })).id);
    await newVisit(svc, six.api, six.practitionerId, minorId);
    await billedInvoice(svc, six, { patientId: openId, issue: true });
    const state = async (api: Api, id: string) => (await api('GET', `/patients/${id}`)).body.erased === true;
    try {
      assert.equal(await run(), 0, 'nobody is dormant yet');
      svc.clock.advance(6 * YEAR + 10 * DAY);
      await run();
      assert.deepEqual(
        [await state(six.api, adultId), await state(six.api, minorId), await state(ten.api, longKeptId)],
        [true, false, false],
        'six years on: the adult only',
      );
      assert.equal(await state(six.api, openId), false, 'an open invoice keeps the patient');
      svc.clock.advance(5 * YEAR);
      await run();
      assert.deepEqual(
        [await state(six.api, minorId), await state(ten.api, longKeptId)],
        [true, true],
        'past the 21st birthday and past ten years',
      );
      assert.deepEqual(await tablesMentioning(svc, [adult.lastName, minor.lastName, minor.birthDate]), []);
      assert.equal(await state(six.api, lifelongId), false, 'a patient kept for life stays');
      assert.equal(await run(), 0, 'repeating does nothing more');
    } finally {
      svc.clock.reset();
    }
  });
});

describeEachBackend('de-identifying a patient whose invoice was claimed', (backend) => {
  let svc: TestService;
  before(async () => {
    svc = await startService(backend);
  });
  after(async () => {
    await svc.close();
  });

  test("the claim's amounts stay; the member number and diagnoses sent to the insurer are kept nowhere", async () => {
    const w = await newWorld(svc);
    const memberNumber = `M-${randomBytes(5).toString('hex')}`;
    const { patientId } = await newClaimsPatient(w, { memberNumber });
    const billed = await billVisit(w, patientId, W19_SECOND_LINE, { issue: true, submitClaim: true });
    const invoiceId = billed.body.invoice.id as string;
    await svc.worker.drain();
    const claimed = await w.api('GET', `/invoices/${invoiceId}`);
    assert.notEqual(claimed.body.claimStatus, null, claimed.text);
    if (claimed.body.balanceDue > 0) await payBalance(w.api, invoiceId);
    await svc.worker.drain();
    assert.ok(
      (await tablesMentioning(svc, [memberNumber])).includes('jobs'),
      'the submission named the member',
    );
    const booksBefore = await books(svc, w.practiceId);
    const erased = await w.api('POST', `/patients/${patientId}/erase`, {
      body: { reason: 'Request by the patient', lawfulGround: 'Consent withdrawn (POPIA s11(2)(b))' },
    });
    assert.equal(erased.status, 200, erased.text);
    assert.deepEqual(await tablesMentioning(svc, [memberNumber]), []);
    assert.deepEqual(await books(svc, w.practiceId), booksBefore);
  });
});

async function payBalance(api: Api, invoiceId: string): Promise<void> {
  const invoice = await api('GET', `/invoices/${invoiceId}`);
  const paid = await api('POST', `/invoices/${invoiceId}/payments`, {
    body: { method: 'card', amount: invoice.body.balanceDue },
    idempotencyKey: uniqueKey(),
  });
  assert.equal(paid.status, 201, paid.text);
}
