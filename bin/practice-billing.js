#!/usr/bin/env node
// The `practice-billing` command. Plain JavaScript that any Node can read, so that an older Node says
// clearly what is wrong instead of failing on TypeScript syntax: the sources (src/*.ts) need Node 24,
// which runs them directly.
const REQUIRED_MAJOR = 24;
const major = Number(process.versions.node.split('.')[0]);

if (major < REQUIRED_MAJOR) {
  process.stderr.write(
    `practice-billing needs Node.js ${REQUIRED_MAJOR} or newer; this is Node.js ${process.versions.node} (${process.execPath}).\n` +
      'The project pins Node 24 as a dependency: after `npm install`, run the command through npm ' +
      '(`npx practice-billing ...` or `npm exec -- practice-billing ...`) or with node_modules/.bin/node.\n',
  );
  process.exit(1);
}

// V8's compiled code of the sources is cached between starts (in NODE_COMPILE_CACHE, else the system's
// temporary directory); enabled before the sources are imported, so it covers them.
const { default: module } = await import('node:module');
module.enableCompileCache?.();

const { runCli } = await import('../src/cli/main.ts');
process.exitCode = await runCli(process.argv.slice(2), process.env);
