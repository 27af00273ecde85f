/**
 * Exact Kubernetes `resource.Quantity` (k8s.io/apimachinery/pkg/api/resource), as released in
 * Kubernetes v1.35 (the version our control plane pins; parse and String() are unchanged from v1.30).
 * Checked row by row against apimachinery's test tables, and differentially against v0.35.4 itself.
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
 * Ei, print their mantissa without a suffix (`1000E` prints `1`). Kubernetes 1.37 changes that
 * (kubernetes/kubernetes#140459); v1.35.4 does not.
 *
 * Materialising 10^k for k beyond {@link MAX_EXPONENT_SPAN} throws (a `QuantityError` from parse, a
 * `RangeError` from arithmetic) instead of allocating without bound; apimachinery would try.
 */

export type QuantityFormat = 'DecimalSI' | 'BinarySI' | 'DecimalExponent';

export type QuantityErrorReason = 'format' | 'suffix' | 'numeric' | 'range' | 'type';

/** The regular expression apimachinery quotes in its parse error (its scanner implements it). */
export const QUANTITY_REGEX_STRING = '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$';

/** Largest power of ten this implementation materialises as a BigInt (digits). */
export const MAX_EXPONENT_SPAN = 100_000;

export class QuantityError extends Error {
  override readonly name = 'QuantityError';
  constructor(
    message: string,
    /** The input as given (a number is shown as its decimal string). */
    readonly input: string,
    /** format: no match for the quantity syntax; suffix: unknown suffix; numeric: no digits; range: too large to compute; type: neither a string nor a finite number. */
    readonly reason: QuantityErrorReason,
  ) {
    super(message);
  }
}

const ALLOWED_SUFFIXES =
  'allowed suffixes are n, u, m, k, M, G, T, P, E (decimal SI), Ki, Mi, Gi, Ti, Pi, Ei (binary SI), or e/E followed by an integer exponent (e.g. 500m, 2, 1.5Gi, 1e3)';

function formatError(input: string): QuantityError {
  return new QuantityError(
    `quantity ${JSON.stringify(input)} is not valid: must match the regular expression '${QUANTITY_REGEX_STRING}'`,
    input,
    'format',
  );
}

// ---------------------------------------------------------------------------------------------
// BigInt helpers

const MIN_INT64 = -(1n << 63n);
const MAX_INT64 = (1n << 63n) - 1n;

const fitsInt64 = (v: bigint): boolean => v >= MIN_INT64 && v <= MAX_INT64;
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const absBig = (v: bigint): bigint => (v < 0n ? -v : v);
const signBig = (v: bigint): -1 | 0 | 1 => (v > 0n ? 1 : v < 0n ? -1 : 0);
/** -x without producing -0. */
const negNum = (x: number): number => (x === 0 ? 0 : -x);
/** Go int32 arithmetic wrap-around. */
const int32 = (x: number): number => x | 0;

const POW10_CACHE: bigint[] = [1n];
function pow10(k: number): bigint {
  if (!Number.isSafeInteger(k) || k < 0) throw new RangeError(`internal error: 10^${k}`);
  if (k > MAX_EXPONENT_SPAN) {
    throw new RangeError(
      `quantity arithmetic would need 10^${k}, beyond the supported span of 10^${MAX_EXPONENT_SPAN}: the operands' magnitudes are too far apart`,
    );
  }
  if (k < 64) {
    for (let i = POW10_CACHE.length; i <= k; i++) POW10_CACHE.push(POW10_CACHE[i - 1]! * 10n);
    return POW10_CACHE[k]!;
  }
  return 10n ** BigInt(k);
}

function digitCount(v: bigint): number {
  return absBig(v).toString().length;
}

/** Removes factors of ten from u (u != 0): u*10^s == m*10^e. */
function stripTens(u: bigint, s: number): [bigint, number] {
  const str = absBig(u).toString();
  let z = 0;
  while (z < str.length - 1 && str[str.length - 1 - z] === '0') z++;
  if (z === 0) return [u, s];
  const m = BigInt(str.slice(0, str.length - z));
  return [u < 0n ? -m : m, s + z];
}

/** Rounds |v| / 10^k away from zero (k >= 0); returns the quotient and whether it was exact. */
function divPow10Away(v: bigint, k: number): [bigint, boolean] {
  if (k === 0 || v === 0n) return [v, true];
  const str = absBig(v).toString();
  if (k >= str.length) return [BigInt(signBig(v)), false];
  // Truncate the last k digits (no power of ten needed), then round away from zero.
  const head = BigInt(str.slice(0, str.length - k));
  const exact = /^0*$/.test(str.slice(str.length - k));
  const q = exact ? head : head + 1n;
  return [v < 0n ? -q : q, exact];
}

interface Amount {
  u: bigint;
  s: number;
}

/** Scale gaps up to this are aligned by multiplying (10^36 is a small BigInt); wider ones compare digit counts first. */
const ALIGN_DIRECTLY = 36;
const cmpBig = (x: bigint, y: bigint): -1 | 0 | 1 => (x === y ? 0 : x > y ? 1 : -1);

/** Exact comparison of u1*10^s1 and u2*10^s2 without materialising far-apart scales. */
function cmpAmount(a: Amount, b: Amount): -1 | 0 | 1 {
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

// --- apimachinery's int64Amount fast path (math.go / amount.go), returning undefined where Go returns false.

function int64Add(a: bigint, b: bigint): bigint | undefined {
  const c = a + b;
  return fitsInt64(c) ? c : undefined;
}

/** base * 10^k if it fits an int64 (k >= 0). */
function positiveScaleInt64(base: bigint, k: number): bigint | undefined {
  if (base === 0n || k === 0) return base;
  if (k > 19) return undefined;
  const c = base * pow10(k);
  return fitsInt64(c) ? c : undefined;
}

function int64AmountAdd(a: Amount, b: Amount): Amount | undefined {
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

function int64AmountMul(a: Amount, b: bigint): Amount | undefined {
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
function decAdd(a: Amount, b: Amount): Amount {
  const s = Math.min(a.s, b.s);
  const x = a.u === 0n ? 0n : a.u * pow10(a.s - s);
  const y = b.u === 0n ? 0n : b.u * pow10(b.s - s);
  return { u: x + y, s };
}

// ---------------------------------------------------------------------------------------------
// Suffixes (suffix.go)

const DECIMAL_SUFFIXES: ReadonlyMap<string, number> = new Map([
  ['n', -9],
  ['u', -6],
  ['m', -3],
  ['', 0],
  ['k', 3],
  ['M', 6],
  ['G', 9],
  ['T', 12],
  ['P', 15],
  ['E', 18],
]);
const DECIMAL_SUFFIX_BY_EXPONENT: ReadonlyMap<number, string> = new Map([...DECIMAL_SUFFIXES].map(([k, v]) => [v, k]));
const BINARY_SUFFIXES: ReadonlyMap<string, number> = new Map([
  ['Ki', 10],
  ['Mi', 20],
  ['Gi', 30],
  ['Ti', 40],
  ['Pi', 50],
  ['Ei', 60],
]);
/** Index: power of 1024. Go has no BinarySI suffix for 1024^0 nor past Ei; the number prints bare. */
const BINARY_SUFFIX_BY_POWER = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];

interface Interpreted {
  base: 10 | 2;
  exponent: number;
  format: QuantityFormat;
}

function interpretSuffix(s: string): Interpreted | undefined {
  const dec = DECIMAL_SUFFIXES.get(s);
  if (dec !== undefined) return { base: 10, exponent: dec, format: 'DecimalSI' };
  const bin = BINARY_SUFFIXES.get(s);
  if (bin !== undefined) return { base: 2, exponent: bin, format: 'BinarySI' };
  if (s.length > 1 && (s[0] === 'e' || s[0] === 'E')) {
    // strconv.ParseInt(s[1:], 10, 64), then int32(...) which wraps.
    const digits = s.slice(1);
    if (!/^[+-]?[0-9]+$/.test(digits)) return undefined;
    const parsed = BigInt(digits);
    if (!fitsInt64(parsed)) return undefined;
    return { base: 10, exponent: Number(BigInt.asIntN(32, parsed)), format: 'DecimalExponent' };
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Scanner (parseQuantityString)

interface Scanned {
  positive: boolean;
  /** Sign, digits and decimal point as written (what apimachinery hands to inf.Dec). */
  value: string;
  /** Integer digits without leading zeros ("0" when there are none). */
  num: string;
  /** Fraction digits. */
  denom: string;
  suffix: string;
}

const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';
const SUFFIX_CHARS = 'eEinumkKMGTP';

function scan(str: string): Scanned {
  let positive = true;
  let pos = 0;
  const end = str.length;
  if (str[0] === '-') {
    positive = false;
    pos++;
  } else if (str[0] === '+') {
    pos++;
  }
  // leading zeros
  while (true) {
    if (pos >= end) return { positive, value: '0', num: '0', denom: '', suffix: '' };
    if (str[pos] !== '0') break;
    pos++;
  }
  // numerator
  let i = pos;
  while (i < end && isDigit(str[i])) i++;
  if (i >= end) return { positive, value: str, num: str.slice(pos), denom: '', suffix: '' };
  let num = str.slice(pos, i);
  pos = i;
  if (num.length === 0) num = '0';
  // denominator
  let denom = '';
  if (str[pos] === '.') {
    pos++;
    let j = pos;
    while (j < end && isDigit(str[j])) j++;
    if (j >= end) return { positive, value: str, num, denom: str.slice(pos), suffix: '' };
    denom = str.slice(pos, j);
    pos = j;
  }
  const value = str.slice(0, pos);
  // suffix: [eEinumkKMGTP]* [-+]? [0-9]*, to the end
  const suffixStart = pos;
  let k = pos;
  while (k < end && SUFFIX_CHARS.includes(str[k]!)) k++;
  if (k >= end) return { positive, value, num, denom, suffix: str.slice(suffixStart) };
  pos = k;
  if (str[pos] === '-' || str[pos] === '+') pos++;
  let m = pos;
  while (m < end && isDigit(str[m])) m++;
  if (m >= end) return { positive, value, num, denom, suffix: str.slice(suffixStart) };
  throw formatError(str);
}

/** Go strings.TrimSpace (unicode.IsSpace). */
const GO_SPACE = '\\t\\n\\v\\f\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000';
const GO_TRIM = new RegExp(`^[${GO_SPACE}]+|[${GO_SPACE}]+$`, 'g');

function normalizeFormat(format: string | undefined): QuantityFormat {
  // apimachinery prints any unknown Format as DecimalExponent.
  return format === 'DecimalSI' || format === 'BinarySI' || format === 'DecimalExponent' ? format : 'DecimalExponent';
}

function toInt64(value: bigint | number, what: string): bigint {
  let v: bigint;
  if (typeof value === 'bigint') v = value;
  else if (Number.isSafeInteger(value)) v = BigInt(value);
  else throw new RangeError(`${what} must be an integer (a safe integer number or a bigint), got ${String(value)}`);
  if (!fitsInt64(v)) throw new RangeError(`${what} must fit an int64, got ${v}`);
  return v;
}

// ---------------------------------------------------------------------------------------------

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
    // more than the arithmetic itself, and the rules make dozens of values per decision (ADR 0017).
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
        throw new QuantityError(`quantity ${String(input)} is not valid: a number must be finite`, String(input), 'type');
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

  /** The zero quantity (Go's `Quantity{Format: format}`). */
  static zero(format: QuantityFormat = 'DecimalSI'): Quantity {
    return new Quantity(0n, 0, false, normalizeFormat(format));
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
      if (fitsInt64(sum)) return new Quantity(sum, this.scale, false, this.unscaled === 0n ? other.format : this.format);
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

  /** -this (an int64-form -2^63 stays -2^63, as in released apimachinery). */
  neg(): Quantity {
    if (!this.arbitrary) return new Quantity(BigInt.asIntN(64, -this.unscaled), this.scale, false, this.format);
    return new Quantity(-this.unscaled, this.scale, true, this.format);
  }

  /** this * y for an int64 y (Quantity.Mul). */
  mul(y: bigint | number): Quantity {
    return this.mulChecked(y).quantity;
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

  // --- accessors ----------------------------------------------------------------------------

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

  /** AsApproximateFloat64: float64(unscaled) * math.Pow10(scale), as Go computes it. Not used by any exact operation. */
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
    if (this.unscaled === 0n) return '0';
    const [m, e] = stripTens(this.unscaled, this.scale);
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

  // --- printing -----------------------------------------------------------------------------

  /** apimachinery's canonical String() (CanonicalizeBytes of released Kubernetes, see the module doc). */
  toString(): string {
    const [number, suffix] = this.canonicalize();
    return number + suffix;
  }

  toJSON(): string {
    return this.toString();
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
      const parsed = Quantity.parseUnchecked(str);
      if (str.length <= PARSED_MAX_LENGTH) {
        if (PARSED.size >= PARSED_MAX_ENTRIES) PARSED.clear();
        PARSED.set(str, parsed);
      }
      return parsed;
    } catch (e) {
      if (e instanceof RangeError) {
        const shown = JSON.stringify(str.length > 64 ? `${str.slice(0, 60)}...` : str);
        throw new QuantityError(`quantity ${shown} is too large to compute exactly (beyond 10^${MAX_EXPONENT_SPAN})`, str, 'range');
      }
      throw e;
    }
  }

  private static parseUnchecked(str: string): Quantity {
    if (str.length === 0) throw formatError(str);
    if (str === '0') return new Quantity(0n, 0, false, 'DecimalSI', '0');

    const sc = scan(str);
    const suffix = interpretSuffix(sc.suffix);
    if (!suffix) {
      throw new QuantityError(
        `quantity ${JSON.stringify(str)} is not valid: unknown suffix ${JSON.stringify(sc.suffix)}; ${ALLOWED_SUFFIXES}`,
        str,
        'suffix',
      );
    }

    // Fast path: the value fits an int64 at a scale of at least nano.
    let precision: number;
    let scale = 0;
    let mantissa = 1n;
    if (suffix.format === 'BinarySI') {
      if (suffix.exponent >= 0 && sc.denom.length === 0) {
        mantissa = 1n << BigInt(suffix.exponent);
        // 1Mi (2^20) has ~6 decimal digits: exponent*3/10 - 1 approximates the digits it uses.
        precision = 15 - sc.num.length - (suffix.exponent / 10) * 3 - 1;
      } else {
        precision = -1;
      }
    } else {
      scale = suffix.exponent;
      precision = 18 - (sc.num.length + sc.denom.length);
    }
    if (precision >= 0) {
      scale = int32(scale - sc.denom.length);
      if (scale >= -9) {
        const shifted = sc.num + sc.denom;
        const value = BigInt(shifted);
        const product = value * mantissa;
        if (product <= MAX_INT64) {
          const result = sc.positive ? product : -product;
          // apimachinery reuses the input as String() when a cheap test calls it canonical.
          let cached: string | undefined;
          if (suffix.format === 'BinarySI') {
            if (suffix.exponent % 10 === 0 && (value & 7n) !== 0n) cached = str;
          } else if (scale % 3 === 0 && !shifted.endsWith('000') && shifted[0] !== '0') {
            cached = str;
          }
          return new Quantity(result, scale, false, suffix.format, cached);
        }
      }
    }

    // Slow path: arbitrary precision, rounded up to nano; BinarySI capped at 2^63-1.
    const unsigned = sc.value.replace(/^[+-]/, '');
    const dot = unsigned.indexOf('.');
    const intDigits = dot < 0 ? unsigned : unsigned.slice(0, dot);
    const fracDigits = dot < 0 ? '' : unsigned.slice(dot + 1);
    if (intDigits.length + fracDigits.length === 0) {
      throw new QuantityError(`quantity ${JSON.stringify(str)} is not valid: the number has no digits (e.g. 1, 0.5, .5)`, str, 'numeric');
    }
    let mag = BigInt(intDigits + fracDigits);
    let infScale = fracDigits.length; // digits after the point: value = mag / 10^infScale
    if (suffix.base === 10) infScale = int32(infScale + int32(-suffix.exponent));
    else mag <<= BigInt(suffix.exponent);

    if (mag !== 0n) {
      if (infScale <= 9) {
        mag *= pow10(9 - infScale); // RangeError past MAX_EXPONENT_SPAN: reported by parseString
      } else {
        mag = divPow10Away(mag, infScale - 9)[0];
      }
      infScale = 9;
    }
    let format = suffix.format;
    if (format === 'BinarySI' && mag !== 0n) {
      if (mag > MAX_INT64 * 1_000_000_000n) {
        mag = MAX_INT64;
        infScale = 0;
      } else if (mag < 1_000_000_000n) {
        format = 'DecimalSI'; // 0 < |value| < 1: no binary suffix fits
      }
    }
    return new Quantity(sc.positive ? mag : -mag, negNum(infScale), true, format);
  }

  private canonicalize(): [string, string] {
    if (this.unscaled === 0n) return ['0', ''];
    let format = this.format;
    if (format === 'BinarySI') {
      const a = this.amount;
      if (cmpAmount(a, { u: -1024n, s: 0 }) > 0 && cmpAmount(a, { u: 1024n, s: 0 }) < 0) {
        format = 'DecimalSI';
      } else {
        let n: bigint | undefined;
        if (this.scale < 0) {
          const [r, exact] = divPow10Away(this.unscaled, -this.scale);
          if (exact) n = r;
        } else {
          n = this.unscaled * pow10(this.scale);
        }
        if (n === undefined) {
          format = 'DecimalSI'; // not an integer: BinarySI would round, so show it in DecimalSI
        } else {
          // int64 form: removeInt64Factors cannot negate -2^63, so no factor of 1024 is taken out.
          if (!this.arbitrary && this.unscaled === MIN_INT64 && this.scale === 0) return [MIN_INT64.toString(), ''];
          const mag = absBig(n);
          const lowBit = mag & -mag;
          const trailingZeroBits = lowBit.toString(2).length - 1;
          const power = Math.floor(trailingZeroBits / 10);
          const mantissa = n / (1n << BigInt(power * 10));
          return [mantissa.toString(), BINARY_SUFFIX_BY_POWER[power] ?? ''];
        }
      }
    }
    let [m, e] = stripTens(this.unscaled, this.scale);
    const r = ((e % 3) + 3) % 3;
    if (r !== 0) {
      m *= r === 1 ? 10n : 100n;
      e -= r;
    }
    if (format === 'DecimalSI') return [m.toString(), DECIMAL_SUFFIX_BY_EXPONENT.get(e) ?? ''];
    return [m.toString(), e === 0 ? '' : `e${e}`];
  }
}

// Go's math.Pow10: products and quotients of tabulated powers (not always the nearest double).
const POW10_TAB = Array.from({ length: 32 }, (_, i) => Number(`1e${i}`));
const POW10_POS32 = Array.from({ length: 10 }, (_, i) => Number(`1e${i * 32}`));
const POW10_NEG32 = Array.from({ length: 11 }, (_, i) => Number(`1e-${i * 32}`));
function goPow10(n: number): number {
  if (n >= 0 && n <= 308) return POW10_POS32[Math.floor(n / 32)]! * POW10_TAB[n % 32]!;
  if (n < 0 && n >= -323) return POW10_NEG32[Math.floor(-n / 32)]! / POW10_TAB[-n % 32]!;
  return n > 0 ? Number.POSITIVE_INFINITY : 0;
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

// ---------------------------------------------------------------------------------------------

/** The smaller of a and b (a when equal). */
export function min(a: Quantity, b: Quantity): Quantity {
  return a.cmp(b) <= 0 ? a : b;
}

/** The larger of a and b (a when equal). */
export function max(a: Quantity, b: Quantity): Quantity {
  return a.cmp(b) >= 0 ? a : b;
}

/**
 * Σ qs, added left to right onto `Quantity{Format: format}` with apimachinery's Add, so the running
 * total takes the Format of the next term whenever it is zero: `format` only survives when every
 * term is zero (or there is none).
 */
export function sumQuantities(qs: Iterable<Quantity>, format: QuantityFormat = 'DecimalSI'): Quantity {
  let total = Quantity.zero(format);
  for (const q of qs) total = total.add(q);
  return total;
}

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
