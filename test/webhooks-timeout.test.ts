// The reply time: a receiver that has not answered within 10 seconds has failed; the attempt is
// logged as a time-out and retried. The first delivery is never answered, so only the service's own
// time-out ends it: its 10 seconds are a lower bound the attempt's duration cannot go under, on any
// machine. The backends run side by side so the file takes about 10 seconds.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { backends, startService } from './harness.ts';
import { addEndpoint, attempts, billVisit, Receiver, readEndpoint } from './webhooks-fixtures.ts';

describe('webhook reply time', { concurrency: true }, () => {
  for (const backend of backends()) {
    test(`a receiver slower than 10 s has failed (${backend})`, async () => {
      const svc = await startService(backend);
      const r = await Receiver.forService(svc);
      try {
        r.reply = (request) => (request.n === 1 ? { status: 200, hold: true } : { status: 200 });
        const practice = await svc.newPractice();
        const ep = await addEndpoint(svc, practice.practiceId, r);
        await billVisit(svc, practice);

        const started = performance.now();
        await svc.worker.drain();
        const waited = performance.now() - started;
        assert.equal(r.requests.length, 1);
        assert.ok(waited >= 9_900, `the worker waited ${Math.round(waited)} ms`);

        const [first] = await attempts(svc, practice.practiceId, ep.id);
        assert.equal(first.statusCode, null, 'no answer counts');
        assert.match(first.error, /timeout|timed out|abort/i);
        assert.ok(first.durationMs >= 9_900, `given its 10 s: ${first.durationMs} ms`);
        assert.ok(first.nextAttemptAt, 'a time-out is retried');
        const failing = await readEndpoint(svc, practice.practiceId, ep.id);
        assert.ok(failing.failingSince);
        assert.equal(failing.lastSuccessAt, null);

        svc.clock.advance(6_000);
        await svc.worker.drain();
        const log = await attempts(svc, practice.practiceId, ep.id);
        assert.deepEqual(
          log.map((a) => [a.attemptNumber, a.statusCode]),
          [
            [1, null],
            [2, 200],
          ],
        );
        assert.equal(r.requests.length, 2);
        assert.equal(r.requests[1]!.webhookId, r.requests[0]!.webhookId);
        r.assertAllVerified();
        const recovered = await readEndpoint(svc, practice.practiceId, ep.id);
        assert.equal(recovered.failingSince, null);
        assert.ok(recovered.lastSuccessAt);
      } finally {
        await r.close();
        await svc.close();
      }
    });
  }
});
