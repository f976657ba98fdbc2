// Routes call services and services call stores (docs/architecture.md, "Tables and their owners"):
// a file of src/ that declares routes imports no store, its own capability's or another's.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

const root = path.resolve(import.meta.dirname, '../..');

function sourceFiles(dir: string): string[] {
  return readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const relative = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return sourceFiles(relative);
    return entry.name.endsWith('.ts') ? [relative] : [];
  });
}

/** The store modules a source text imports: store.ts, *-store.ts and the declared cross-owner reads. */
export function importedStores(source: string): string[] {
  return [...source.matchAll(/from '([^']*\/(?:[a-z-]+-)?store\.ts)'/g)].map((m) => m[1]!);
}

test('no route file imports a store', () => {
  const offenders = sourceFiles('src')
    .filter((file) => !file.startsWith('src/api/'))
    .map((file) => ({ file, source: readFileSync(path.join(root, file), 'utf8') }))
    .filter(({ source }) => /\bdefine(Api|Admin)Route\(/.test(source))
    .flatMap(({ file, source }) => importedStores(source).map((store) => `${file} imports ${store}`));
  assert.deepEqual(offenders, []);
});

test('the check sees a store import, a capability’s own or another’s', () => {
  assert.deepEqual(
    importedStores(
      "import { listPlans } from './store.ts';\nimport { practitionerExists } from '../auth/performer-store.ts';\nimport { x } from './service.ts';",
    ),
    ['./store.ts', '../auth/performer-store.ts'],
  );
});
