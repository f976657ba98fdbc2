// A patient registered with a practice number while the patient holding that number moves to another,
// sent together many times so that on PostgreSQL the two interleave: the registration either finds the
// number taken (409 duplicate naming the holder) or, once it has moved, registers (201). Never a 5xx.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import {
  apiClient,
  describeEachBackend,
  patientBody,
  startService,
  type TestService,
  uniqueKey,
} from './harness.ts';
import { noServerError, ROUNDS } from './support/races.ts';

describeEachBackend('racing registrations of a practice number', (backend) => {
  let svc: TestService;
  before(async () => {
    svc = await startService(backend);
  });
  after(async () => {
    await svc.close();
  });

  test('a number registered while its holder moves to another: 201 or 409, never 500', async () => {
    const practice = await svc.newPractice();
    const api = apiClient(svc, practice.key);
    const system = 'urn:test:mrn';
    for (let round = 0; round < ROUNDS; round++) {
      const taken = { system, value: randomBytes(5).toString('hex') };
      const holder = await api('POST', '/patients', {
        body: patientBody({ externalId: taken }),
        idempotencyKey: uniqueKey(),
      });
      assert.equal(holder.status, 201, holder.text);
      const [registered, moved] = await Promise.all([
        api('POST', '/patients', { body: patientBody({ externalId: taken }), idempotencyKey: uniqueKey() }),
        api('PATCH', `/patients/${holder.body.id}`, {
          body: { externalId: { system, value: randomBytes(5).toString('hex') } },
          headers: { 'content-type': 'application/merge-patch+json' },
        }),
      ]);
      noServerError(registered, moved);
      assert.equal(moved.status, 200, moved.text);
      if (registered.status === 201) assert.deepEqual(registered.body.externalId, taken);
      else {
        assert.equal(registered.status, 409, registered.text);
        assert.equal(registered.body.code, 'duplicate', registered.text);
        assert.ok(registered.body.detail.includes(holder.body.id), registered.text);
      }
    }
  });
});
