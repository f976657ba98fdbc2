#!/usr/bin/env node
// The `practice-billing` command. Plain JavaScript that any Node can read: the sources (src/*.ts) need
// Node 24, which runs them directly. On an older Node (a machine's own) the command runs itself again
// on the Node 24 the project installs (the `node` package), in a process group of its own, and passes
// SIGTERM, SIGINT and SIGHUP on to it, so that an orchestrator's stop reaches the server and the
// command exits with the server's code.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const REQUIRED_MAJOR = 24;
const major = Number(process.versions.node.split('.')[0]);

/** The Node 24 binary of the `node` package, where it is installed; else undefined. */
function pinnedNode() {
  try {
    const manifest = createRequire(import.meta.url).resolve('node/package.json');
    const node = path.join(path.dirname(manifest), 'bin', 'node');
    return existsSync(node) ? node : undefined;
  } catch {
    return undefined;
  }
}

function runOnPinnedNode(node) {
  const child = spawn(node, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: 'inherit',
    // Its own process group: a terminal's Ctrl-C reaches this process only, which passes it on once.
    detached: true,
  });
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) {
    process.on(signal, () => child.kill(signal));
  }
  child.on('error', (error) => {
    process.stderr.write(`practice-billing: cannot run ${node}: ${error.message}\n`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => {
    process.exit(code ?? (signal === 'SIGINT' ? 130 : 143));
  });
}

if (major < REQUIRED_MAJOR) {
  const node = pinnedNode();
  if (node) {
    runOnPinnedNode(node);
  } else {
    process.stderr.write(
      `practice-billing needs Node.js ${REQUIRED_MAJOR} or newer; this is Node.js ${process.versions.node} (${process.execPath}),\n` +
        'and the Node 24 the project installs (the `node` package) is not there: run `npm ci --omit=dev` first.\n',
    );
    process.exit(1);
  }
} else {
  // V8's compiled code of the sources is cached between starts (in NODE_COMPILE_CACHE, else the system's
  // temporary directory); enabled before the sources are imported, so it covers them.
  const { default: module } = await import('node:module');
  module.enableCompileCache?.();

  const { runCli } = await import('../src/cli/main.ts');
  const code = await runCli(process.argv.slice(2), process.env);
  // A failed start may leave a connection or timer behind: a non-zero code ends the process now.
  if (code !== 0) process.exit(code);
}
