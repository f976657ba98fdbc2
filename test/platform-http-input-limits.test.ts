// Input limits that only show in a real process (the 256 KB boundary itself, with Content-Length and
// chunked, is in platform-http-limits.test.ts): a 10 MB body, chunked or declared by Content-Length, is refused
// with 413 without the service's resident memory growing by more than a few MB, and the service goes
// on serving. Runs `practice-billing serve` on PostgreSQL when DATABASE_URL is set, else the
// embedded sandbox (`npm start`).
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { remotePractice, rssKb, startServeProcess } from './child-service.ts';
import { call, patientBody, startService, type TestService, uniqueKey } from './harness.ts';
import {
  freePort,
  removeDataDir,
  type ServiceProcess,
  sandboxBanner,
  startServiceProcess,
  tempDir,
} from './processes.ts';

const LIMIT = 256 * 1024;
const TEN_MB = 10 * 1024 * 1024;
/** "A few MB": the most the service's RSS may grow over the refused bodies. */
const RSS_GROWTH_BOUND_KB = 8 * 1024;

interface Refusal {
  status: number;
  body: string;
  /** Bytes the client managed to hand to the socket before the answer (or reset). */
  sent: number;
}

/** POSTs `total` bytes of JSON-ish padding in 64 KB pieces, chunked or with Content-Length. */
function postLarge(baseUrl: string, key: string, total: number, chunked: boolean): Promise<Refusal> {
  const url = new URL('/api/v1/patients', baseUrl);
  const piece = Buffer.alloc(64 * 1024, 0x20);
  piece[0] = 0x7b; // '{' at the start of each piece: never valid JSON, never accepted
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered: Refusal | undefined;
    const request = http.request({
      method: 'POST',
      hostname: url.hostname,
      port: url.port,
      path: url.pathname,
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        'idempotency-key': uniqueKey(),
        ...(chunked ? { 'transfer-encoding': 'chunked' } : { 'content-length': String(total) }),
      },
    });
    const timer = setTimeout(() => {
      request.destroy();
      reject(new Error(`no answer to a ${total}-byte body within 20 s (sent ${sent})`));
    }, 20_000);
    request.on('response', (response) => {
      const sentAtAnswer = sent;
      let text = '';
      response.setEncoding('utf8').on('data', (c: string) => {
        text += c;
      });
      response.on('end', () => {
        clearTimeout(timer);
        answered = { status: response.statusCode ?? 0, body: text, sent: sentAtAnswer };
        request.destroy();
        resolve(answered);
      });
    });
    // The service may answer and close while the body is still being written.
    // The service closes the connection after its 413; the client may hit that while still writing
    // (EPIPE or ECONNRESET) before it has read the answer: recorded as status 0, a refusal too.
    request.on('error', (error: NodeJS.ErrnoException) => {
      if (answered) return;
      setTimeout(() => {
        if (answered) return;
        clearTimeout(timer);
        if (error.code === 'EPIPE' || error.code === 'ECONNRESET') resolve({ status: 0, body: '', sent });
        else reject(error);
      }, 500);
    });
    const writeNext = () => {
      while (sent < total && !request.destroyed) {
        const part = piece.subarray(0, Math.min(piece.length, total - sent));
        sent += part.length;
        if (!request.write(part)) {
          request.once('drain', writeNext);
          return;
        }
      }
      if (!request.destroyed) request.end();
    };
    writeNext();
  });
}

describe('input limits in a service process', () => {
  let svc: TestService | undefined;
  let stopService: () => Promise<void> = async () => {};
  let dataDir: string | undefined;
  let pid = 0;
  let baseUrl = '';
  let key = '';
  let output: () => string = () => '';

  before(async () => {
    if (process.env.DATABASE_URL) {
      svc = await startService('postgres');
      const child = await startServeProcess({ databaseUrl: svc.databaseUrl! });
      stopService = child.stop;
      output = child.output;
      pid = child.pid;
      baseUrl = child.baseUrl;
      key = (await remotePractice(child.baseUrl, child.adminToken)).key;
    } else {
      dataDir = tempDir('limits');
      const child: ServiceProcess = await startServiceProcess({ dataDir, port: await freePort() });
      stopService = async () => {
        await child.stop();
      };
      pid = child.child.pid!;
      output = () => child.stdout() + child.stderr();
      baseUrl = child.baseUrl;
      key = sandboxBanner(child.stdout()).apiKey;
    }
  });
  after(async () => {
    await stopService();
    await svc?.close();
    if (dataDir) removeDataDir(dataDir);
  });

  test('10 MB bodies, chunked or with Content-Length, are refused with 413 without the RSS growing', async () => {
    // Warm up: bodies at the limit are read and parsed, so the process reaches its working size.
    const json = JSON.stringify(patientBody());
    for (let i = 0; i < 5; i++) {
      const exact = await call(baseUrl, 'POST', '/api/v1/patients', {
        token: key,
        rawBody: JSON.stringify(patientBody()) + ' '.repeat(LIMIT - json.length),
        idempotencyKey: uniqueKey(),
      });
      assert.equal(exact.status, 201, `${exact.text}\n${output().slice(-3000)}`);
      assert.equal((await postLarge(baseUrl, key, LIMIT + 1, true)).status, 413);
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
    const before = rssKb(pid);
    let answered413 = 0;
    for (let i = 0; i < 3; i++) {
      for (const chunked of [true, false]) {
        const refused = await postLarge(baseUrl, key, TEN_MB, chunked);
        if (refused.status !== 0) {
          assert.equal(refused.status, 413, refused.body);
          assert.equal(JSON.parse(refused.body).code, 'payload_too_large');
          answered413++;
        }
        process.stdout.write(
          `# ${chunked ? 'chunked' : 'content-length'} sent ${refused.sent} rss ${rssKb(pid)}\n`,
        );
      }
    }
    assert.ok(answered413 > 0, 'the service answered 413 to at least one of the bodies');
    const afterRss = rssKb(pid);
    const growth = afterRss - before;
    process.stdout.write(
      `# RSS before ${before} kB, after six 10 MB bodies ${afterRss} kB, growth ${growth} kB\n`,
    );
    assert.ok(growth < RSS_GROWTH_BOUND_KB, `RSS grew by ${growth} kB`);

    // And the process goes on serving.
    const after = await call(baseUrl, 'POST', '/api/v1/patients', {
      token: key,
      body: patientBody(),
      idempotencyKey: uniqueKey(),
    });
    assert.equal(after.status, 201, after.text);
  });
});
