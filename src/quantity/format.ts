/**
 * Printing quantities: apimachinery's canonical String() (CanonicalizeBytes of the released version
 * src/quantity/quantity.ts names), the exact plain decimal, and Go's float conversion.
 */
import { absBig, cmpAmount, divPow10Away, MAX_EXPONENT_SPAN, MIN_INT64, pow10, stripTens } from './amount.js';
import { BINARY_SUFFIX_BY_POWER, DECIMAL_SUFFIX_BY_EXPONENT, type QuantityFormat } from './suffix.js';

/** What a Quantity is made of: unscaled × 10^scale, its Format, and apimachinery's internal form. */
export interface QuantityParts {
  readonly unscaled: bigint;
  readonly scale: number;
  /** True when apimachinery would hold this value as inf.Dec rather than int64Amount. */
  readonly arbitrary: boolean;
  readonly format: QuantityFormat;
  /** The parsed string when apimachinery caches it as the value's String(). */
  readonly parsedAs?: string | undefined;
}

/** The canonical [number, suffix] (String() is their concatenation). */
export function canonicalize(q: QuantityParts): [string, string] {
  const { unscaled, scale, arbitrary } = q;
  if (unscaled === 0n) return ['0', ''];
  let format = q.format;
  if (format === 'BinarySI') {
    const a = { u: unscaled, s: scale };
    if (cmpAmount(a, { u: -1024n, s: 0 }) > 0 && cmpAmount(a, { u: 1024n, s: 0 }) < 0) {
      format = 'DecimalSI';
    } else {
      let n: bigint | undefined;
      if (scale < 0) {
        const [r, exact] = divPow10Away(unscaled, -scale);
        if (exact) n = r;
      } else {
        n = unscaled * pow10(scale);
      }
      if (n === undefined) {
        format = 'DecimalSI'; // not an integer: BinarySI would round, so show it in DecimalSI
      } else {
        // int64 form: removeInt64Factors cannot negate -2^63, so no factor of 1024 is taken out.
        if (!arbitrary && unscaled === MIN_INT64 && scale === 0) return [MIN_INT64.toString(), ''];
        const mag = absBig(n);
        const lowBit = mag & -mag;
        const trailingZeroBits = lowBit.toString(2).length - 1;
        const power = Math.floor(trailingZeroBits / 10);
        const mantissa = n / (1n << BigInt(power * 10));
        return [mantissa.toString(), BINARY_SUFFIX_BY_POWER[power] ?? ''];
      }
    }
  }
  let [m, e] = stripTens(unscaled, scale);
  const r = ((e % 3) + 3) % 3;
  if (r !== 0) {
    m *= r === 1 ? 10n : 100n;
    e -= r;
  }
  if (format === 'DecimalSI') return [m.toString(), DECIMAL_SUFFIX_BY_EXPONENT.get(e) ?? ''];
  return [m.toString(), e === 0 ? '' : `e${e}`];
}

/** The exact value as a plain decimal (`-1.5`, `1073741824`), no exponent, no trailing fraction zeros. */
export function toDecimalString(unscaled: bigint, scale: number): string {
  if (unscaled === 0n) return '0';
  const [m, e] = stripTens(unscaled, scale);
  const sign = m < 0n ? '-' : '';
  const digits = absBig(m).toString();
  if (e >= 0) {
    if (e > MAX_EXPONENT_SPAN) throw new RangeError(`quantity too large to write out in full (10^${e})`);
    return sign + digits + '0'.repeat(e);
  }
  const frac = -e;
  if (frac > MAX_EXPONENT_SPAN) throw new RangeError(`quantity too small to write out in full (10^${e})`);
  const padded = digits.padStart(frac + 1, '0');
  return `${sign}${padded.slice(0, padded.length - frac)}.${padded.slice(padded.length - frac)}`;
}

// Go's math.Pow10: products and quotients of tabulated powers (not always the nearest double).
const POW10_TAB = Array.from({ length: 32 }, (_, i) => Number(`1e${i}`));
const POW10_POS32 = Array.from({ length: 10 }, (_, i) => Number(`1e${i * 32}`));
const POW10_NEG32 = Array.from({ length: 11 }, (_, i) => Number(`1e-${i * 32}`));
export function goPow10(n: number): number {
  if (n >= 0 && n <= 308) return POW10_POS32[Math.floor(n / 32)]! * POW10_TAB[n % 32]!;
  if (n < 0 && n >= -323) return POW10_NEG32[Math.floor(-n / 32)]! / POW10_TAB[-n % 32]!;
  return n > 0 ? Number.POSITIVE_INFINITY : 0;
}
