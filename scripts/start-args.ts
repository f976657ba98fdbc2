// Owns reading how `npm start` launches the service (package.json's start script: Node's flags and the
// entry file), so that the tests and the benchmark start the service exactly as an operator does.
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..');

/** The arguments after `node` in the start script, e.g. ['--max-old-space-size=192', 'src/main.ts']. */
export function startArgs(): string[] {
  const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
    scripts: { start: string };
  };
  const [command, ...args] = manifest.scripts.start.trim().split(/\s+/);
  if (command !== 'node' || args.at(-1) !== 'src/main.ts')
    throw new Error(`the start script is not "node [flags] src/main.ts": ${manifest.scripts.start}`);
  return args;
}
