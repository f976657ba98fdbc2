// Builds the published form of the package into dist/: JavaScript and declarations compiled from src/
// by tsc (browser and Node 20.16+ alike: no Node types are visible to the sources). package.json's
// `exports` name these files (`types`, `import`); `npm pack` runs this first (`prepack`), and the
// repository's `prepare` runs it after `npm install`/`npm ci`. Inside the repository, the tests and
// tsc may read src/ directly instead, through the `@practice-billing/source` export condition.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const PACKAGE = path.resolve(import.meta.dirname, '..');

export function buildPackage(outDir = path.join(PACKAGE, 'dist')): string {
  fs.rmSync(outDir, { recursive: true, force: true });
  const tsc = createRequire(path.join(PACKAGE, 'package.json')).resolve('typescript/lib/tsc.js');
  execFileSync(process.execPath, [tsc, '-p', path.join(PACKAGE, 'tsconfig.build.json'), '--outDir', outDir], {
    stdio: 'inherit',
  });
  // tsc rewrites the JavaScript's relative imports to .js but leaves the declarations' as written
  // (.ts): a consumer's TypeScript of any version reads `./x.js` as `./x.d.ts`.
  for (const file of fs.readdirSync(outDir, { recursive: true, encoding: 'utf8' })) {
    if (!file.endsWith('.d.ts')) continue;
    const at = path.join(outDir, file);
    const text = fs.readFileSync(at, 'utf8');
    fs.writeFileSync(at, text.replace(/(from\s+'\.{1,2}\/[^']*)\.ts'/g, "$1.js'"));
  }
  return outDir;
}

if (import.meta.main) console.log(`built ${path.relative(process.cwd(), buildPackage())}`);
