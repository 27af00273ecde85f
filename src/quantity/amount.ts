/**
 * Exact decimal amounts for quantities: a value is an unscaled BigInt times 10^scale. The helpers
 * here are the BigInt arithmetic both of apimachinery's internal forms need: the int64 fast path
 * (`int64Amount`, returning undefined where Go returns false) and arbitrary precision (`inf.Dec`).
 * No floating point.
 */

/** Largest power of ten this implementation materialises as a BigInt (digits). */
export const MAX_EXPONENT_SPAN = 100_000;

export const MIN_INT64 = -(1n << 63n);
export const MAX_INT64 = (1n << 63n) - 1n;

export const fitsInt64 = (v: bigint): boolean => v >= MIN_INT64 && v <= MAX_INT64;
export const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
export const absBig = (v: bigint): bigint => (v < 0n ? -v : v);
export const signBig = (v: bigint): -1 | 0 | 1 => (v > 0n ? 1 : v < 0n ? -1 : 0);
/** -x without producing -0. */
export const negNum = (x: number): number => (x === 0 ? 0 : -x);
/** Go int32 arithmetic wrap-around. */
export const int32 = (x: number): number => x | 0;

const POW10_CACHE: bigint[] = [1n];
export function pow10(k: number): bigint {
  if (!Number.isSafeInteger(k) || k < 0) throw new RangeError(`internal error: 10^${k}`);
  if (k > MAX_EXPONENT_SPAN) {
    throw new RangeError(
      `quantity arithmetic would need 10^${k}, beyond the supported span of 10^${MAX_EXPONENT_SPAN}: the ` +
        `operands' magnitudes are too far apart`,
    );
  }
  if (k < 64) {
    for (let i = POW10_CACHE.length; i <= k; i++) POW10_CACHE.push(POW10_CACHE[i - 1]! * 10n);
    return POW10_CACHE[k]!;
  }
  return 10n ** BigInt(k);
}

export function digitCount(v: bigint): number {
  return absBig(v).toString().length;
}

/** Removes factors of ten from u (u != 0): u*10^s == m*10^e. */
export function stripTens(u: bigint, s: number): [bigint, number] {
  const str = absBig(u).toString();
  let z = 0;
  while (z < str.length - 1 && str[str.length - 1 - z] === '0') z++;
  if (z === 0) return [u, s];
  const m = BigInt(str.slice(0, str.length - z));
  return [u < 0n ? -m : m, s + z];
}

/** Rounds |v| / 10^k away from zero (k >= 0); returns the quotient and whether it was exact. */
export function divPow10Away(v: bigint, k: number): [bigint, boolean] {
  if (k === 0 || v === 0n) return [v, true];
  const str = absBig(v).toString();
  if (k >= str.length) return [BigInt(signBig(v)), false];
  // Truncate the last k digits (no power of ten needed), then round away from zero.
  const head = BigInt(str.slice(0, str.length - k));
  const exact = /^0*$/.test(str.slice(str.length - k));
  const q = exact ? head : head + 1n;
  return [v < 0n ? -q : q, exact];
}

export interface Amount {
  u: bigint;
  s: number;
}

/**
 * Scale gaps up to this are aligned by multiplying (10^36 is a small BigInt); wider ones compare digit counts first.
 */
const ALIGN_DIRECTLY = 36;
const cmpBig = (x: bigint, y: bigint): -1 | 0 | 1 => (x === y ? 0 : x > y ? 1 : -1);

/** Exact comparison of u1*10^s1 and u2*10^s2 without materialising far-apart scales. */
export function cmpAmount(a: Amount, b: Amount): -1 | 0 | 1 {
  // Same scale, or scales close enough that aligning them costs one small multiplication: compare
  // directly (the digit counts below need two BigInt-to-string conversions).
  if (a.s === b.s) return cmpBig(a.u, b.u);
  const gap = a.s - b.s;
  if (gap > 0 && gap <= ALIGN_DIRECTLY) return cmpBig(a.u * pow10(gap), b.u);
  if (gap < 0 && gap >= -ALIGN_DIRECTLY) return cmpBig(a.u, b.u * pow10(-gap));
  const sa = signBig(a.u);
  const sb = signBig(b.u);
  if (sa !== sb) return sa > sb ? 1 : -1;
  if (sa === 0) return 0;
  const ma = absBig(a.u);
  const mb = absBig(b.u);
  const oa = digitCount(ma) + a.s;
  const ob = digitCount(mb) + b.s;
  let c: -1 | 0 | 1;
  if (oa !== ob) {
    c = oa > ob ? 1 : -1;
  } else {
    const s = Math.min(a.s, b.s);
    const x = ma * pow10(a.s - s);
    const y = mb * pow10(b.s - s);
    c = cmpBig(x, y);
  }
  return sa > 0 ? c : c === 0 ? 0 : c === 1 ? -1 : 1;
}

// apimachinery's int64Amount fast path (math.go / amount.go), returning undefined where Go returns false.

function int64Add(a: bigint, b: bigint): bigint | undefined {
  const c = a + b;
  return fitsInt64(c) ? c : undefined;
}

/** base * 10^k if it fits an int64 (k >= 0). */
export function positiveScaleInt64(base: bigint, k: number): bigint | undefined {
  if (base === 0n || k === 0) return base;
  if (k > 19) return undefined;
  const c = base * pow10(k);
  return fitsInt64(c) ? c : undefined;
}

export function int64AmountAdd(a: Amount, b: Amount): Amount | undefined {
  if (b.u === 0n) return a;
  if (a.u === 0n) return b;
  if (a.s === b.s) {
    const c = int64Add(a.u, b.u);
    return c === undefined ? undefined : { u: c, s: a.s };
  }
  if (a.s > b.s) {
    const c = positiveScaleInt64(a.u, a.s - b.s);
    const d = c === undefined ? undefined : int64Add(c, b.u);
    return d === undefined ? undefined : { u: d, s: b.s };
  }
  const c = positiveScaleInt64(b.u, b.s - a.s);
  const d = c === undefined ? undefined : int64Add(a.u, c);
  return d === undefined ? undefined : { u: d, s: a.s };
}

export function int64AmountMul(a: Amount, b: bigint): Amount | undefined {
  if (a.u === 0n) return a;
  if (b === 0n) return { u: 0n, s: 0 };
  const c = a.u * b;
  if (!fitsInt64(c)) return undefined;
  if (a.s === 0) return { u: c, s: 0 };
  if (a.s > 0) return positiveScaleInt64(c, a.s) === undefined ? undefined : { u: c, s: a.s };
  const k = -a.s;
  return k <= 18 && c % pow10(k) === 0n ? { u: c, s: a.s } : undefined;
}

/** inf.Dec addition: both operands brought to the finer scale. */
export function decAdd(a: Amount, b: Amount): Amount {
  const s = Math.min(a.s, b.s);
  const x = a.u === 0n ? 0n : a.u * pow10(a.s - s);
  const y = b.u === 0n ? 0n : b.u * pow10(b.s - s);
  return { u: x + y, s };
}
