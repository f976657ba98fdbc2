// Deleting a practice's code while other requests use it, each pair sent together many times so that
// on PostgreSQL the two interleave: of two deletes exactly one answers 200 and the other 404; a delete
// racing a visit or a saved price that names the code has exactly one winner: either the code is
// deleted and the use refused (422 validation_failed, the code is unknown), or the use is recorded and
// the delete refused (422 business_rule, the code is in use). Never both, never a 5xx.
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
import { noServerError, oneDeleteWon, ROUNDS } from './support/races.ts';
import { refusedWith } from './support/refusals.ts';

type Api = ReturnType<typeof apiClient>;

describeEachBackend('racing deletes of a code', (backend) => {
  let svc: TestService;
  before(async () => {
    svc = await startService(backend);
  });
  after(async () => {
    await svc.close();
  });

  async function ownSystem(api: Api) {
    const answer = await api('POST', '/code-systems', {
      body: { name: `Own ${randomBytes(4).toString('hex')}`, usage: ['procedure'] },
      idempotencyKey: uniqueKey(),
    });
    assert.equal(answer.status, 201, answer.text);
    return answer.body as { id: string; url: string };
  }

  async function newCode(api: Api, systemId: string, code: string): Promise<string> {
    const answer = await api('POST', `/code-systems/${systemId}/concepts`, {
      body: { code, display: `Procedure ${code}` },
      idempotencyKey: uniqueKey(),
    });
    assert.equal(answer.status, 201, answer.text);
    return answer.body.id;
  }

  const deleteCode = (api: Api, systemId: string, conceptId: string) =>
    api('DELETE', `/code-systems/${systemId}/concepts/${conceptId}`);

  test('of two deletes of one code sent together exactly one answers 200', async () => {
    const practice = await svc.newPractice();
    const api = apiClient(svc, practice.key);
    const system = await ownSystem(api);
    for (let round = 0; round < ROUNDS; round++) {
      const id = await newCode(api, system.id, `D${round}`);
      const won = oneDeleteWon(
        await Promise.all([deleteCode(api, system.id, id), deleteCode(api, system.id, id)]),
      );
      assert.equal(won.body.deleted, true);
    }
  });

  test('adding a code again while it is deleted answers 201 or 409, never 500', async () => {
    const practice = await svc.newPractice();
    const api = apiClient(svc, practice.key);
    const system = await ownSystem(api);
    for (let round = 0; round < ROUNDS; round++) {
      const code = `A${round}`;
      const id = await newCode(api, system.id, code);
      const [added, deleted] = await Promise.all([
        api('POST', `/code-systems/${system.id}/concepts`, {
          body: { code, display: `Again ${code}` },
          idempotencyKey: uniqueKey(),
        }),
        deleteCode(api, system.id, id),
      ]);
      noServerError(added, deleted);
      assert.equal(deleted.status, 200, deleted.text);
      if (added.status !== 201) refusedWith(added, 409, 'duplicate');
      const left = await api('GET', `/code-systems/${system.id}/concepts?code=${code}`);
      assert.equal(left.body.data.length, added.status === 201 ? 1 : 0, left.text);
    }
  });

  test('a delete racing a saved price for the code: the price or the delete, never both', async () => {
    const practice = await svc.newPractice();
    const api = apiClient(svc, practice.key);
    const system = await ownSystem(api);
    const outcomes = new Set<string>();
    for (let round = 0; round < ROUNDS; round++) {
      const code = `P${round}`;
      const id = await newCode(api, system.id, code);
      const [priced, deleted] = await Promise.all([
        svc.admin('POST', `/practices/${practice.practiceId}/prices`, {
          system: system.url,
          code,
          amount: 1000,
        }),
        deleteCode(api, system.id, id),
      ]);
      noServerError(priced, deleted);
      if (deleted.status === 200) {
        refusedWith(priced, 422, 'validation_failed');
        outcomes.add('deleted');
      } else {
        assert.equal(priced.status, 201, priced.text);
        refusedWith(deleted, 422, 'business_rule');
        outcomes.add('priced');
      }
    }
    const prices = await svc.admin('GET', `/practices/${practice.practiceId}/prices`);
    const codes = await api('GET', `/code-systems/${system.id}/concepts?limit=100`);
    const live = new Set((codes.body.data as Array<{ code: string }>).map((c) => c.code));
    for (const p of prices.body.data as Array<{ code: string }>)
      assert.ok(live.has(p.code), `${p.code} priced`);
    assert.ok(outcomes.size > 0);
  });

  test('a delete racing a visit that records the code: the visit or the delete, never both', async () => {
    const practice = await svc.newPractice();
    const api = apiClient(svc, practice.key);
    const system = await ownSystem(api);
    const patient = await api('POST', '/patients', { body: patientBody(), idempotencyKey: uniqueKey() });
    assert.equal(patient.status, 201, patient.text);
    const when = new Date(svc.clock.now().getTime() - 3600_000).toISOString();
    for (let round = 0; round < ROUNDS; round++) {
      const code = `V${round}`;
      const id = await newCode(api, system.id, code);
      const [visit, deleted] = await Promise.all([
        api('POST', '/encounters', {
          body: {
            patientId: patient.body.id,
            practitionerId: practice.practitionerId,
            start: when,
            end: when,
            diagnoses: [{ code: 'J06.9' }],
            procedures: [{ system: system.url, code }],
          },
          idempotencyKey: uniqueKey(),
        }),
        deleteCode(api, system.id, id),
      ]);
      noServerError(visit, deleted);
      if (deleted.status === 200) refusedWith(visit, 422, 'validation_failed');
      else {
        assert.equal(visit.status, 201, visit.text);
        refusedWith(deleted, 422, 'business_rule');
      }
    }
  });
});
