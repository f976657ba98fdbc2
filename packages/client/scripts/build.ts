// Builds the publishable package: JavaScript and declarations compiled from src/ by tsc (browser and
// Node 20+ alike: no Node types are visible to the sources), with a package.json whose exports name the
// compiled files. In this repository the workspace uses src/ directly; `npm publish` is run in dist/.
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
  const source = JSON.parse(fs.readFileSync(path.join(PACKAGE, 'package.json'), 'utf8')) as Record<
    string,
    unknown
  >;
  const published = {
    name: source.name,
    version: source.version,
    description: source.description,
    type: 'module',
    license: source.license,
    engines: source.engines,
    exports: { '.': { types: './index.d.ts', default: './index.js' } },
    dependencies: source.dependencies,
  };
  fs.writeFileSync(path.join(outDir, 'package.json'), `${JSON.stringify(published, null, 2)}\n`);
  return outDir;
}

if (import.meta.main) console.log(`built ${path.relative(process.cwd(), buildPackage())}`);
