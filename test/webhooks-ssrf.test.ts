// Webhooks reach only public addresses over https unless the operator sets WEBHOOK_ALLOW_PRIVATE:
// registration refuses http, loopback, private, link-local (cloud metadata), unique-local, carrier-
// grade NAT and names that resolve to any of them; at connect time a name that resolves privately
// and a URL registered while private networks were allowed are refused without opening a connection.
import assert from 'node:assert/strict';
import type dns from 'node:dns';
import { after, before, describe, test } from 'node:test';
import { asOperator } from '../src/platform/db/transaction.ts';
import {
  AddressRefused,
  guardedLookup,
  isPublicAddress,
  sendProblem,
  urlProblem,
} from '../src/webhooks/address-guard.ts';
import { createEndpoint } from '../src/webhooks/endpoints.ts';
import { WebhookSender } from '../src/webhooks/sender.ts';
import { describeEachBackend, startService, type TestService } from './harness.ts';
import { attempts, billVisit, endpointPath, Receiver } from './webhooks-fixtures.ts';

const REFUSED_URLS = [
  'http://example.com/hook',
  'https://127.0.0.1/hook',
  'https://127.8.9.10/hook',
  'https://2130706433/hook',
  'https://10.0.0.1/hook',
  'https://10.255.1.2/hook',
  'https://172.16.0.1/hook',
  'https://172.31.255.254/hook',
  'https://192.168.1.10/hook',
  'https://169.254.169.254/latest/meta-data/',
  'https://0.0.0.0/hook',
  'https://[::1]/hook',
  'https://[::ffff:127.0.0.1]/hook',
  'https://[::ffff:10.0.0.1]/hook',
  'https://[fc00::1]/hook',
  'https://[fd12:3456:789a::1]/hook',
  'https://[fe80::1]/hook',
  'https://100.64.0.1/hook',
  'https://100.127.255.254/hook',
  'https://localhost/hook',
  'https://localhost:8443/hook',
];

type LookupResult = {
  error: NodeJS.ErrnoException | null;
  address: string | dns.LookupAddress[];
  family?: number;
};

function lookup(allowPrivate: boolean, hostname: string, options: dns.LookupOptions = {}) {
  return new Promise<LookupResult>((resolve) =>
    guardedLookup(allowPrivate)(hostname, options, (error, address, family) =>
      resolve({ error, address, ...(family !== undefined ? { family } : {}) }),
    ),
  );
}

describe('address guard (unit)', () => {
  test('guardedLookup refuses a name that resolves to loopback, unless private networks are allowed', async () => {
    for (const options of [{}, { all: true }, { family: 4 }]) {
      const refused = await lookup(false, 'localhost', options);
      assert.ok(refused.error instanceof AddressRefused, JSON.stringify(options));
      assert.match(refused.error.message, /localhost resolves to .*not a public address/);
    }
    assert.ok((await lookup(false, '127.0.0.1')).error instanceof AddressRefused);

    const one = await lookup(true, 'localhost');
    assert.equal(one.error, null);
    assert.ok(one.address === '127.0.0.1' || one.address === '::1', String(one.address));
    assert.ok(one.family === 4 || one.family === 6);
    const all = await lookup(true, 'localhost', { all: true });
    assert.equal(all.error, null);
    assert.ok(Array.isArray(all.address) && all.address.length >= 1);
  });

  test('isPublicAddress and the checks at registration and before sending', async () => {
    for (const address of [
      '127.0.0.1',
      '10.1.1.1',
      '172.20.0.1',
      '192.168.0.1',
      '169.254.169.254',
      '100.64.0.1',
    ])
      assert.equal(isPublicAddress(address), false, address);
    for (const address of [
      '::1',
      'fc00::1',
      'fd00::1',
      'fe80::1',
      '::ffff:127.0.0.1',
      '::',
      '0.0.0.0',
      '224.0.0.1',
    ])
      assert.equal(isPublicAddress(address), false, address);
    for (const address of ['1.1.1.1', '8.8.8.8', '2606:4700:4700::1111', '172.32.0.1', '100.128.0.1'])
      assert.equal(isPublicAddress(address), true, address);

    // An IPv4 address written as one number is no URL form the document states: refused whatever is allowed.
    const numeric = 'https://2130706433/hook';
    for (const url of REFUSED_URLS) {
      assert.ok(await urlProblem(url, false), url);
      if (url === numeric) continue;
      assert.equal(await urlProblem(url.replace(/^https?/, 'http'), true), undefined, `${url} when allowed`);
    }
    assert.match((await urlProblem(numeric, true)) ?? '', /absolute http\(s\) URL/);
    assert.equal(await urlProblem('https://1.1.1.1/hook', false), undefined);
    for (const url of [
      'http://127.0.0.1:9/x',
      'https://127.0.0.1/x',
      'https://[::1]/x',
      'https://10.0.0.1/x',
      'http://1.1.1.1/x',
    ])
      assert.ok(sendProblem(url, false), url);
    assert.equal(sendProblem('https://1.1.1.1/x', false), undefined);
    assert.equal(
      sendProblem('https://hooks.example/x', false),
      undefined,
      'names are checked by the look-up',
    );
    assert.equal(sendProblem('http://127.0.0.1:9/x', true), undefined);
  });

  test('a sender that may not reach private networks opens no connection to them', async () => {
    const r = await Receiver.start();
    const sender = new WebhookSender(false);
    try {
      for (const url of [
        `https://localhost:${r.port}/hook`,
        `https://127.0.0.1:${r.port}/hook`,
        `https://[::ffff:127.0.0.1]:${r.port}/hook`,
        `http://127.0.0.1:${r.port}/hook`,
        `http://localhost:${r.port}/hook`,
      ]) {
        const result = await sender.send(url, {}, '{}');
        assert.equal(result.statusCode, null, url);
        assert.match(String(result.error), /not a public address|must use https/, url);
      }
      assert.equal(r.connections, 0, 'no connection was opened');
      const allowed = new WebhookSender(true);
      const reached = await allowed.send(`http://localhost:${r.port}/hook`, {}, '{}');
      await allowed.close();
      assert.equal(
        reached.statusCode,
        200,
        'the same receiver is reachable when private networks are allowed',
      );
    } finally {
      await sender.close();
      await r.close();
    }
  });
});

describeEachBackend('webhooks without private networks', (backend) => {
  let svc: TestService;
  let r: Receiver;

  before(async () => {
    svc = await startService(backend, { env: { WEBHOOK_ALLOW_PRIVATE: 'false' } });
    r = await Receiver.forService(svc);
  });
  after(async () => {
    await svc.close();
    await r.close();
  });

  test('registration refuses http and every non-public address, naming url', async () => {
    const { practiceId } = await svc.newPractice();
    const path = `/practices/${practiceId}/webhook-endpoints`;
    for (const url of [...REFUSED_URLS, r.url()]) {
      const answer = await svc.admin('POST', path, { url });
      assert.equal(answer.status, 422, `${url}: ${answer.text}`);
      assert.equal(answer.body.code, 'validation_failed');
      assert.deepEqual(
        answer.body.errors.map((e: { field: string }) => e.field),
        ['url'],
        url,
      );
    }
    const publicOne = await svc.admin('POST', path, { url: 'https://1.1.1.1/hook' });
    assert.equal(publicOne.status, 201, publicOne.text);
    const moved = await svc.admin('PUT', endpointPath(practiceId, publicOne.body.id), {
      url: 'https://169.254.169.254/latest/meta-data/',
    });
    assert.equal(moved.status, 422, moved.text);
    assert.deepEqual(
      moved.body.errors.map((e: { field: string }) => e.field),
      ['url'],
    );
    const list = await svc.admin('GET', path);
    assert.deepEqual(
      list.body.data.map((e: { url: string }) => e.url),
      ['https://1.1.1.1/hook'],
    );
    await svc.admin('DELETE', endpointPath(practiceId, publicOne.body.id));
  });

  test('endpoints registered while private networks were allowed get no connection now', async () => {
    const practice = await svc.newPractice();
    const urls = [
      `http://127.0.0.1:${r.port}/hook`,
      `https://127.0.0.1:${r.port}/hook`,
      `https://[::ffff:127.0.0.1]:${r.port}/hook`,
      `https://localhost:${r.port}/hook`,
    ];
    const ids: string[] = [];
    for (const url of urls) {
      const { row } = await asOperator(svc.db, (trx) =>
        createEndpoint(trx, svc.deps.secrets, true, practice.practiceId, { url }, svc.clock.now()),
      );
      ids.push(row.id);
    }
    await billVisit(svc, practice);
    await svc.worker.drain();
    assert.equal(r.connections, 0, 'no connection to a private address');
    for (const [i, id] of ids.entries()) {
      const log = await attempts(svc, practice.practiceId, id);
      assert.equal(log.length, 1, urls[i]);
      assert.equal(log[0].statusCode, null);
      assert.match(log[0].error, /not a public address|must use https/, urls[i]);
      assert.ok(log[0].nextAttemptAt, 'counted as a failed attempt');
    }
  });
});
