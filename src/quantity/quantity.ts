/**
 * Exact Kubernetes `resource.Quantity` (k8s.io/apimachinery/pkg/api/resource), as released in
 * Kubernetes v1.35 to v1.37 (the versions our control planes pin; parse and String() are unchanged from v1.30
 * to v1.37.2). Checked row by row against apimachinery's test tables, and differentially against v0.35.4 itself.
 *
 * No floating point is used to parse, add, subtract, multiply, compare or print: a value is an
 * unscaled BigInt times 10^scale. Besides the value and the Format, a Quantity remembers which of
 * apimachinery's two internal forms the value would be in (the int64 fast path `int64Amount`, or the
 * arbitrary-precision `inf.Dec`), and keeps the same unscaled/scale pair apimachinery keeps. That
 * only matters in corner cases where released apimachinery depends on it:
 *
 * - Neg/Sub of an int64-form value equal to -2^63 wrap (the result stays -2^63);
 * - an int64-form BinarySI value of exactly -2^63 prints as "-9223372036854775808", not "-8Ei";
 * - `AsInt64` and the `ok` of `Mul` report on the representation, not on the value.
 *
 * Printing follows released CanonicalizeBytes, including where it loses the magnitude: a DecimalSI
 * value whose canonical exponent is above E (10^18) or below n (10^-9), and a BinarySI value past
 * Ei, print their mantissa without a suffix (`1000E` prints `1`). Kubernetes' development line changes that
 * (kubernetes/kubernetes#140459); the released v1.35.4 and v1.37.2 do not.
 *
 * Materialising 10^k for k beyond MAX_EXPONENT_SPAN (amount.ts) throws (a `QuantityError` from parse, a
 * `RangeError` from arithmetic) instead of allocating without bound; apimachinery would try.
 */

import {
  cmpAmount,
  decAdd,
  digitCount,
  divPow10Away,
  fitsInt64,
  int64AmountAdd,
  int64AmountMul,
  MAX_EXPONENT_SPAN,
  MAX_INT64,
  MAX_SAFE,
  pow10,
  positiveScaleInt64,
  signBig,
  type Amount,
} from './amount.js';
import { canonicalize, goPow10, toDecimalString } from './format.js';
import { GO_TRIM, normalizeFormat, parseQuantityString, QuantityError, toInt64 } from './parse.js';
import type { QuantityFormat } from './suffix.js';

export { QuantityError } from './parse.js';
export type { QuantityFormat } from './suffix.js';

/**
 * Quantities parsed from strings, by string: values are immutable, and a cluster's quotas repeat a
 * few strings ("4", "8Gi", "40") in every request and cache event. Bounded (cleared when full); only
 * valid inputs are kept.
 */
const PARSED = new Map<string, Quantity>();
const PARSED_MAX_ENTRIES = 4096;
const PARSED_MAX_LENGTH = 64;

export class Quantity {
  readonly format: QuantityFormat;
  /** Unscaled value; the value is unscaled * 10^scale. */
  private readonly unscaled: bigint;
  private readonly scale: number;
  /** True when apimachinery would hold this value as inf.Dec rather than int64Amount. */
  private readonly arbitrary: boolean;
  /** The parsed string when apimachinery caches it as the value's String() (see toApiString). */
  private readonly parsedAs: string | undefined;

  private constructor(unscaled: bigint, scale: number, arbitrary: boolean, format: QuantityFormat, parsedAs?: string) {
    this.unscaled = unscaled;
    this.scale = scale === 0 ? 0 : scale;
    this.arbitrary = arbitrary;
    this.format = format;
    this.parsedAs = parsedAs;
    // Immutable by its readonly, private fields; not Object.freeze'd: freezing cost ≈ 50 ns per value,
    // more than the arithmetic itself, and the rules make dozens of values per decision (ADR 0004).
  }

  // --- construction -------------------------------------------------------------------------

  /**
   * ParseQuantity. A number is taken as Kubernetes takes a JSON number, through its shortest
   * decimal form (`20`, `0.5`, `1e+21`); a JSON text with more digits than a double holds has
   * already lost them, so prefer {@link Quantity.fromJSON} on the raw text when that matters.
   */
  static parse(input: string | number): Quantity {
    if (typeof input === 'number') {
      if (!Number.isFinite(input)) {
        throw new QuantityError(
          `quantity ${String(input)} is not valid: a number must be finite`,
          String(input),
          'type',
        );
      }
      return Quantity.parseString(String(input));
    }
    if (typeof input !== 'string') {
      throw new QuantityError(`a quantity must be a string or a number, not ${describe(input)}`, String(input), 'type');
    }
    return Quantity.parseString(input);
  }

  /** parse, or undefined for anything that is not a valid quantity string or finite number. */
  static tryParse(input: unknown): Quantity | undefined {
    if (typeof input !== 'string' && typeof input !== 'number') return undefined;
    try {
      return Quantity.parse(input);
    } catch (e) {
      if (e instanceof QuantityError) return undefined;
      throw e;
    }
  }

  /** The zero quantity (Go's `Quantity{Format: format}`). */
  static zero(format: QuantityFormat = 'DecimalSI'): Quantity {
    return new Quantity(0n, 0, false, normalizeFormat(format));
  }

  // --- arithmetic ---------------------------------------------------------------------------

  private get amount(): Amount {
    return { u: this.unscaled, s: this.scale };
  }

  /** this + other. The result keeps this Format, or takes other's when this is zero. */
  add(other: Quantity): Quantity {
    // The common case (two int64 amounts of the same scale, e.g. summing "4" and "8", or "8Gi" and
    // "2Gi") without int64AmountAdd's intermediate objects; the result is the same.
    if (!this.arbitrary && !other.arbitrary && this.scale === other.scale) {
      const sum = this.unscaled + other.unscaled;
      if (fitsInt64(sum))
        return new Quantity(sum, this.scale, false, this.unscaled === 0n ? other.format : this.format);
    }
    let format = this.format;
    if (!this.arbitrary && !other.arbitrary) {
      if (this.unscaled === 0n) format = other.format;
      const r = int64AmountAdd(this.amount, other.amount);
      if (r) return new Quantity(r.u, r.s, false, format);
    } else if (this.isZero()) {
      format = other.format;
    }
    const r = decAdd(this.amount, other.amount);
    return new Quantity(r.u, r.s, true, format);
  }

  /**
   * terms[0].add(terms[1]).add(…), left to right: the same value, Format and form, built without
   * the intermediate quantities when every term is an int64-form value of one scale and every
   * partial sum is a safe integer (a quota list's "4", "8", "40" are). One term is returned as it is.
   */
  static addAll(terms: readonly Quantity[]): Quantity {
    const first = terms[0];
    if (first === undefined) throw new RangeError('addAll needs at least one term');
    if (terms.length === 1) return first;
    const { scale } = first;
    let total = 0;
    let format = first.format;
    let exact = true;
    for (let i = 0; exact && i < terms.length; i++) {
      const term = terms[i]!;
      if (term.arbitrary || term.scale !== scale) exact = false;
      else {
        // add(): a zero running total takes the next term's Format.
        if (i > 0 && total === 0) format = term.format;
        total += Number(term.unscaled);
        exact = Number.isSafeInteger(total) && term.unscaled <= MAX_SAFE && term.unscaled >= -MAX_SAFE;
      }
    }
    if (exact) return new Quantity(BigInt(total), scale, false, format);
    let sum = first;
    for (let i = 1; i < terms.length; i++) sum = sum.add(terms[i]!);
    return sum;
  }

  /** this - other. The result keeps this Format, or takes other's when this is zero. */
  sub(other: Quantity): Quantity {
    const format = this.isZero() ? other.format : this.format;
    if (!this.arbitrary && !other.arbitrary) {
      // int64Amount.Sub adds -b.value, which wraps for -2^63 (fixed only after v1.36).
      const negated = BigInt.asIntN(64, -other.unscaled);
      const r = int64AmountAdd(this.amount, { u: negated, s: other.scale });
      if (r) return new Quantity(r.u, r.s, false, format);
    }
    const r = decAdd(this.amount, { u: -other.unscaled, s: other.scale });
    return new Quantity(r.u, r.s, true, format);
  }

  /** this * y for an int64 y (Quantity.Mul). */
  mul(y: bigint | number): Quantity {
    return this.mulChecked(y).quantity;
  }

  cmp(other: Quantity): -1 | 0 | 1 {
    return cmpAmount(this.amount, other.amount);
  }

  equals(other: Quantity): boolean {
    return this.cmp(other) === 0;
  }

  isZero(): boolean {
    return this.unscaled === 0n;
  }

  sign(): -1 | 0 | 1 {
    return signBig(this.unscaled);
  }

  // --- reading -----------------------------------------------------------------------------

  /**
   * AsApproximateFloat64: float64(unscaled) * math.Pow10(scale), as Go computes it. Not used by any exact operation.
   */
  asApproximateFloat64(): number {
    const base = Number(this.unscaled);
    if (this.scale === 0) return base;
    return base * goPow10(this.scale);
  }

  /** AsFloat64Slow: the value correctly rounded to a double. */
  asFloat64Slow(): number {
    return Number(this.toDecimalString());
  }

  /** The exact value as a plain decimal (`-1.5`, `1073741824`), no exponent, no trailing fraction zeros. */
  toDecimalString(): string {
    return toDecimalString(this.unscaled, this.scale);
  }

  // --- printing -----------------------------------------------------------------------------

  /** apimachinery's canonical String() (CanonicalizeBytes of released Kubernetes, see the module doc). */
  toString(): string {
    const [number, suffix] = canonicalize({
      unscaled: this.unscaled,
      scale: this.scale,
      arbitrary: this.arbitrary,
      format: this.format,
    });
    return number + suffix;
  }

  toJSON(): string {
    return this.toString();
  }

  // --- apimachinery's wider API, for the conformance tests only ------------------------------
  // Not on any production path: test/unit/quantity.conformance.test.ts checks this implementation
  // row by row against apimachinery's own test tables, which exercise these constructors, rounding,
  // int64 views and the exact-string form. tenantgate's rules use parse, add/sub/addAll, cmp, sign,
  // mul (through signOfSum), toString, asApproximateFloat64 and asFloat64Slow (the controller's metrics).

  /**
   * Quantity.UnmarshalJSON on a raw JSON text: `null` is zero (DecimalSI here; Go leaves the Format
   * empty, which prints and adds the same); a string loses its quotes (escapes are not decoded, as in
   * Go) and surrounding whitespace; a number is parsed as written.
   */
  static fromJSON(raw: string): Quantity {
    let decoded: unknown;
    try {
      decoded = JSON.parse(raw);
    } catch {
      throw new QuantityError(`quantity JSON ${JSON.stringify(raw)} is not valid JSON`, raw, 'type');
    }
    if (decoded === null) return Quantity.zero();
    if (typeof decoded !== 'string' && typeof decoded !== 'number') {
      throw new QuantityError(`a quantity must be a JSON string or number, not ${describe(decoded)}`, raw, 'type');
    }
    let value = raw.replace(/^[ \t\n\r]+|[ \t\n\r]+$/g, '');
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    return Quantity.parseString(value.replace(GO_TRIM, ''));
  }

  /** NewQuantity(value, format): value must fit an int64. */
  static fromInt(value: bigint | number, format: QuantityFormat = 'DecimalSI'): Quantity {
    return Quantity.fromScaled(value, 0, format);
  }

  /** NewMilliQuantity(value, format): value / 1000. */
  static fromMilli(value: bigint | number, format: QuantityFormat = 'DecimalSI'): Quantity {
    return Quantity.fromScaled(value, -3, format);
  }

  /**
   * NewScaledQuantity(value, scale) (value * 10^scale, DecimalSI), with an optional Format as
   * apimachinery's int64 form allows. value must fit an int64. An unknown format prints as DecimalExponent.
   */
  static fromScaled(value: bigint | number, scale: number, format: QuantityFormat = 'DecimalSI'): Quantity {
    if (!Number.isSafeInteger(scale)) throw new RangeError(`scale must be an integer, got ${scale}`);
    return new Quantity(toInt64(value, 'value'), scale, false, normalizeFormat(format));
  }

  /** NewDecimalQuantity: unscaled * 10^scale of any size, held in arbitrary precision like inf.Dec. */
  static fromDecimal(unscaled: bigint, scale: number, format: QuantityFormat = 'DecimalSI'): Quantity {
    if (!Number.isSafeInteger(scale)) throw new RangeError(`scale must be an integer, got ${scale}`);
    return new Quantity(unscaled, scale, true, normalizeFormat(format));
  }

  /** The same value with another Format (Go lets callers set `q.Format`). */
  withFormat(format: QuantityFormat): Quantity {
    return new Quantity(this.unscaled, this.scale, this.arbitrary, normalizeFormat(format));
  }

  /** -this (an int64-form -2^63 stays -2^63, as in released apimachinery). */
  neg(): Quantity {
    if (!this.arbitrary) return new Quantity(BigInt.asIntN(64, -this.unscaled), this.scale, false, this.format);
    return new Quantity(-this.unscaled, this.scale, true, this.format);
  }

  /**
   * Quantity.Mul with its result: ok is false when the int64 fast path overflowed and the product's
   * unscaled value does not fit an int64 (the product itself is always exact).
   */
  mulChecked(y: bigint | number): { quantity: Quantity; ok: boolean } {
    const b = toInt64(y, 'multiplier');
    if (!this.arbitrary) {
      const r = int64AmountMul(this.amount, b);
      if (r) return { quantity: new Quantity(r.u, r.s, false, this.format), ok: true };
    }
    const u = this.unscaled * b;
    return { quantity: new Quantity(u, this.scale, true, this.format), ok: fitsInt64(u) };
  }

  /**
   * RoundUp(scale): the value rounded away from zero to a multiple of 10^scale, and whether that
   * kept it exact.
   */
  roundUp(scale: number): { quantity: Quantity; exact: boolean } {
    if (!Number.isSafeInteger(scale)) throw new RangeError(`scale must be an integer, got ${scale}`);
    if (!this.arbitrary) {
      if (this.scale >= scale) return { quantity: this, exact: true };
      const [u, exact] = divPow10Away(this.unscaled, scale - this.scale);
      return { quantity: new Quantity(u, scale, false, this.format), exact };
    }
    if (scale <= this.scale) {
      const u = this.unscaled === 0n ? 0n : this.unscaled * pow10(this.scale - scale);
      return { quantity: new Quantity(u, scale, true, this.format), exact: true };
    }
    const [u, exact] = divPow10Away(this.unscaled, scale - this.scale);
    return { quantity: new Quantity(u, scale, true, this.format), exact };
  }

  /** AsInt64: the value when apimachinery can give it as an int64 without conversion, else undefined. */
  asInt64(): bigint | undefined {
    if (this.arbitrary) return undefined;
    if (this.scale < 0) return undefined;
    return positiveScaleInt64(this.unscaled, this.scale);
  }

  /**
   * ScaledValue(scale): ceil(value / 10^scale) as apimachinery rounds it (away from zero on the
   * int64 form; on the inf.Dec form a negative fraction rounds toward +inf, or to one above the
   * truncation for small values, as in scale_int.go). Exact, where Go's int64 would overflow.
   */
  scaledValue(scale: number): bigint {
    if (!Number.isSafeInteger(scale)) throw new RangeError(`scale must be an integer, got ${scale}`);
    const u = this.unscaled;
    if (!this.arbitrary) {
      if (this.scale < scale) return divPow10Away(u, scale - this.scale)[0];
      return u === 0n ? 0n : u * pow10(this.scale - scale);
    }
    const dif = scale - this.scale;
    if (dif === 0) return u;
    if (dif < 0) return u === 0n ? 0n : u * pow10(-dif);
    if (u < MAX_INT64 && dif < 19) {
      const d = pow10(dif);
      const q = u / d;
      return u % d !== 0n ? q + 1n : q;
    }
    if (dif > digitCount(u) + 1) return u > 0n ? 1n : u < 0n ? 0n : 0n;
    const d = pow10(dif);
    let q = u / d;
    let r = u % d;
    if (r < 0n) {
      q -= 1n;
      r += d;
    }
    return r !== 0n ? q + 1n : q;
  }

  /** Value(): ceil to an integer (see scaledValue). */
  value(): bigint {
    return this.scaledValue(0);
  }

  /** MilliValue(): ceil(value * 1000) (see scaledValue). */
  milliValue(): bigint {
    return this.scaledValue(-3);
  }

  /**
   * Exactly what apimachinery's String()/MarshalJSON return for this Quantity: the canonical form,
   * except that a string parsed on the int64 fast path and judged canonical by its cheap heuristic
   * is kept as written (`+1`, `05`, `1E3` stay so), as the API server would store it.
   */
  toApiString(): string {
    return this.parsedAs ?? this.toString();
  }

  /** ParseQuantity; an input too large to compute exactly is a QuantityError (reason 'range'). */
  private static parseString(str: string): Quantity {
    const known = PARSED.get(str);
    if (known) return known;
    try {
      const p = parseQuantityString(str);
      const parsed = new Quantity(p.unscaled, p.scale, p.arbitrary, p.format, p.parsedAs);
      if (str.length <= PARSED_MAX_LENGTH) {
        if (PARSED.size >= PARSED_MAX_ENTRIES) PARSED.clear();
        PARSED.set(str, parsed);
      }
      return parsed;
    } catch (e) {
      if (e instanceof RangeError) {
        const shown = JSON.stringify(str.length > 64 ? `${str.slice(0, 60)}...` : str);
        throw new QuantityError(
          `quantity ${shown} is too large to compute exactly (beyond 10^${MAX_EXPONENT_SPAN})`,
          str,
          'range',
        );
      }
      throw e;
    }
  }
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}
