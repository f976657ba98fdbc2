// Keeps every top-level function of src/ short enough to hold in one reading: no function
// declaration, arrow function or function expression assigned at top level, and no method of a
// top-level class (its private ones too), is over 60 lines, apart from the declarative tables named in
// ALLOWED (each with its reason). Parses src/**/*.ts; reads files only, no database.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { parseSync } from '@swc/core';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const MAX_LINES = 60;

/** `file:name` → why it may be longer. */
const ALLOWED: Record<string, string> = {
  'src/docs/openapi-info.ts:openApiInfo': 'a declarative table: the OpenAPI info literal',
  'src/invoices/routes.ts:invoiceRoutes': 'a declarative table: the invoice route list',
};

interface Found {
  key: string;
  lines: number;
}

/** The parts of SWC's syntax tree this check reads. */
interface Node {
  type: string;
  span: { start: number; end: number };
  [field: string]: unknown;
}

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const relative = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(relative);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [relative] : [];
  });
}

const WRAPPERS = new Set([
  'ParenthesisExpression',
  'TsAsExpression',
  'TsSatisfiesExpression',
  'TsTypeAssertion',
  'TsConstAssertion',
]);

function isFunction(node: unknown): boolean {
  let inner = node as Node | null | undefined;
  while (inner && WRAPPERS.has(inner.type)) inner = inner.expression as Node;
  return inner?.type === 'ArrowFunctionExpression' || inner?.type === 'FunctionExpression';
}

function nameOf(node: unknown): string {
  const key = node as { value?: unknown } | null | undefined;
  return typeof key?.value === 'string' ? key.value : '?';
}

/**
 * The top-level functions of one file, each named as `file:name` (a method as `file:Class.method`).
 * The TypeScript package here is the native compiler, which has no JavaScript API, so the file is
 * parsed with SWC (the parser the import lint uses). SWC's spans count UTF-8 bytes from a base that
 * a leading `;` pins to the file's first byte.
 */
function functionsOf(file: string): Found[] {
  const bytes = Buffer.from(`;${fs.readFileSync(path.join(ROOT, file), 'utf8')}`);
  const module = parseSync(bytes.toString('utf8'), { syntax: 'typescript' }) as unknown as {
    span: Node['span'];
    body: Node[];
  };
  const base = module.span.start;
  const lineAt = (offset: number): number => {
    let line = 0;
    for (let at = bytes.indexOf(10); at !== -1 && at < offset - base; at = bytes.indexOf(10, at + 1))
      line += 1;
    return line;
  };
  const lines = (node: Node): number => lineAt(node.span.end - 1) - lineAt(node.span.start) + 1;
  const found: Found[] = [];
  for (const item of module.body) {
    const statement = item.type === 'ExportDeclaration' ? (item.declaration as Node) : item;
    if (statement.type === 'FunctionDeclaration' && statement.body) {
      found.push({ key: `${file}:${nameOf(statement.identifier)}`, lines: lines(statement) });
    } else if (statement.type === 'VariableDeclaration') {
      for (const declarator of statement.declarations as Node[]) {
        if (isFunction(declarator.init)) {
          found.push({ key: `${file}:${nameOf(declarator.id)}`, lines: lines(declarator) });
        }
      }
    } else if (statement.type === 'ClassDeclaration') {
      const owner = nameOf(statement.identifier);
      for (const member of statement.body as Node[]) {
        const isMethod =
          member.type === 'Constructor' ||
          ((member.type === 'ClassMethod' || member.type === 'PrivateMethod') &&
            (member.function as { body?: unknown }).body) ||
          ((member.type === 'ClassProperty' || member.type === 'PrivateProperty') &&
            isFunction(member.value));
        const name = member.type.startsWith('Private') ? `#${nameOf(member.key)}` : nameOf(member.key);
        if (isMethod) found.push({ key: `${file}:${owner}.${name}`, lines: lines(member) });
      }
    }
  }
  return found;
}

const all = sourceFiles('src').flatMap(functionsOf);

test(`no top-level function or method in src/ is over ${MAX_LINES} lines, apart from the allowed`, () => {
  const long = all
    .filter((found) => found.lines > MAX_LINES && !(found.key in ALLOWED))
    .map((found) => `${found.key} (${found.lines} lines)`);
  assert.deepEqual(long, [], `split these along their phases:\n${long.join('\n')}`);
});

test('every allowed entry names a long function that still exists, with a reason', () => {
  for (const [key, reason] of Object.entries(ALLOWED)) {
    const found = all.find((candidate) => candidate.key === key);
    assert.ok(found, `${key} is allowed but no longer exists`);
    assert.ok(found.lines > MAX_LINES, `${key} is allowed but is ${found.lines} lines now`);
    assert.match(reason, /\w{3}/, `${key} needs a one-line reason`);
    assert.doesNotMatch(reason, /\n/, `${key}: the reason is one line`);
  }
});

test('the check finds a long function', () => {
  const dir = fs.mkdtempSync(path.join(ROOT, '.tmp-function-length-'));
  try {
    const body = Array.from({ length: MAX_LINES }, (_, i) => `  const v${i} = ${i};`).join('\n');
    fs.writeFileSync(
      path.join(dir, 'long.ts'),
      `export function long(): void {\n${body}\n}\nexport const short = () => 1;\nexport class C {\n  m(): void {\n${body}\n  }\n  #p(): void {\n${body}\n  }\n}\n`,
    );
    const found = functionsOf(path.relative(ROOT, path.join(dir, 'long.ts')));
    assert.deepEqual(
      found.map((f) => [f.key.split(':')[1], f.lines]),
      [
        ['long', MAX_LINES + 2],
        ['short', 1],
        ['C.m', MAX_LINES + 2],
        ['C.#p', MAX_LINES + 2],
      ],
    );
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
