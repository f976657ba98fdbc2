// Routes call services and services call stores (docs/architecture.md, "Tables and their owners"):
// a file of src/ that declares routes imports no file that holds SQL, its own capability's or
// another's. The files that hold SQL are the ones src/table-owners.ts declares: every owner's stores
// and every cross-owner read model; test/unit/table-owners.test.ts keeps SQL out of all others.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { CROSS_OWNER_READS, TABLE_OWNERS } from '../../src/table-owners.ts';

const root = path.resolve(import.meta.dirname, '../..');

function sourceFiles(dir: string): string[] {
  return readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const relative = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return sourceFiles(relative);
    return entry.name.endsWith('.ts') ? [relative] : [];
  });
}

/** Every file that holds SQL, from the repository's root. */
const SQL_FILES = new Set([
  ...Object.values(TABLE_OWNERS).flatMap((owner) => owner.stores),
  ...CROSS_OWNER_READS.flatMap((read) => read.files),
]);

/** The files of src/ a source text imports (or re-exports from), from the repository's root. */
export function importedFiles(file: string, source: string): string[] {
  return [...source.matchAll(/\bfrom '(\.\.?\/[^']*)'|\bimport\('(\.\.?\/[^']*)'\)/g)].map((m) =>
    path.posix.join(path.posix.dirname(file), (m[1] ?? m[2])!),
  );
}

/** The SQL files a route file imports. */
export function importedSqlFiles(file: string, source: string, sqlFiles: ReadonlySet<string>): string[] {
  return importedFiles(file, source).filter((imported) => sqlFiles.has(imported));
}

/** A route file declares at least one route of the public or the operator's API. */
const declaresRoutes = (source: string) => /\bdefine(Api|Admin)Route\(/.test(source);

test('no route file holds SQL or imports a file that does', () => {
  const offenders = sourceFiles('src')
    // src/api/ is the request pipeline, which every route runs through and which sits below every
    // capability: it defines defineApiRoute and defineAdminRoute (so it would look like a route file)
    // and answers the X-Service-Performer check and stamps a key's use through auth/ stores before any
    // capability's service is reached (src/table-owners.ts, practices and clients).
    .filter((file) => !file.startsWith('src/api/'))
    .map((file) => ({ file, source: readFileSync(path.join(root, file), 'utf8') }))
    .filter(({ source }) => declaresRoutes(source))
    .flatMap(({ file, source }) => [
      ...(SQL_FILES.has(file) ? [`${file} declares routes and holds SQL`] : []),
      ...importedSqlFiles(file, source, SQL_FILES).map((imported) => `${file} imports ${imported}`),
    ]);
  assert.deepEqual(offenders, []);
});

test('the check sees every declared SQL file, a store, a read model or a table owner’s other file', () => {
  assert.deepEqual(
    importedSqlFiles(
      'src/claims/routes.ts',
      [
        "import { listPlans } from './store.ts';",
        "import { practitionerExists } from '../auth/performer-store.ts';",
        "import { ratesFor } from '../invoices/rates.ts';",
        "export { listAuditEvents } from '../audit/events.ts';",
        "const { queueFigures } = await import('../jobs/queue-figures.ts');",
        "import { x } from './service.ts';",
      ].join('\n'),
      SQL_FILES,
    ),
    [
      'src/claims/store.ts',
      'src/auth/performer-store.ts',
      'src/invoices/rates.ts',
      'src/audit/events.ts',
      'src/jobs/queue-figures.ts',
    ],
  );
});

test('the check recognises the route files: public, operator, back office and metrics', () => {
  const routeFiles = sourceFiles('src')
    .filter((file) => !file.startsWith('src/api/'))
    .filter((file) => declaresRoutes(readFileSync(path.join(root, file), 'utf8')));
  for (const file of ['src/patients/routes.ts', 'src/audit/admin-routes.ts', 'src/back-office/invoices.ts']) {
    assert.ok(routeFiles.includes(file), file);
  }
  assert.ok(routeFiles.some((file) => file.startsWith('src/service-metrics')));
});
