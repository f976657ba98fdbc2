// Owns the arithmetic of money: integer minor units only, computed in BigInt so no floating-point
// drift can creep in. Quantities carry at most 4 decimal places and are scaled to integers first.
// Rounding is half away from zero, applied once per computed amount:
//   subtotal = round(quantity × unitPrice)
//   total    = round(subtotal × (10000 + Σ modifier basis points) / 10000), never below 0
//   tax      = round(totalNet × VAT basis points / 10000); totalGross = totalNet + tax

export const QUANTITY_SCALE = 10_000n;
/** The contract's bound on every amount field: integers within ±(2^53 - 1), exact in JSON numbers. */
export const MAX_AMOUNT = Number.MAX_SAFE_INTEGER;
const BASIS = 10_000n;

/** Divides with rounding half away from zero. */
function divideRounded(numerator: bigint, denominator: bigint): bigint {
  const negative = numerator < 0n !== denominator < 0n;
  const n = numerator < 0n ? -numerator : numerator;
  const d = denominator < 0n ? -denominator : denominator;
  const q = (n * 2n + d) / (d * 2n);
  return negative ? -q : q;
}

/** The quantity as an integer count of 1/10000 units, or undefined when it has more than 4 decimals. */
export function scaledQuantity(quantity: number): bigint | undefined {
  const scaled = Math.round(quantity * 10_000);
  if (Math.abs(scaled - quantity * 10_000) > 1e-6 || !Number.isSafeInteger(scaled)) return undefined;
  return BigInt(scaled);
}

export function lineSubtotal(quantity: number, unitPrice: number): number {
  const q = scaledQuantity(quantity);
  if (q === undefined) throw new Error('quantity has more than 4 decimal places');
  return Number(divideRounded(q * BigInt(unitPrice), QUANTITY_SCALE));
}

export function lineTotal(subtotal: number, modifierBasisPoints: number[]): number {
  const factor = BASIS + modifierBasisPoints.reduce((sum, bp) => sum + BigInt(bp), 0n);
  const total = divideRounded(BigInt(subtotal) * factor, BASIS);
  return total < 0n ? 0 : Number(total);
}

export function invoiceTotals(
  lineTotals: number[],
  vatBasisPoints: number,
): { totalNet: number; totalGross: number } {
  const net = lineTotals.reduce((sum, t) => sum + BigInt(t), 0n);
  const tax = divideRounded(net * BigInt(vatBasisPoints), BASIS);
  return { totalNet: Number(net), totalGross: Number(net + tax) };
}

/**
 * Each line's amount with its share of the invoice's VAT, as a claim carries it: the invoice's tax
 * (totalGross - totalNet, as issued) is shared in proportion to the lines' totals, each share rounded
 * down and the cents left given one each to the lines with the largest remainders (the later line on
 * a tie), so the amounts add up to totalGross exactly and no line carries less than its own total.
 */
export function linesWithVat(lineTotals: readonly number[], totalNet: number, totalGross: number): number[] {
  const tax = BigInt(totalGross) - BigInt(totalNet);
  if (tax === 0n || totalNet === 0) return [...lineTotals];
  const sign = tax < 0n ? -1n : 1n;
  const net = BigInt(totalNet);
  const exact = lineTotals.map((t) => BigInt(t) * tax * sign);
  const shares = exact.map((e) => e / net);
  let left = tax * sign - shares.reduce((sum, s) => sum + s, 0n);
  const byRemainder = exact
    .map((e, i) => ({ i, remainder: e % net }))
    .sort((a, b) => (a.remainder === b.remainder ? b.i - a.i : a.remainder > b.remainder ? -1 : 1));
  for (const { i } of byRemainder) {
    if (left === 0n) break;
    shares[i] = shares[i]! + 1n;
    left -= 1n;
  }
  return lineTotals.map((t, i) => Number(BigInt(t) + sign * shares[i]!));
}
