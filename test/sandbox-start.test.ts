// `npm start` on an empty data directory, as a first-time integrator runs it: the printed address,
// admin token, demo key and curl command work; a restart keeps everything and seeds nothing twice;
// a second process on the same data directory is refused. Embedded database only, so it runs once.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, describe, test } from 'node:test';
import {
  freePort,
  removeDataDir,
  type ServiceProcess,
  sandboxBanner,
  startServiceProcess,
  tempDir,
} from './processes.ts';

const running: ServiceProcess[] = [];
const dataDir = tempDir('sandbox');

after(async () => {
  await Promise.all(running.map((p) => p.stop('SIGTERM')));
  removeDataDir(dataDir);
});

async function start(): Promise<ServiceProcess> {
  const service = await startServiceProcess({ dataDir, port: await freePort() });
  running.push(service);
  return service;
}

interface CurlRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string;
}

/** Reads the printed curl command (a few continued lines) into a request that fetch can send. */
function parseCurl(stdout: string): CurlRequest {
  const start = stdout.indexOf('curl ');
  assert.ok(start >= 0, `no curl command in:\n${stdout}`);
  const lines: string[] = [];
  for (const line of stdout.slice(start).split('\n')) {
    lines.push(line.replace(/\\\s*$/, ''));
    if (!/\\\s*$/.test(line)) break;
  }
  const command = lines.join(' ');
  const method = /-X\s+(\w+)/.exec(command)?.[1] ?? 'GET';
  const url = /\s(https?:\/\/\S+)/.exec(command)?.[1];
  assert.ok(url, command);
  const headers: Record<string, string> = {};
  for (const match of command.matchAll(/-H\s+(?:'([^']*)'|"([^"]*)")/g)) {
    const header = (match[1] ?? match[2])!;
    const colon = header.indexOf(':');
    // The command computes its Idempotency-Key in the shell; any fresh value does the same.
    const value = header
      .slice(colon + 1)
      .trim()
      .replace(/\$\([^)]*\)/g, randomBytes(8).toString('hex'));
    headers[header.slice(0, colon).trim().toLowerCase()] = value;
  }
  const body = /-d\s+'([^']*)'/.exec(command)?.[1];
  assert.ok(body !== undefined, command);
  return { method, url, headers, body };
}

async function practices(baseUrl: string, adminToken: string) {
  const answer = await fetch(`${baseUrl}/admin/v1/practices`, {
    headers: { authorization: `Bearer ${adminToken}` },
  });
  assert.equal(answer.status, 200);
  return ((await answer.json()) as { data: Array<{ id: string; name: string }> }).data;
}

describe('npm start on an empty data directory', () => {
  let first: ServiceProcess;
  let banner: ReturnType<typeof sandboxBanner>;
  let patient: { id: string };

  test('prints the address, the admin token, the demo key and a curl command', async () => {
    first = await start();
    const out = first.stdout();
    banner = sandboxBanner(out);
    assert.equal(banner.apiUrl, `${first.baseUrl}/api/v1`);
    assert.match(banner.adminToken, /^adm_/);
    assert.match(banner.apiKey, /^pbk_/);
    assert.match(out, /curl -s -X POST/);
    const seeded = await practices(first.baseUrl, banner.adminToken);
    assert.deepEqual(
      seeded.map((p) => p.id),
      [banner.practiceId],
    );
  });

  test("the curl command's request creates a patient", async () => {
    const curl = parseCurl(first.stdout());
    assert.equal(curl.url, `${first.baseUrl}/api/v1/patients`);
    assert.equal(curl.headers.authorization, `Bearer ${banner.apiKey}`);
    const created = await fetch(curl.url, { method: curl.method, headers: curl.headers, body: curl.body });
    patient = (await created.json()) as { id: string };
    assert.equal(created.status, 201, JSON.stringify(patient));
  });

  test('a second process on the same data directory is refused clearly and harms nothing', async () => {
    const second = await startServiceProcess({ dataDir, port: await freePort(), readyWhen: 'never printed' });
    running.push(second);
    assert.equal(await second.exited, 1);
    assert.match(second.stderr(), /data directory .* is in use by another process/);
    assert.equal(second.stdout().includes('Demo API key'), false);
    assert.equal((await practices(first.baseUrl, banner.adminToken)).length, 1);
    const read = await fetch(`${first.baseUrl}/api/v1/patients/${patient.id}`, {
      headers: { authorization: `Bearer ${banner.apiKey}` },
    });
    assert.equal(read.status, 200);
  });

  test('SIGTERM stops it; a restart keeps the practice, the key and the patient, and seeds nothing twice', async () => {
    assert.equal(await first.stop('SIGTERM'), 0);

    const again = await start();
    const bannerAgain = sandboxBanner(again.stdout());
    assert.equal(bannerAgain.practiceId, banner.practiceId);
    assert.equal(bannerAgain.apiKey, banner.apiKey);
    assert.equal(bannerAgain.adminToken, banner.adminToken);
    const read = await fetch(`${again.baseUrl}/api/v1/patients/${patient.id}`, {
      headers: { authorization: `Bearer ${banner.apiKey}` },
    });
    assert.equal(read.status, 200);
    assert.deepEqual(await read.json(), patient);
    const afterRestart = await practices(again.baseUrl, banner.adminToken);
    assert.deepEqual(
      afterRestart.map((p) => p.id),
      [banner.practiceId],
    );
    assert.equal(await again.stop('SIGTERM'), 0);
  });
});
