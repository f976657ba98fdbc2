// Keeps README.md honest: every `npm` script and `practice-billing` command (with its flags) that it
// names exists, its configuration table lists exactly the variables the service reads, its links to
// local files and headings resolve, and its first session runs against a fresh sandbox started the
// way `npm start` starts it: the bash blocks between the `<!-- first-session -->` markers step by
// step with bash and curl, then the same session made with the client package, the TypeScript blocks
// between the `<!-- first-session-sdk -->` markers of packages/client/README.md, as one program
// (test/support/first-session.ts). Embedded database only, so it runs once.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { findCommand } from '../src/cli/admin-commands.ts';
import { USAGE } from '../src/cli/main.ts';
import { ROOT } from './processes.ts';
import {
  CLIENT_README,
  fencedBlocks,
  hasSessionTools,
  README as README_PATH,
  readDocument,
  runFirstSession,
  runFirstSessionSdk,
  startSandbox,
} from './support/first-session.ts';

const README = readDocument(README_PATH);
const PACKAGE = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  scripts: Record<string, string>;
};

/** A document's code: fenced blocks (continued lines joined) and inline code spans, one entry per line. */
function codeLines(markdown: string): string[] {
  const lines: string[] = [];
  for (const block of fencedBlocks(markdown)) lines.push(...block.body.replace(/\\\n\s*/g, ' ').split('\n'));
  const prose = markdown.replace(/^```\w*\n[\s\S]*?^```$/gm, '');
  for (const m of prose.matchAll(/`([^`\n]+)`/g)) lines.push(m[1]!);
  return lines;
}

/** GitHub's anchor for a heading. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\w\- ]/g, '')
    .replace(/ /g, '-');
}

function anchorsOf(markdown: string): Set<string> {
  return new Set([...markdown.matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1]!)));
}

const NPM_BUILTINS = new Set(['install', 'ci', 'exec', 'i', 'run', 'pack']);

function npmScriptsNamed(markdown: string): Set<string> {
  const named = new Set<string>();
  for (const line of codeLines(markdown)) {
    for (const m of line.matchAll(/\bnpm (?:run )?([a-z][\w:-]*)/g)) {
      if (!NPM_BUILTINS.has(m[1]!)) named.add(m[1]!);
    }
  }
  return named;
}

test("every npm script the README and the client package's README name exists in package.json", () => {
  const named = npmScriptsNamed(README);
  for (const script of named)
    assert.ok(PACKAGE.scripts[script], `npm script "${script}" is not in package.json`);
  for (const script of ['start', 'test', 'openapi'])
    assert.ok(named.has(script), `the README names npm ${script}`);
  for (const script of npmScriptsNamed(readDocument(CLIENT_README)))
    assert.ok(PACKAGE.scripts[script], `${CLIENT_README}: npm script "${script}" is not in package.json`);
});

test('every practice-billing command and admin command the README names exists, with its flags', () => {
  const commands = new Set([...USAGE.matchAll(/^ {2}([a-z]+) /gm)].map((m) => m[1]!));
  assert.ok(commands.has('serve') && commands.has('admin'), USAGE);
  let adminCommands = 0;
  for (const line of codeLines(README)) {
    for (const m of line.matchAll(/\bpractice-billing ([a-z][\w-]*)/g)) {
      assert.ok(commands.has(m[1]!), `"practice-billing ${m[1]}" is not a command:\n${line}`);
    }
    const admin = /(?:practice-billing |^)admin ([a-z][\w-]*)(?: ([a-z][\w-]*))?(.*)$/.exec(line);
    if (!admin || admin[1] === 'help') continue;
    const [, resource, action, rest] = admin;
    const command = findCommand(resource!, action ?? '');
    assert.ok(command, `"admin ${resource} ${action ?? ''}" is not an admin command:\n${line}`);
    adminCommands += 1;
    const known = new Set(['url', 'token', 'help', ...command.flags.map((f) => f.flag)]);
    if (command.idempotencyKey) known.add('idempotency-key');
    if (command.target) known.add(command.target.flag);
    const args = rest!.split(/\s(?:#|\||&&)\s/)[0]!;
    for (const flag of args.matchAll(/(?:^|\s)--([a-z][\w-]*)/g)) {
      assert.ok(known.has(flag[1]!), `--${flag[1]} is not a flag of "admin ${resource} ${action}":\n${line}`);
    }
  }
  assert.ok(adminCommands >= 10, 'the README shows the admin CLI');
});

test('the configuration table lists exactly the environment the service and the CLI read', () => {
  const source = fs.readFileSync(path.join(ROOT, 'src', 'platform', 'config.ts'), 'utf8');
  const read = new Set(
    // env.NAME, or a reader called with the name: flag(env, 'NAME', …), int('NAME', …).
    [...source.matchAll(/env\.([A-Z][A-Z0-9_]+)|\(\s*(?:env,\s*)?'([A-Z][A-Z0-9_]+)'/g)].map(
      (m) => (m[1] ?? m[2])!,
    ),
  );
  const cli = fs.readFileSync(path.join(ROOT, 'src', 'cli', 'admin-client.ts'), 'utf8');
  const cliRead = new Set([...cli.matchAll(/env\.([A-Z][A-Z0-9_]+)/g)].map((m) => m[1]!));
  const section = README.slice(
    README.indexOf('## Configuration'),
    README.indexOf('\n## ', README.indexOf('## Configuration') + 1),
  );
  const listed = new Set([...section.matchAll(/^\| `([A-Z][A-Z0-9_]+)` +\|/gm)].map((m) => m[1]!));
  assert.ok(read.size >= 20, [...read].join(', '));
  for (const name of read)
    assert.ok(listed.has(name), `${name} (src/platform/config.ts) is missing from the table`);
  for (const name of listed) {
    assert.ok(read.has(name) || cliRead.has(name), `${name} is in the table but nothing reads it`);
  }
});

test("the README's links to local files and headings resolve", () => {
  const own = anchorsOf(README);
  for (const m of README.matchAll(/\]\(([^)\s]*)\)/g)) {
    const [target, anchor] = m[1]!.split('#') as [string, string | undefined];
    if (/^[a-z]+:/.test(target)) continue;
    if (target === '') {
      assert.ok(anchor && own.has(anchor), `#${anchor} is not a heading of README.md`);
      continue;
    }
    const file = path.join(ROOT, target);
    assert.ok(fs.existsSync(file), `${target} does not exist`);
    if (anchor) assert.ok(anchorsOf(fs.readFileSync(file, 'utf8')).has(anchor), `${target}#${anchor}`);
  }
});

test('the first session runs, every step succeeding, with curl and then with the client package, against a fresh sandbox', {
  timeout: 90_000,
  skip: hasSessionTools() ? false : 'needs bash, curl and jq',
}, async () => {
  const sandbox = await startSandbox('readme');
  try {
    const result = await runFirstSession(sandbox);
    const report = result.report;
    assert.equal(
      result.stepsDone,
      result.steps,
      `steps done: ${result.stepsDone} of ${result.steps}\n${report}`,
    );
    assert.equal(result.code, 0, report);
    assert.match(result.stdout, /^patient pat_\w+$/m, report);
    assert.match(result.stdout, /^coverage cov_\w+$/m, report);
    assert.match(result.stdout, /^encounter enc_\w+$/m, report);
    assert.match(result.stdout, /"code": "J06\.9"/, report);
    assert.match(result.stdout, /"claimQueued": true/, report);
    assert.match(result.stdout, /"number": "INV-\d{6}"/, report);
    assert.match(result.stdout, /"object": "claim"[\s\S]*"status": "accepted"/, report);
    assert.match(result.stdout, /^account %PDF- \d+ bytes in /m, report);
    // The desk payment and its refund, read back in the invoice's refunds.
    assert.match(result.stdout, /"reference": ?"slip 0042"/, report);
    assert.match(result.stdout, /"reason": ?"Charged twice"/, report);

    const sdk = await runFirstSessionSdk(sandbox);
    const sdkReport = sdk.report;
    assert.equal(sdk.code, 0, sdkReport);
    assert.match(sdk.stdout, /^patient pat_\w+$/m, sdkReport);
    assert.match(sdk.stdout, /^refused 409 duplicate: /m, sdkReport);
    assert.match(sdk.stdout, /^coverage cov_\w+ on Ubuntu Essential/m, sdkReport);
    assert.match(sdk.stdout, /^code J06\.9: /m, sdkReport);
    assert.match(sdk.stdout, /^encounter enc_\w+$/m, sdkReport);
    assert.match(sdk.stdout, /^invoice INV-\d{6} issued, claim queued: true$/m, sdkReport);
    assert.match(sdk.stdout, /^ {2}0190 \d+ medical_aid$/m, sdkReport);
    assert.match(sdk.stdout, /^claim accepted, outcome complete$/m, sdkReport);
    assert.match(sdk.stdout, /^ {2}line 1: approved, benefit \d+$/m, sdkReport);
    assert.equal([...sdk.stdout.matchAll(/^changed INV-\d{6} /gm)].length, 2, sdkReport);
  } finally {
    await sandbox.stop();
  }
});
