// Versions and upgrades: `practice-billing --version` prints package.json's semantic version, the
// CHANGELOG has that release with every migration, and a build that finds a schema a newer build
// migrated refuses to start or migrate, saying so and that rolling back means restoring the backup.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { migrations } from '../migrations/index.ts';
import { openPglite } from '../src/platform/db/database.ts';
import { type Backend, call, emptyPostgresDatabase } from './harness.ts';
import { childEnv, cli, freePort, ROOT, removeDataDir, startServiceProcess, tempDir } from './processes.ts';

const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };

test('--version prints the semantic version of package.json, and the CHANGELOG has it', async () => {
  assert.match(manifest.version, /^\d+\.\d+\.\d+$/);
  const run = await cli(['--version'], childEnv());
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stdout, `practice-billing ${manifest.version}\n`);
  const changelog = fs.readFileSync(path.join(ROOT, 'CHANGELOG.md'), 'utf8');
  assert.match(changelog, new RegExp(`^## ${manifest.version.replaceAll('.', '\\.')} `, 'm'));
  for (const name of Object.keys(migrations)) assert.ok(changelog.includes(name), `CHANGELOG names ${name}`);
});

const NEWER = '9999_from_a_newer_build';

for (const backend of (process.env.DATABASE_URL ? ['pglite', 'postgres'] : ['pglite']) as Backend[]) {
  describe(`a schema newer than the build (${backend})`, () => {
    const dir = tempDir('newer');
    let drop: (() => Promise<void>) | undefined;
    after(async () => {
      await drop?.();
      removeDataDir(dir);
    });

    test('migrate and start refuse, naming the unknown migration and the restore', {
      timeout: 180_000,
    }, async () => {
      let env = childEnv({ DATA_DIR: dir });
      if (backend === 'postgres') {
        const database = await emptyPostgresDatabase('pb_newer');
        drop = database.drop;
        env = childEnv({
          DATABASE_URL: database.url,
          ADMIN_TOKEN: 'upgrade-test-admin-token-0123456789abcdef',
        });
      }
      const migrated = await cli(['migrate'], env, 120_000);
      assert.equal(migrated.code, 0, migrated.stderr);
      const mark = `INSERT INTO kysely_migration (name, timestamp) VALUES ('${NEWER}', '2030-01-01T00:00:00.000Z')`;
      if (backend === 'postgres') {
        const client = new pg.Client({ connectionString: env.DATABASE_URL });
        await client.connect();
        await client.query(mark);
        await client.end();
      } else {
        const db = await openPglite({ dataDir: dir });
        await sql.raw(mark).execute(db.kysely);
        await db.close();
      }
      for (const command of ['migrate', backend === 'postgres' ? 'serve' : 'start']) {
        const refused = await cli([command], env, 120_000);
        assert.equal(refused.code, 1, refused.stderr);
        assert.match(refused.stderr, /schema is newer than this build/);
        assert.match(refused.stderr, new RegExp(NEWER));
        assert.match(refused.stderr, /restore the backup taken before the upgrade/);
      }
    });
  });
}

describe('a running process under a schema a newer build migrated (postgres)', {
  skip: process.env.DATABASE_URL ? false : 'needs DATABASE_URL',
}, () => {
  let drop: (() => Promise<void>) | undefined;
  const dir = tempDir('newer-running');
  after(async () => {
    await drop?.();
    removeDataDir(dir);
  });

  test('stops taking work, says so, and answers /readyz 503', { timeout: 180_000 }, async () => {
    const database = await emptyPostgresDatabase('pb_newer_run');
    drop = database.drop;
    const port = await freePort();
    const service = await startServiceProcess({
      dataDir: dir,
      port,
      env: {
        DATABASE_URL: database.url,
        ADMIN_TOKEN: 'upgrade-test-admin-token-0123456789abcdef',
        SCHEMA_CHECK_SECONDS: '1',
        LOG_LEVEL: 'info',
      },
      readyWhen: 'Server listening',
    });
    try {
      assert.equal((await call(service.baseUrl, 'GET', '/readyz')).status, 200);
      const client = new pg.Client({ connectionString: database.url });
      await client.connect();
      await client.query(
        `INSERT INTO kysely_migration (name, timestamp) VALUES ('${NEWER}', '2030-01-01T00:00:00.000Z')`,
      );
      await client.end();
      const deadline = Date.now() + 60_000;
      while (!service.stdout().includes('This process stops taking work')) {
        assert.ok(Date.now() < deadline, service.stdout());
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.match(
        service.stdout(),
        new RegExp(`schema is newer than this build.*${NEWER}.*restore the backup`),
      );
      const ready = await call(service.baseUrl, 'GET', '/readyz');
      assert.equal(ready.status, 503);
      assert.match(ready.body.reason, /schema is newer than this build/);
      assert.equal(await service.stop(), 0, service.stderr());
    } finally {
      await service.stop('SIGKILL');
    }
  });
});
