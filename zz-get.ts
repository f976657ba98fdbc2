import autocannon from 'autocannon';
import { provisionPractice } from './bench/provision.ts';
import { createPatients } from './bench/seed-api.ts';
import { startService } from './bench/service.ts';

const prof = process.env.PROF;
const svc = await startService({
  database: { url: process.env.DATABASE_URL! },
  adminToken: 'adm_' + 'x'.repeat(40),
  jobPollMs: 20,
  separateWorker: true,
  ...(prof ? { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${prof}`] } : {}),
});
const p = await provisionPractice(svc.baseUrl, 'adm_' + 'x'.repeat(40));
const loaded = await createPatients(svc.baseUrl, p.key, 200);
const ids = loaded.map((x: any) => x.id);
const pick = () => ids[Math.floor(Math.random() * ids.length)];
const run = (s: number) =>
  autocannon({
    url: svc.baseUrl,
    connections: 32,
    duration: s,
    requests: [
      {
        method: 'GET',
        headers: { authorization: `Bearer ${p.key}` },
        setupRequest: (r: any) => ({ ...r, path: `/api/v1/patients/${pick()}` }),
      },
    ],
  });
await run(3);
for (let i = 0; i < 2; i++) {
  const r = await run(8);
  console.log(
    `rps ${Math.round(r.requests.average)} p50 ${r.latency.p50} p99 ${r.latency.p99} non2xx ${r.non2xx}`,
  );
}
await svc.stop();
