// Idempotency-Key on the operator (admin) API, seen from outside: a repeated payment with one key
// records one payment and replays the first answer, a key reused for another request is refused,
// two concurrent requests with one key make one record, money routes require the header, and the
// other acting POSTs replay without a second record, and an answer holding a secret shown once (an
// API key, a webhook signing secret) is replayed but never stored readable. Real HTTP on real
// databases.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { asOperator } from '../src/platform/db/transaction.ts';
import { SecretBox } from '../src/platform/secret-box.ts';
import { type Api, billedInvoice, billingPractice } from './billing-fixtures.ts';
import {
  type Answer,
  call,
  describeEachBackend,
  startService,
  type TestPractice,
  type TestService,
  uniqueKey,
} from './harness.ts';
import { refusedWith } from './support/refusals.ts';

type Practice = TestPractice & { api: Api };

/** A refusal here is also checked to carry its request's id. */
const SAME_REQUEST = { requestId: true };

function assertReplayOf(replay: Answer, first: Answer): void {
  assert.equal(replay.status, first.status, replay.text);
  assert.equal(replay.headers.get('idempotent-replayed'), 'true', 'the repeat is a replay');
  assert.equal(first.headers.get('idempotent-replayed'), null, 'the first run is not a replay');
  assert.deepEqual(replay.body, first.body);
  assert.equal(replay.headers.get('location'), first.headers.get('location'));
}

describeEachBackend('admin idempotency', (backend) => {
  let svc: TestService;
  let practice: Practice;
  before(async () => {
    svc = await startService(backend);
    practice = await billingPractice(svc);
  });
  after(async () => {
    await svc.close();
  });

  const issuedInvoice = async () => (await billedInvoice(svc, practice, { issue: true })).id as string;
  const pay = (invoiceId: string, key: string | undefined, amount = 100) =>
    call(svc.baseUrl, 'POST', `/admin/v1/practices/${practice.practiceId}/payments`, {
      token: svc.adminToken,
      body: { invoiceId, amount, method: 'eft' },
      ...(key !== undefined ? { idempotencyKey: key } : {}),
    });
  const paymentsOf = async (invoiceId: string) => {
    const list = await practice.api('GET', `/invoices/${invoiceId}/payments`);
    assert.equal(list.status, 200, list.text);
    return list.body.data as Array<{ id: string }>;
  };
  const listed = async (path: string) => {
    const list = await svc.admin('GET', path);
    assert.equal(list.status, 200, list.text);
    return (list.body.data as Array<{ id: string }>).map((r) => r.id);
  };

  test('a payment repeated with its key is recorded once and the first answer replayed', async () => {
    const invoiceId = await issuedInvoice();
    const key = uniqueKey();
    const first = await pay(invoiceId, key);
    assert.equal(first.status, 201, first.text);
    const again = await pay(invoiceId, key);
    assertReplayOf(again, first);
    assert.deepEqual(
      (await paymentsOf(invoiceId)).map((p) => p.id),
      [first.body.id],
    );
    // The operator's audit row of the payment names its key; the replay adds none.
    const audit = await svc.admin('GET', `/practices/${practice.practiceId}/audit-events?limit=100`);
    const rows = audit.body.data.filter((e: { resourceId: string | null }) => e.resourceId === first.body.id);
    assert.equal(rows.length, 1, JSON.stringify(rows));
    assert.equal(rows[0].idempotencyKey, key);
  });

  test('a key reused with another body or path is refused with 422 and records nothing', async () => {
    const invoiceId = await issuedInvoice();
    const key = uniqueKey();
    assert.equal((await pay(invoiceId, key, 100)).status, 201);
    refusedWith(await pay(invoiceId, key, 200), 422, 'idempotency_key_reused', undefined, SAME_REQUEST);
    const elsewhere = await svc.admin(
      'POST',
      `/practices/${practice.practiceId}/invoices/${invoiceId}/write-off`,
      { reason: 'uncollectable' },
      key,
    );
    refusedWith(elsewhere, 422, 'idempotency_key_reused', undefined, SAME_REQUEST);
    assert.equal((await paymentsOf(invoiceId)).length, 1);
    const read = await practice.api('GET', `/invoices/${invoiceId}`);
    assert.equal(read.body.status, 'partially_paid');
  });

  test('two concurrent payments with one key record one payment; the other replays or is told 409', async () => {
    const invoiceId = await issuedInvoice();
    const pairs = 20;
    let conflicts = 0;
    for (let i = 0; i < pairs; i++) {
      const key = uniqueKey();
      const answers = await Promise.all([pay(invoiceId, key, 1), pay(invoiceId, key, 1)]);
      const fresh = answers.filter((a) => a.status === 201 && a.headers.get('idempotent-replayed') === null);
      assert.equal(fresh.length, 1, answers.map((a) => `${a.status} ${a.text}`).join('\n'));
      const other = answers.find((a) => a !== fresh[0])!;
      if (other.status === 409) {
        refusedWith(other, 409, 'conflict', undefined, SAME_REQUEST);
        conflicts++;
      } else {
        assertReplayOf(other, fresh[0]!);
      }
    }
    assert.equal((await paymentsOf(invoiceId)).length, pairs, `${conflicts} of ${pairs} answered 409`);
  });

  test('the routes that move money require the header: 400 naming Idempotency-Key', async () => {
    const invoiceId = await issuedInvoice();
    const missing = await pay(invoiceId, undefined);
    refusedWith(missing, 400, 'invalid_request', undefined, SAME_REQUEST);
    assert.deepEqual(
      missing.body.errors.map((e: { field: string }) => e.field),
      ['Idempotency-Key'],
    );
    const writeOff = await call(
      svc.baseUrl,
      'POST',
      `/admin/v1/practices/${practice.practiceId}/invoices/${invoiceId}/write-off`,
      { token: svc.adminToken, body: { reason: 'uncollectable' } },
    );
    refusedWith(writeOff, 400, 'invalid_request', undefined, SAME_REQUEST);
    assert.equal(writeOff.body.errors[0].field, 'Idempotency-Key');
    const tooLong = await pay(invoiceId, 'k'.repeat(256));
    refusedWith(tooLong, 400, 'invalid_request', undefined, SAME_REQUEST);
    assert.equal(tooLong.body.errors[0].field, 'Idempotency-Key');
    assert.equal((await paymentsOf(invoiceId)).length, 0);
    assert.equal((await pay(invoiceId, 'k'.repeat(255))).status, 201);
  });

  test("a refusal of the service's rules is stored and replayed; a payment with a new key then runs", async () => {
    const invoiceId = await issuedInvoice();
    const key = uniqueKey();
    const tooMuch = await pay(invoiceId, key, 1_000_000_000);
    refusedWith(tooMuch, 422, 'validation_failed', undefined, SAME_REQUEST);
    const again = await pay(invoiceId, key, 1_000_000_000);
    refusedWith(again, 422, 'validation_failed', undefined, SAME_REQUEST);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.notEqual(again.body.requestId, tooMuch.body.requestId);
    const unknown = uniqueKey();
    const nowhere = () =>
      svc.admin(
        'POST',
        '/practices/org_doesnotexist/payments',
        { invoiceId, amount: 1, method: 'eft' },
        unknown,
      );
    refusedWith(await nowhere(), 404, 'not_found', undefined, SAME_REQUEST);
    assert.equal((await nowhere()).headers.get('idempotent-replayed'), 'true');
    assert.equal((await paymentsOf(invoiceId)).length, 0);
    assert.equal((await pay(invoiceId, uniqueKey())).status, 201);
  });

  test("the operator's keys are apart from every client's: one key on both APIs runs both", async () => {
    const invoiceId = await issuedInvoice();
    const key = uniqueKey();
    const patient = await practice.api('POST', '/patients', {
      idempotencyKey: key,
      body: {
        givenNames: ['Ada'],
        lastName: 'Lovelace',
        birthDate: '1990-01-01',
      },
    });
    assert.equal(patient.status, 201, patient.text);
    const paid = await pay(invoiceId, key);
    assert.equal(paid.status, 201, paid.text);
    assert.equal(paid.headers.get('idempotent-replayed'), null);
  });

  test('the other acting POSTs replay with their key and make no second record', async () => {
    const { practiceId } = practice;
    // Issue a key.
    const keyKey = uniqueKey();
    const issued = await svc.admin('POST', `/clients/${practice.clientId}/keys`, {}, keyKey);
    assert.equal(issued.status, 201, issued.text);
    const keysBefore = await listed(`/clients/${practice.clientId}/keys`);
    assertReplayOf(await svc.admin('POST', `/clients/${practice.clientId}/keys`, {}, keyKey), issued);
    assert.deepEqual(await listed(`/clients/${practice.clientId}/keys`), keysBefore);

    // Create a client.
    const clientKey = uniqueKey();
    const clientBody = { name: 'Front desk', permissions: ['PATIENTS:READ'] };
    const client = await svc.admin('POST', `/practices/${practiceId}/clients`, clientBody, clientKey);
    assert.equal(client.status, 201, client.text);
    const clientsBefore = await listed(`/practices/${practiceId}/clients`);
    assertReplayOf(
      await svc.admin('POST', `/practices/${practiceId}/clients`, clientBody, clientKey),
      client,
    );
    assert.deepEqual(await listed(`/practices/${practiceId}/clients`), clientsBefore);

    // Create a webhook endpoint.
    const endpointKey = uniqueKey();
    const endpointBody = { url: 'https://receiver.example/hooks' };
    const endpoint = await svc.admin(
      'POST',
      `/practices/${practiceId}/webhook-endpoints`,
      endpointBody,
      endpointKey,
    );
    assert.equal(endpoint.status, 201, endpoint.text);
    const endpointsBefore = await listed(`/practices/${practiceId}/webhook-endpoints`);
    assertReplayOf(
      await svc.admin('POST', `/practices/${practiceId}/webhook-endpoints`, endpointBody, endpointKey),
      endpoint,
    );
    assert.deepEqual(await listed(`/practices/${practiceId}/webhook-endpoints`), endpointsBefore);

    // Cancel an invoice: the replay answers the cancelled invoice; a new request is refused, as cancelled.
    const cancelKey = uniqueKey();
    const toCancel = (await billedInvoice(svc, practice)).id as string;
    const cancelPath = `/practices/${practiceId}/invoices/${toCancel}/cancel`;
    const cancelled = await svc.admin('POST', cancelPath, { reason: 'duplicate' }, cancelKey);
    assert.equal(cancelled.status, 200, cancelled.text);
    assert.equal(cancelled.body.status, 'cancelled');
    assertReplayOf(await svc.admin('POST', cancelPath, { reason: 'duplicate' }, cancelKey), cancelled);
    assert.equal((await svc.admin('POST', cancelPath, { reason: 'duplicate' })).status, 422);

    // Write off an invoice (money: the key is required).
    const writeOffKey = uniqueKey();
    const toWriteOff = await issuedInvoice();
    const writeOffPath = `/practices/${practiceId}/invoices/${toWriteOff}/write-off`;
    const writtenOff = await svc.admin('POST', writeOffPath, { reason: 'uncollectable' }, writeOffKey);
    assert.equal(writtenOff.status, 200, writtenOff.text);
    assert.equal(writtenOff.body.status, 'written_off');
    assertReplayOf(
      await svc.admin('POST', writeOffPath, { reason: 'uncollectable' }, writeOffKey),
      writtenOff,
    );

    // Redeliver an event: the replay names the same deliveries; a new request queues new ones.
    const events = await practice.api('GET', '/events?limit=100');
    assert.equal(events.status, 200, events.text);
    const eventId = events.body.data.find((e: { type: string }) => e.type === 'invoice.issued').id;
    const redeliverPath = `/practices/${practiceId}/events/${eventId}/redeliver`;
    const redeliverKey = uniqueKey();
    const redelivered = await svc.admin('POST', redeliverPath, {}, redeliverKey);
    assert.equal(redelivered.status, 202, redelivered.text);
    assert.equal(redelivered.body.queued, 1);
    assertReplayOf(await svc.admin('POST', redeliverPath, {}, redeliverKey), redelivered);
    const anew = await svc.admin('POST', redeliverPath, {});
    assert.equal(anew.status, 202, anew.text);
    assert.notDeepEqual(anew.body.deliveryIds, redelivered.body.deliveryIds);
  });

  /** The operator's stored record of an Idempotency-Key, every column as text. */
  const storedRecord = async (key: string) => {
    const row = await asOperator(svc.db, (trx) =>
      trx
        .selectFrom('operator_idempotency_keys')
        .selectAll()
        .where('key', '=', key)
        .executeTakeFirstOrThrow(),
    );
    return JSON.stringify(row);
  };
  const assertNotStored = (record: string, secret: string, prefix: string) => {
    assert.ok(secret.startsWith(prefix), secret);
    assert.ok(!record.includes(secret), `the stored record holds the secret: ${record}`);
    assert.ok(!record.includes(prefix), `the stored record holds ${prefix}: ${record}`);
    // Nor its JSON-escaped form (a secret in base64 may hold a slash or a plus).
    assert.ok(!record.includes(JSON.stringify(secret).slice(1, -1)), record);
  };

  test('an issued API key is replayed with its key but stored only sealed', async () => {
    const key = uniqueKey();
    const path = `/clients/${practice.clientId}/keys`;
    const issued = await svc.admin('POST', path, {}, key);
    assert.equal(issued.status, 201, issued.text);
    const secret = issued.body.key as string;
    assertNotStored(await storedRecord(key), secret, 'pbk_');
    const replay = await svc.admin('POST', path, {}, key);
    assertReplayOf(replay, issued);
    assert.equal(replay.body.key, secret);
    // The key replayed is the key issued: it authenticates.
    const me = await call(svc.baseUrl, 'GET', '/api/v1/events?limit=1', { token: replay.body.key });
    assert.equal(me.status, 200, me.text);
  });

  test('a webhook secret, on create and on rotation, is replayed but stored only sealed', async () => {
    const { practiceId } = practice;
    const createKey = uniqueKey();
    const body = { url: 'https://receiver.example/sealed' };
    const created = await svc.admin('POST', `/practices/${practiceId}/webhook-endpoints`, body, createKey);
    assert.equal(created.status, 201, created.text);
    assertNotStored(await storedRecord(createKey), created.body.secret, 'whsec_');
    const createReplay = await svc.admin(
      'POST',
      `/practices/${practiceId}/webhook-endpoints`,
      body,
      createKey,
    );
    assertReplayOf(createReplay, created);
    assert.equal(createReplay.body.secret, created.body.secret);

    const rotateKey = uniqueKey();
    const rotatePath = `/practices/${practiceId}/webhook-endpoints/${created.body.id}/rotate-secret`;
    const rotated = await svc.admin('POST', rotatePath, undefined, rotateKey);
    assert.equal(rotated.status, 200, rotated.text);
    assert.notEqual(rotated.body.secret, created.body.secret);
    assertNotStored(await storedRecord(rotateKey), rotated.body.secret, 'whsec_');
    const rotateReplay = await svc.admin('POST', rotatePath, undefined, rotateKey);
    assertReplayOf(rotateReplay, rotated);
    assert.equal(rotateReplay.body.secret, rotated.body.secret);
    // The replay rotated nothing: the secret it answers is the one that signs.
    const stored = await asOperator(svc.db, (trx) =>
      trx
        .selectFrom('webhook_endpoints')
        .select('secret_encrypted')
        .where('id', '=', created.body.id)
        .executeTakeFirstOrThrow(),
    );
    assert.equal(svc.deps.secrets!.open(stored.secret_encrypted), rotated.body.secret);
  });

  test('without SECRET_ENCRYPTION_KEY an issued key is answered once, not kept: a repeat is told 422', async () => {
    const deps = svc.deps as { secrets: SecretBox | undefined };
    const box = deps.secrets;
    const path = `/clients/${practice.clientId}/keys`;
    try {
      deps.secrets = undefined;
      const key = uniqueKey();
      const issued = await svc.admin('POST', path, {}, key);
      assert.equal(issued.status, 201, issued.text);
      assertNotStored(await storedRecord(key), issued.body.key, 'pbk_');
      const keysAfter = await listed(path);
      const repeat = await svc.admin('POST', path, {}, key);
      refusedWith(repeat, 422, 'unprocessable', undefined, SAME_REQUEST);
      assert.match(repeat.body.detail, /SECRET_ENCRYPTION_KEY/);
      assert.equal(repeat.headers.get('idempotent-replayed'), 'true');
      assert.deepEqual(await listed(path), keysAfter, 'the repeat issued no key');

      // Sealed with one key, a repeat under another cannot open it: told the same, never a 500.
      deps.secrets = box;
      const sealedKey = uniqueKey();
      assert.equal((await svc.admin('POST', path, {}, sealedKey)).status, 201);
      deps.secrets = new SecretBox(randomBytes(32));
      refusedWith(
        await svc.admin('POST', path, {}, sealedKey),
        422,
        'unprocessable',
        undefined,
        SAME_REQUEST,
      );
    } finally {
      deps.secrets = box;
    }
  });

  test('an acting POST without a key still runs, each time', async () => {
    const create = () =>
      call(svc.baseUrl, 'POST', '/admin/v1/practices', { token: svc.adminToken, body: { name: 'No key' } });
    const first = await create();
    const second = await create();
    assert.equal(first.status, 201, first.text);
    assert.equal(second.status, 201, second.text);
    assert.notEqual(first.body.id, second.body.id);
  });
});
