/** The sign of a small linear combination of quantities, decided with doubles when that is safe. */
import type { Quantity } from './quantity.js';

/**
 * A double from asApproximateFloat64 is within 5 × 2^-53 of the exact value, relative to it (one
 * rounding converting the unscaled value, at most three in Go's Pow10 and the product), unless it
 * overflowed or underflowed; reliableDouble refuses those. Sums of three such doubles and their
 * rounding stay far inside 2^-40 of the sum of the magnitudes, the slack signOfSum allows.
 */
const DOUBLE_SLACK = 2 ** -40;

function reliableDouble(q: Quantity): number | undefined {
  const x = q.asApproximateFloat64();
  if (x === 0) return q.isZero() ? 0 : undefined;
  const magnitude = Math.abs(x);
  return magnitude < 1e300 && magnitude > 1e-300 ? x : undefined;
}

/**
 * The sign of ka·a + kb·b + kc·c for safe-integer coefficients, exactly. Decided with doubles when
 * the sum is clearly away from zero, which is what the admission rules almost always ask (does a
 * quota fit the budget, is the headroom below a tenth), so that no BigInt or Quantity is allocated;
 * computed exactly otherwise.
 */
export function signOfSum(ka: number, a: Quantity, kb: number, b: Quantity, kc: number, c: Quantity): -1 | 0 | 1 {
  const x = reliableDouble(a);
  const y = reliableDouble(b);
  const z = reliableDouble(c);
  if (x !== undefined && y !== undefined && z !== undefined) {
    const tx = ka * x;
    const ty = kb * y;
    const tz = kc * z;
    const sum = tx + ty + tz;
    const slack = (Math.abs(tx) + Math.abs(ty) + Math.abs(tz)) * DOUBLE_SLACK;
    if (sum > slack) return 1;
    if (sum < -slack) return -1;
  }
  return a.mul(ka).add(b.mul(kb)).add(c.mul(kc)).sign();
}
