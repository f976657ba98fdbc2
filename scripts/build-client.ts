// Builds the client package's dist/ after an install (the root `prepare` script), so a program in this
// repository that imports `@practice-billing/client` without the source condition finds the build. The
// build needs TypeScript, a dev dependency: an install for production (`npm ci --omit=dev`) has none and
// ships no client, so there the build is skipped, saying so.
import { createRequire } from 'node:module';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
try {
  createRequire(path.join(root, 'package.json')).resolve('typescript');
} catch {
  console.log('client package not built: TypeScript (a dev dependency) is not installed');
  process.exit(0);
}
const { buildPackage } = await import('../packages/client/scripts/build.ts');
console.log(`client package built into ${path.relative(root, buildPackage())}`);
