// `node bench/profile-top.ts <file.cpuprofile> [count]`: summarises a V8 CPU profile (as written by
// `node --cpu-prof`, e.g. a bench run with BENCH_CPU_PROF_DIR set): the functions with the most self
// time, and self time per source file or package, as shares of all samples.
import fs from 'node:fs';
import path from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
}

const [file, countArg] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: node bench/profile-top.ts <file.cpuprofile> [count]\n');
  process.exit(2);
}
const count = Number(countArg ?? 25);
const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile;
const total = profile.nodes.reduce((n, node) => n + (node.hitCount ?? 0), 0);
const seconds = (profile.endTime - profile.startTime) / 1e6;

/** node_modules/<package> or the path inside the project, else the URL as is. */
function place(url: string): string {
  if (!url) return '(native / V8)';
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (modules) return `pkg ${modules[1]}`;
  const local = url.replace(/^file:\/\//, '');
  if (local.startsWith('node:')) return local;
  return path.relative(path.resolve(import.meta.dirname, '..'), local);
}

const byFunction = new Map<string, number>();
const byPlace = new Map<string, number>();
for (const node of profile.nodes) {
  const hits = node.hitCount ?? 0;
  if (hits === 0) continue;
  const frame = node.callFrame;
  const where = place(frame.url);
  const name = `${frame.functionName || '(anonymous)'}  ${where}${frame.url ? `:${frame.lineNumber + 1}` : ''}`;
  byFunction.set(name, (byFunction.get(name) ?? 0) + hits);
  byPlace.set(where, (byPlace.get(where) ?? 0) + hits);
}

const top = (map: Map<string, number>, n: number) =>
  [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([name, hits]) => `${((hits / total) * 100).toFixed(1).padStart(5)}%  ${name}`)
    .join('\n');

process.stdout.write(
  `${path.basename(file)}: ${total} samples over ${seconds.toFixed(1)} s\n\nSelf time by function:\n${top(byFunction, count)}\n\nSelf time by file or package:\n${top(byPlace, 15)}\n`,
);
