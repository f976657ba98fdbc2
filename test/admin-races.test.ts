// Operator writes racing each other on one record: each pair is sent together many times, so that on
// PostgreSQL (where the admin API's transactions run side by side) the two interleave. Whatever the
// order, no answer is a 5xx; a change that loses to a delete answers 404 not_found; of two deletes
// exactly one answers 200; and a change that repeats an earlier one (suspend, revoke) keeps the
// first one's time. On PGlite the pairs are serialised, so the same checks hold trivially.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { asOperator } from '../src/platform/db/transaction.ts';
import { type Answer, describeEachBackend, startService, type TestService } from './harness.ts';
import { noServerError, oneDeleteWon, ROUNDS } from './support/races.ts';
import { addEndpoint, billVisit, endpointPath, Receiver, sleep } from './webhooks-fixtures.ts';

/** A 404 answered as every admin 404 is: a Problem with code not_found. */
function assertNotFound(answer: Answer): void {
  assert.equal(answer.status, 404, answer.text);
  assert.equal(answer.body.code, 'not_found', answer.text);
  assert.equal(answer.body.status, 404);
}

describeEachBackend('racing operator writes', (backend) => {
  let svc: TestService;

  before(async () => {
    svc = await startService(backend);
  });
  after(async () => {
    await svc.close();
  });

  const newEndpoint = async (practiceId: string): Promise<string> => {
    const created = await svc.admin('POST', `/practices/${practiceId}/webhook-endpoints`, {
      url: 'http://127.0.0.1:9/hook',
    });
    assert.equal(created.status, 201, created.text);
    return created.body.id;
  };

  const endpointChanges: Array<[string, (practiceId: string, id: string) => Promise<Answer>]> = [
    ['enable', (p, id) => svc.admin('POST', endpointPath(p, id, '/enable'))],
    ['disable', (p, id) => svc.admin('POST', endpointPath(p, id, '/disable'))],
    ['PUT', (p, id) => svc.admin('PUT', endpointPath(p, id), { url: 'http://127.0.0.1:9/moved' })],
    ['rotate-secret', (p, id) => svc.admin('POST', endpointPath(p, id, '/rotate-secret'))],
    [
      'recover',
      (p, id) => svc.admin('POST', endpointPath(p, id, '/recover'), { since: '2020-01-01T00:00:00Z' }),
    ],
  ];

  for (const [name, change] of endpointChanges) {
    test(`webhook endpoint: ${name} sent with DELETE succeeds or answers 404, never 500`, async () => {
      const { practiceId } = await svc.newPractice();
      for (let round = 0; round < ROUNDS; round++) {
        const id = await newEndpoint(practiceId);
        const [changed, deleted] = await Promise.all([
          change(practiceId, id),
          svc.admin('DELETE', endpointPath(practiceId, id)),
        ]);
        noServerError(changed, deleted);
        assert.equal(deleted.status, 200, deleted.text);
        if (changed.status === 404) assertNotFound(changed);
        else assert.ok(changed.status === 200 || changed.status === 202, changed.text);
        assertNotFound(await svc.admin('GET', endpointPath(practiceId, id)));
      }
    });
  }

  test('webhook endpoint: of two DELETEs sent together exactly one answers 200', async () => {
    const { practiceId } = await svc.newPractice();
    for (let round = 0; round < ROUNDS; round++) {
      const id = await newEndpoint(practiceId);
      const won = oneDeleteWon(
        await Promise.all([
          svc.admin('DELETE', endpointPath(practiceId, id)),
          svc.admin('DELETE', endpointPath(practiceId, id)),
        ]),
      );
      assert.equal(won.body.deleted, true);
    }
  });

  test('webhook endpoint: two rotations sent together keep the later secret and the earlier as previous', async () => {
    const { practiceId } = await svc.newPractice();
    for (let round = 0; round < 10; round++) {
      const id = await newEndpoint(practiceId);
      const answers = await Promise.all([
        svc.admin('POST', endpointPath(practiceId, id, '/rotate-secret')),
        svc.admin('POST', endpointPath(practiceId, id, '/rotate-secret')),
      ]);
      noServerError(...answers);
      for (const a of answers) assert.equal(a.status, 200, a.text);
      // Whichever committed last signs now, and the other's secret is the previous one: neither
      // secret the operator was shown is lost.
      const stored = await asOperator(svc.db, (trx) =>
        trx
          .selectFrom('webhook_endpoints')
          .select(['secret_encrypted', 'previous_secret_encrypted'])
          .where('id', '=', id)
          .executeTakeFirstOrThrow(),
      );
      const box = svc.deps.secrets!;
      assert.ok(stored.previous_secret_encrypted);
      const held = [box.open(stored.secret_encrypted), box.open(stored.previous_secret_encrypted)].sort();
      assert.deepEqual(held, answers.map((a) => a.body.secret as string).sort());
    }
  });

  test('an event recorded while an endpoint is deleted is not refused', async () => {
    const practice = await svc.newPractice();
    const { practiceId } = practice;
    const visit = await billVisit(svc, practice);
    const issued = await asOperator(svc.db, (trx) =>
      trx
        .selectFrom('events')
        .select('id')
        .where('practice_id', '=', practiceId)
        .where('type', '=', 'invoice.issued')
        .executeTakeFirstOrThrow(),
    );
    for (let round = 0; round < ROUNDS; round++) {
      const id = await newEndpoint(practiceId);
      const [paid, deleted, redelivered] = await Promise.all([
        svc.admin('POST', `/practices/${practiceId}/payments`, {
          invoiceId: visit.invoiceId,
          amount: 1,
          method: 'cash',
        }),
        svc.admin('DELETE', endpointPath(practiceId, id)),
        svc.admin('POST', `/practices/${practiceId}/events/${issued.id}/redeliver`, { endpointId: id }),
      ]);
      noServerError(paid, deleted, redelivered);
      assert.equal(paid.status, 201, paid.text);
      assert.equal(deleted.status, 200, deleted.text);
      if (redelivered.status !== 202) assertNotFound(redelivered);
    }
  });

  test('price: of two DELETEs sent together exactly one answers 200', async () => {
    const { practiceId } = await svc.newPractice();
    for (let round = 0; round < ROUNDS; round++) {
      const price = await svc.admin('POST', `/practices/${practiceId}/prices`, {
        system: 'urn:service:codesystem:tariff',
        code: '0190',
        amount: 1000 + round,
      });
      assert.equal(price.status, 201, price.text);
      const path = `/practices/${practiceId}/prices/${price.body.id}`;
      oneDeleteWon(await Promise.all([svc.admin('DELETE', path), svc.admin('DELETE', path)]));
    }
  });

  test('an endpoint deleted while a delivery to it is on its way: the delivery job ends cleanly', async () => {
    const practice = await svc.newPractice();
    const receiver = await Receiver.forService(svc);
    try {
      receiver.reply = () => ({ status: 200, body: 'ok', delayMs: 300 });
      const endpoint = await addEndpoint(svc, practice.practiceId, receiver);
      await billVisit(svc, practice);
      const draining = svc.worker.drain();
      while (receiver.requests.length === 0) await sleep(10);
      const deleted = await svc.admin('DELETE', endpointPath(practice.practiceId, endpoint.id));
      assert.equal(deleted.status, 200, deleted.text);
      await draining;
      const jobs = await asOperator(svc.db, (trx) =>
        trx
          .selectFrom('jobs')
          .select(['state', 'last_error'])
          .where('practice_id', '=', practice.practiceId)
          .where('kind', '=', 'webhook.deliver')
          .execute(),
      );
      assert.deepEqual(jobs, [{ state: 'done', last_error: null }]);
    } finally {
      await receiver.close();
    }
  });

  test('key: two revocations sent together both answer 200 with the same revokedAt', async () => {
    const { clientId } = await svc.newPractice();
    for (let round = 0; round < ROUNDS; round++) {
      const key = await svc.admin('POST', `/clients/${clientId}/keys`, {});
      assert.equal(key.status, 201, key.text);
      const answers = await Promise.all([
        svc.admin('POST', `/keys/${key.body.id}/revoke`),
        svc.admin('POST', `/keys/${key.body.id}/revoke`),
      ]);
      noServerError(...answers);
      for (const a of answers) assert.equal(a.status, 200, a.text);
      assert.ok(answers[0].body.revokedAt);
      assert.equal(answers[0].body.revokedAt, answers[1].body.revokedAt, 'the first revocation time is kept');
    }
  });

  test('client: suspend and resume sent together leave the state of the one answered last', async () => {
    const { clientId } = await svc.newPractice();
    for (let round = 0; round < ROUNDS; round++) {
      const answers = await Promise.all([
        svc.admin('POST', `/clients/${clientId}/suspend`),
        svc.admin('POST', `/clients/${clientId}/resume`),
        svc.admin('POST', `/clients/${clientId}/suspend`),
      ]);
      noServerError(...answers);
      for (const a of answers) assert.equal(a.status, 200, a.text);
      const now = await svc.admin('GET', `/clients/${clientId}`);
      assert.ok(
        answers.some((a) => a.body.status === now.body.status && a.body.updatedAt === now.body.updatedAt),
        'the stored client is what one of the writers answered',
      );
    }
  });
});
