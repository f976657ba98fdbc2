// An independent reference for the money rules (src/invoices/money.ts), written in BigInt from the
// rules' wording rather than from the code: rounding half away from zero, a line's subtotal and total
// with the shipped tariff modifiers, and the fast-check generators of quantities, prices and modifiers.
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';

/** Reference rounding of n / d, half away from zero, in BigInt. */
export function roundDiv(n: bigint, d: bigint): bigint {
  const sign = n < 0n ? -1n : 1n;
  const abs = n < 0n ? -n : n;
  const q = abs / d;
  const r = abs % d;
  return sign * (r * 2n >= d ? q + 1n : q);
}

/** The tariff's modifiers and their basis points, read from the shipped catalogue. */
export const MODIFIERS: Record<string, number> = Object.fromEntries(
  fs
    .readFileSync(path.resolve(import.meta.dirname, '..', '..', 'catalogue', 'tariff-modifiers.csv'), 'utf8')
    .trim()
    .split('\n')
    .slice(1)
    .map((row) => {
      const cells = row.split(',');
      return [cells[0]!, Number(cells.at(-1))];
    }),
);

export const quantity = fc.integer({ min: 1, max: 100_000_000 }); // in 1/10000 units: 0.0001 to 10000
export const unitPrice = fc.integer({ min: 0, max: 1_000_000_000 });
export const modifierSet = fc.subarray(Object.keys(MODIFIERS));

export function expectedLine(q: number, price: number, modifiers: string[]) {
  const subtotal = roundDiv(BigInt(q) * BigInt(price), 10_000n);
  const factor = 10_000n + BigInt(modifiers.reduce((s, m) => s + MODIFIERS[m]!, 0));
  const total = roundDiv(subtotal * factor, 10_000n);
  return { subtotal: Number(subtotal), total: Number(total < 0n ? 0n : total) };
}
