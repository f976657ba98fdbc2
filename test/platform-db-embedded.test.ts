// The embedded database's memory: its shared buffers are EMBEDDED_SHARED_BUFFERS_MB (16 MB unless
// set), not PostgreSQL's 128 MB, which a start spends half a second zeroing in WebAssembly.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { sql } from 'kysely';
import { openConfiguredDatabase } from '../src/bootstrap.ts';
import { ConfigError, loadConfig } from '../src/platform/config.ts';
import { removeDataDir, tempDir } from './processes.ts';

const dataDir = tempDir('embedded-buffers');
after(() => removeDataDir(dataDir));

async function sharedBuffersWith(env: Record<string, string>): Promise<string> {
  const db = await openConfiguredDatabase(loadConfig({ DATA_DIR: dataDir, ...env }));
  try {
    const { rows } = await sql<{ shared_buffers: string }>`SHOW shared_buffers`.execute(db.kysely);
    return rows[0]!.shared_buffers;
  } finally {
    await db.close();
  }
}

test('the embedded database runs with 16 MB of shared buffers unless EMBEDDED_SHARED_BUFFERS_MB says more', async () => {
  assert.equal(await sharedBuffersWith({}), '16MB');
  assert.equal(await sharedBuffersWith({ EMBEDDED_SHARED_BUFFERS_MB: '48' }), '48MB');
});

test('EMBEDDED_SHARED_BUFFERS_MB out of range is refused at start, naming the variable', () => {
  assert.throws(
    () => loadConfig({ EMBEDDED_SHARED_BUFFERS_MB: '0' }),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.match(error.message, /EMBEDDED_SHARED_BUFFERS_MB must be an integer from 1 to 4096, got "0"/);
      return true;
    },
  );
});
