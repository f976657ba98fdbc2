// Two deployments on one cluster, each with its own non-superuser owner (LOGIN CREATEROLE CREATEDB) and
// its own service roles (DATABASE_ROLE_PREFIX): each owner creates and migrates its database and the
// service stores a patient in each. No role reachable from one owner (itself and every role it is a
// member of, directly or through others) can connect to the other's database, nor read its patients
// when a superuser's session switches to it there.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, describe, test } from 'node:test';
import { remotePractice } from './child-service.ts';
import { call } from './harness.ts';
import {
  BIN,
  childEnv,
  cli,
  freePort,
  removeDataDir,
  run,
  startServiceProcess,
  tempDir,
} from './processes.ts';
import { queryAs, urlFor } from './support/operator-scene.ts';

const SUPER = process.env.DATABASE_URL;
const TOKEN = `adm_deploy_${randomBytes(16).toString('hex')}`;

interface Deployment {
  owner: string;
  prefix: string;
  database: string;
}

function deployment(): Deployment {
  const id = randomBytes(5).toString('hex');
  return { owner: `pb_own_${id}`, prefix: `pb_dep_${id}`, database: `pb_dep_db_${id}` };
}

describe('two deployments on one cluster (postgres)', {
  skip: SUPER ? false : 'needs DATABASE_URL',
}, () => {
  const deployments = [deployment(), deployment()];
  const dir = tempDir('deployments');
  after(async () => {
    for (const d of deployments) await queryAs(SUPER!, `DROP DATABASE IF EXISTS ${d.database} WITH (FORCE)`);
    for (const d of deployments) {
      for (const role of [`${d.prefix}_app`, `${d.prefix}_operator`, d.owner]) {
        await queryAs(SUPER!, `DROP OWNED BY ${role}`).catch(() => {});
        await queryAs(SUPER!, `DROP ROLE IF EXISTS ${role}`);
      }
    }
    removeDataDir(dir);
  });

  test("no role reachable from one owner reads the other's patients", { timeout: 300_000 }, async () => {
    const url = new URL(SUPER!);
    for (const d of deployments) {
      await queryAs(SUPER!, `CREATE ROLE ${d.owner} LOGIN CREATEROLE CREATEDB`);
      const created = await run(
        'createdb',
        ['-h', url.hostname, '-p', url.port || '5432', '-U', d.owner, d.database],
        childEnv(),
      );
      assert.equal(created.code, 0, created.stderr);
      const env = childEnv({ DATABASE_URL: urlFor(d.owner, d.database), DATABASE_ROLE_PREFIX: d.prefix });
      const migrated = await cli(['migrate'], env, 120_000);
      assert.equal(migrated.code, 0, migrated.stderr);
      // The service stores a patient, through its own roles.
      const service = await startServiceProcess({
        dataDir: dir,
        port: await freePort(),
        env: {
          DATABASE_URL: urlFor(d.owner, d.database),
          DATABASE_ROLE_PREFIX: d.prefix,
          ADMIN_TOKEN: TOKEN,
          LOG_LEVEL: 'info',
        },
        readyWhen: 'Server listening',
        args: [BIN, 'start'],
      });
      try {
        const practice = await remotePractice(service.baseUrl, TOKEN);
        const patient = await call(service.baseUrl, 'POST', '/api/v1/patients', {
          token: practice.key,
          idempotencyKey: randomBytes(8).toString('hex'),
          body: {
            givenNames: ['Zanele'],
            lastName: 'Ndlovu',
            birthDate: '1992-07-19',
            externalId: { system: 'urn:test:mrn', value: randomBytes(6).toString('hex') },
          },
        });
        assert.equal(patient.status, 201, patient.text);
      } finally {
        assert.equal(await service.stop(), 0, service.stderr());
      }
    }

    for (const [from, to] of [deployments, [...deployments].reverse()] as [Deployment, Deployment][]) {
      // Every role the owner is, or may become: itself and the roles it is a member of, transitively.
      const reachable = (
        await queryAs<{ name: string }>(
          SUPER!,
          `WITH RECURSIVE r(oid) AS (
             SELECT oid FROM pg_roles WHERE rolname = '${from.owner}'
             UNION SELECT am.roleid FROM pg_auth_members am JOIN r ON am.member = r.oid)
           SELECT rolname AS name FROM pg_roles WHERE oid IN (SELECT oid FROM r) ORDER BY 1`,
        )
      ).map((r) => r.name);
      assert.ok(reachable.includes(`${from.prefix}_operator`), reachable.join(', '));
      for (const role of reachable) {
        const seen = await queryAs<{ n: number }>(
          urlFor(new URL(SUPER!).username || 'postgres', to.database),
          `SET ROLE ${role}`,
          'SELECT count(*)::int AS n FROM patients',
        ).then(
          (rows) => rows[0]!.n,
          (error: Error) => error.message,
        );
        assert.match(
          String(seen),
          /permission denied/,
          `${role} (of ${from.owner}) read ${to.database}'s patients: ${seen}`,
        );
      }
      const connect = await queryAs(urlFor(from.owner, to.database), 'SELECT 1').then(
        () => 'connected',
        (error: Error) => error.message,
      );
      assert.match(connect, /permission denied for database/, `${from.owner} connected to ${to.database}`);
    }
  });
});
