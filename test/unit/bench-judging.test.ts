// The bench's judging rules without running a load: a timing target measured beside other work (a
// load above 1.0 at the start, or others above 10 % of a core in one of its windows) is "not judged:
// machine busy" with the figures, while the counted statements and transactions are judged on any
// machine; the step load's rates rise from the start to the maximum; and /proc is read as CPU time.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { CpuUse } from '../../bench/cpu-window.ts';
import { machineBusyMs, processCpuMs } from '../../bench/proc.ts';
import { quietness } from '../../bench/quiet.ts';
import type { PassResult } from '../../bench/results.ts';
import { STEPS, stepRates } from '../../bench/step-load.ts';
import { judge } from '../../bench/targets.ts';

function window(label: string, othersPctOfCore: number): CpuUse {
  return {
    label,
    seconds: 6,
    loadBefore: 0.5,
    loadAfter: 0.9,
    apiMs: 1000,
    workerMs: 1000,
    postgresMs: 1000,
    benchMs: 300,
    othersMs: othersPctOfCore * 60,
    othersPctOfCore,
  };
}

function pass(othersPctOfCore: number): PassResult {
  const cpu = window('step 30/s', othersPctOfCore);
  const counts = { statements: 50, roundTrips: 40, transactions: 7 };
  const step = {
    run: {} as never,
    cpu,
    completionsPerSec: 29.5,
    cpuMsPerClaim: { api: 2, worker: 3, postgres: 4, total: 9 },
    offeredRate: 30,
    following: true,
  };
  return {
    database: 'postgres',
    scenarios: [],
    invoices: {},
    capacity: {
      steps: [step],
      claimsPerSec: 29.5,
      followedUpTo: 30,
      saturated: false,
      cpuMsPerClaimAtSaturation: step.cpuMsPerClaim,
    },
    counted: {
      claims: 10,
      perClaim: { total: counts, api: counts, worker: counts },
      byKind: {},
      workerOutsideJobs: counts,
      basis: 'test',
    },
    loadAverage: { before: 0.5 },
    windows: [cpu],
    notes: [],
    seconds: 1,
  };
}

const verdictOf = (targets: ReturnType<typeof judge>, starts: string) =>
  targets.find((t) => t.target.startsWith(starts))!;

describe('the quiet-machine rule', () => {
  test('a quiet start and quiet windows judge every figure', () => {
    assert.deepEqual(quietness(0.4, [window('a', 2), window('b', 9.9)]), { quiet: true, reasons: [] });
    const targets = judge([pass(3)], 0.4);
    assert.equal(verdictOf(targets, 'CPU per claim').verdict, 'met');
    assert.equal(verdictOf(targets, 'claim capacity').verdict, 'not met');
  });

  test('a busy start or a busy window refuses to judge timing, with the figures', () => {
    const busyStart = quietness(1.7, [window('a', 2)]);
    assert.equal(busyStart.quiet, false);
    assert.match(busyStart.reasons.join(), /1-min load 1\.7/);
    const busyWindow = quietness(0.2, [window('step 60/s', 35)]);
    assert.match(busyWindow.reasons.join(), /35 % of a core during step 60\/s/);

    const targets = judge([pass(35)], 0.2);
    const cpu = verdictOf(targets, 'CPU per claim');
    assert.equal(cpu.verdict, 'not judged: machine busy');
    assert.match(cpu.busy!.join(), /35 %/);
    assert.equal(verdictOf(targets, 'claim capacity').verdict, 'not judged: machine busy');
  });

  test('counted statements and transactions are judged on a busy machine', () => {
    const targets = judge([pass(80)], 5);
    assert.equal(verdictOf(targets, 'claim: ≤ 60 statements').verdict, 'met');
  });
});

test('the step load rises from its start by its factor up to its maximum', () => {
  const rates = stepRates('postgres');
  assert.equal(rates[0], STEPS.start.postgres);
  assert.ok(rates.every((rate, i) => i === 0 || rate > rates[i - 1]!));
  assert.ok(rates.at(-1)! <= STEPS.max.postgres && rates.at(-1)! * STEPS.factor > STEPS.max.postgres);
});

test('/proc is read as CPU milliseconds', () => {
  const start = performance.now();
  while (performance.now() - start < 30) Math.sqrt(Math.random());
  assert.ok(processCpuMs(process.pid)! > 0);
  assert.equal(processCpuMs(2 ** 22 + 1), undefined);
  assert.ok(machineBusyMs()! > 0);
});
