// Times 401 answers from a process of its own, as a remote caller would see them: the service's work
// after an answer (the audit write of a refused known key) runs on the service's thread, not on this
// one. Reads {url, tokens, samples, warmup} as JSON from argv[2]; prints every reason's times and
// statuses as JSON. Reasons are interleaved in a shuffled order each round, each answer timed on its own
// after a short pause.
interface ProbeInput {
  url: string;
  tokens: Record<string, string | null>;
  samples: number;
  warmup: number;
}

const PAUSE_MS = Number(process.env.TIMING_PAUSE_MS ?? 5);
const input = JSON.parse(process.argv[2] ?? '{}') as ProbeInput;
const target = `${input.url}/api/v1/patients/pat_0000000000000000000000`;

async function probe(authorization: string | null): Promise<{ ms: number; status: number }> {
  const started = performance.now();
  const answer = await fetch(target, authorization ? { headers: { authorization } } : {});
  await answer.arrayBuffer();
  return { ms: performance.now() - started, status: answer.status };
}

const reasons = Object.keys(input.tokens);
const times: Record<string, number[]> = Object.fromEntries(reasons.map((r) => [r, []]));
const statuses = new Set<number>();
for (let i = 0; i < input.warmup; i++) for (const r of reasons) await probe(input.tokens[r] ?? null);
// Each round asks the reasons in a new order, so that no reason always follows the same one (whose
// after-answer work, such as an audit write, would then always weigh on it alone).
let seed = 0x2545f491;
function shuffled(list: string[]): string[] {
  const out = [...list];
  for (let i = out.length - 1; i > 0; i--) {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    const j = seed % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}
for (let i = 0; i < input.samples; i++) {
  for (const r of shuffled(reasons)) {
    await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
    const answer = await probe(input.tokens[r] ?? null);
    statuses.add(answer.status);
    times[r]!.push(answer.ms);
  }
}
process.stdout.write(JSON.stringify({ times, statuses: [...statuses] }));
