// Keeps the documents beside the README honest: README.md stays at most 600 lines (the rest belongs
// in docs/ or the client package's README), every local link and heading anchor in them resolves, every `npm` script CONTRIBUTING.md and bench/README.md name exists, every `practice-billing`
// command and admin command (with its flags) the documents show exists, every decision record
// under docs/decisions/ has its five sections and a line in the index, and every benchmark run a
// document cites is committed under bench/results/. Reads files only; no database.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { findCommand } from '../../src/cli/admin-commands.ts';
import { USAGE } from '../../src/cli/main.ts';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const DECISIONS = path.join(ROOT, 'docs', 'decisions');

function read(relative: string): string {
  return fs.readFileSync(path.join(ROOT, relative), 'utf8');
}

/**
 * The documents: the top-level Markdown files, bench/README.md, the client package's README and every
 * Markdown file in docs/.
 */
function documents(): string[] {
  const inDir = (dir: string): string[] =>
    fs
      .readdirSync(path.join(ROOT, dir))
      .filter((name) => name.endsWith('.md'))
      .map((name) => path.join(dir, name));
  return [
    'README.md',
    'CONTRIBUTING.md',
    path.join('bench', 'README.md'),
    path.join('packages', 'client', 'README.md'),
    ...inDir('docs'),
    ...inDir('docs/decisions'),
  ];
}

/** Markdown without its fenced blocks, where a link or a heading is only text. */
function prose(markdown: string): string {
  return markdown.replace(/^```\w*\n[\s\S]*?^```$/gm, '');
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
  return new Set([...prose(markdown).matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1]!)));
}

/** The README is for a person who wants to run and use the service; an operator's detail goes to docs/. */
const README_MOST_LINES = 600;

test(`README.md is at most ${README_MOST_LINES} lines`, () => {
  const lines = read('README.md').split('\n');
  const count = lines.at(-1) === '' ? lines.length - 1 : lines.length;
  assert.ok(
    count <= README_MOST_LINES,
    `README.md is ${count} lines: move what is for operators to docs/operator-guide.md or docs/operations.md`,
  );
});

test('every local link and heading anchor in the documents resolves', () => {
  const broken: string[] = [];
  for (const document of documents()) {
    const text = read(document);
    for (const m of prose(text).matchAll(/\]\(([^)\s]*)\)/g)) {
      const [target, anchor] = m[1]!.split('#') as [string, string | undefined];
      if (/^[a-z]+:/.test(target)) continue;
      const file =
        target === '' ? path.join(ROOT, document) : path.resolve(ROOT, path.dirname(document), target);
      if (!fs.existsSync(file)) {
        broken.push(`${document}: ${m[1]} (no such file)`);
        continue;
      }
      if (anchor && file.endsWith('.md') && !anchorsOf(fs.readFileSync(file, 'utf8')).has(anchor)) {
        broken.push(`${document}: ${m[1]} (no such heading)`);
      }
    }
  }
  assert.deepEqual(broken, []);
});

test('every npm script CONTRIBUTING.md and bench/README.md name exists in package.json', () => {
  const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
  const builtins = new Set(['install', 'ci', 'exec', 'i', 'run', 'pack']);
  for (const document of ['CONTRIBUTING.md', path.join('bench', 'README.md')]) {
    const named = [...read(document).matchAll(/\bnpm (?:run )?([a-z][\w:-]*)/g)]
      .map((m) => m[1]!)
      .filter((script) => !builtins.has(script));
    assert.ok(named.length > 0, `${document} names no npm script`);
    for (const script of named)
      assert.ok(scripts[script], `${document}: npm script "${script}" does not exist`);
  }
});

/** A document's code: fenced blocks (continued lines joined) and inline code spans, one entry per line. */
function codeLines(markdown: string): string[] {
  const lines: string[] = [];
  for (const m of markdown.matchAll(/^```\w*\n([\s\S]*?)^```$/gm))
    lines.push(...m[1]!.replace(/\\\n\s*/g, ' ').split('\n'));
  for (const m of prose(markdown).matchAll(/`([^`\n]+)`/g)) lines.push(m[1]!);
  return lines;
}

/** What is wrong with one line's `practice-billing` command or admin command, if anything. */
function commandProblems(line: string, commands: Set<string>): string[] {
  const problems = [...line.matchAll(/(?:^\s*|\bnpx )practice-billing ([a-z][\w-]*)/g)]
    .filter((m) => !commands.has(m[1]!))
    .map((m) => `"practice-billing ${m[1]}" is not a command`);
  const admin = /(?:practice-billing |^)admin ([a-z][\w-]*)(?: ([a-z][\w-]*))?(.*)$/.exec(line);
  if (!admin || admin[1] === 'help') return problems;
  const [, resource, action, rest] = admin;
  const command = findCommand(resource!, action ?? '');
  if (!command) return [...problems, `"admin ${resource} ${action ?? ''}" is not an admin command`];
  const known = new Set(['url', 'token', 'help', ...command.flags.map((f) => f.flag)]);
  if (command.idempotencyKey) known.add('idempotency-key');
  if (command.target) known.add(command.target.flag);
  const args = rest!.split(/\s(?:#|\||&&)\s/)[0]!;
  for (const flag of args.matchAll(/(?:^|\s)--([a-z][\w-]*)/g)) {
    if (!known.has(flag[1]!)) problems.push(`--${flag[1]} is not a flag of "admin ${resource} ${action}"`);
  }
  return problems;
}

test('every practice-billing command and admin command the documents show exists, with its flags', () => {
  const commands = new Set([...USAGE.matchAll(/^ {2}([a-z]+) /gm)].map((m) => m[1]!));
  assert.ok(commands.has('serve') && commands.has('admin'), USAGE);
  const problems: string[] = [];
  let adminCommands = 0;
  for (const document of documents()) {
    for (const line of codeLines(read(document))) {
      if (/(?:practice-billing |^)admin [a-z]/.test(line)) adminCommands += 1;
      problems.push(...commandProblems(line, commands).map((problem) => `${document}: ${problem}:\n${line}`));
    }
  }
  assert.deepEqual(problems, []);
  assert.ok(adminCommands >= 10, `${adminCommands} admin commands in the documents`);
});

test('every decision record has its five sections and a line in the index', () => {
  const records = fs.readdirSync(DECISIONS).filter((name) => /^\d{4}-[a-z0-9-]+\.md$/.test(name));
  assert.ok(records.length >= 99, `${records.length} records`);
  const numbers = records.map((name) => name.slice(0, 4));
  assert.equal(new Set(numbers).size, numbers.length, 'two records share a number');
  const index = read('docs/decisions/README.md');
  for (const name of records) {
    const text = fs.readFileSync(path.join(DECISIONS, name), 'utf8');
    for (const section of ['Status', 'Date', 'Context', 'Decision', 'Consequences']) {
      assert.match(text, new RegExp(`^(?:#+ |\\*\\*)${section}\\b`, 'm'), `${name} has no ${section}`);
    }
    assert.ok(index.includes(`](${name})`), `${name} is not listed in docs/decisions/README.md`);
  }
});

test('a decision taken back says so and links to what replaced it', () => {
  const record = read('docs/decisions/0008-held-writes-as-parameters.md');
  const status = /^## Status\n\n([\s\S]*?)\n## /m.exec(record)?.[1] ?? '';
  assert.match(status, /^Reversed/);
  assert.match(status, /\]\(0006-[a-z0-9-]+\.md\)/);
  // Taken up again later: the record says by which decision.
  assert.match(status, /\]\(0201-[a-z0-9-]+\.md\)/);
  assert.match(read('docs/decisions/README.md'), /\| 0008 \| .* \| Reversed \|/);
});

test("the index gives each record's own status, and a record superseded or reversed links to what replaced it", () => {
  const index = read('docs/decisions/README.md');
  const records = fs.readdirSync(DECISIONS).filter((name) => /^\d{4}-[a-z0-9-]+\.md$/.test(name));
  const problems: string[] = [];
  for (const name of records) {
    const status = /^## Status\n\n([\s\S]*?)\n## /m.exec(read(`docs/decisions/${name}`))?.[1] ?? '';
    const word = /^\w+/.exec(status)?.[0] ?? '';
    const listed = index
      .split('\n')
      .find((line) => line.startsWith(`| ${name.slice(0, 4)} | [`) && line.includes(`](${name})`))
      ?.split(' | ')[2];
    if (listed !== word) problems.push(`${name}: "${word}" in the record, "${listed}" in the index`);
    if (/^(?:Superseded|Reversed)$/.test(word) && !/\]\(\d{4}-[a-z0-9-]+\.md\)/.test(status))
      problems.push(`${name}: ${word} without a link to the record that replaced it`);
  }
  assert.deepEqual(problems, []);
  for (const name of ['0006-how-a-statement-travels.md', '0007-held-text-in-the-same-write.md']) {
    assert.match(read(`docs/decisions/${name}`), /^Superseded .*\]\(0200-[a-z0-9-]+\.md\)/m, name);
  }
});

test('every benchmark run a document cites is committed under bench/results/', () => {
  const runs = new Set(
    fs.readdirSync(path.join(ROOT, 'bench', 'results')).map((name) => name.replace(/\.\w+$/, '')),
  );
  const missing: string[] = [];
  for (const document of documents()) {
    for (const m of read(document).matchAll(
      /`(?:bench\/results\/)?(2026-\d\d-\d\dT\d\d-\d\d-\d\dZ)(?:\.md)?`/g,
    )) {
      if (!runs.has(m[1]!)) missing.push(`${document}: ${m[1]}`);
    }
  }
  assert.deepEqual(missing, []);
});
