/**
 * ParseQuantity (apimachinery's quantity.go and suffix.go): the scanner, the suffix tables and the
 * choice between the int64 fast path and arbitrary precision, as released in the Kubernetes version
 * src/quantity/quantity.ts names. Returns the parts a Quantity is made of; no floating point.
 */
import { divPow10Away, fitsInt64, int32, MAX_INT64, negNum, pow10 } from './amount.js';
import type { QuantityParts } from './format.js';
import { interpretSuffix, type QuantityFormat } from './suffix.js';

export type QuantityErrorReason = 'format' | 'suffix' | 'numeric' | 'range' | 'type';

/** The regular expression apimachinery quotes in its parse error (its scanner implements it). */
const QUANTITY_REGEX_STRING = '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$';

export class QuantityError extends Error {
  override readonly name = 'QuantityError';
  constructor(
    message: string,
    /** The input as given (a number is shown as its decimal string). */
    readonly input: string,
    /**
     * format: no match for the quantity syntax; suffix: unknown suffix; numeric: no digits; range: too large to
     * compute; type: neither a string nor a finite number.
     */
    readonly reason: QuantityErrorReason,
  ) {
    super(message);
  }
}

const ALLOWED_SUFFIXES =
  'allowed suffixes are n, u, m, k, M, G, T, P, E (decimal SI), Ki, Mi, Gi, Ti, Pi, Ei (binary SI), or e/E ' +
  'followed by an integer exponent (e.g. 500m, 2, 1.5Gi, 1e3)';

function formatError(input: string): QuantityError {
  return new QuantityError(
    `quantity ${JSON.stringify(input)} is not valid: must match the regular expression '${QUANTITY_REGEX_STRING}'`,
    input,
    'format',
  );
}

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
export const GO_TRIM = new RegExp(`^[${GO_SPACE}]+|[${GO_SPACE}]+$`, 'g');

export function normalizeFormat(format: string | undefined): QuantityFormat {
  // apimachinery prints any unknown Format as DecimalExponent.
  return format === 'DecimalSI' || format === 'BinarySI' || format === 'DecimalExponent' ? format : 'DecimalExponent';
}

export function toInt64(value: bigint | number, what: string): bigint {
  let v: bigint;
  if (typeof value === 'bigint') v = value;
  else if (Number.isSafeInteger(value)) v = BigInt(value);
  else throw new RangeError(`${what} must be an integer (a safe integer number or a bigint), got ${String(value)}`);
  if (!fitsInt64(v)) throw new RangeError(`${what} must fit an int64, got ${v}`);
  return v;
}

export function parseQuantityString(str: string): QuantityParts {
  if (str.length === 0) throw formatError(str);
  if (str === '0') return { unscaled: 0n, scale: 0, arbitrary: false, format: 'DecimalSI', parsedAs: '0' };

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
        return { unscaled: result, scale, arbitrary: false, format: suffix.format, parsedAs: cached };
      }
    }
  }

  // Slow path: arbitrary precision, rounded up to nano; BinarySI capped at 2^63-1.
  const unsigned = sc.value.replace(/^[+-]/, '');
  const dot = unsigned.indexOf('.');
  const intDigits = dot < 0 ? unsigned : unsigned.slice(0, dot);
  const fracDigits = dot < 0 ? '' : unsigned.slice(dot + 1);
  if (intDigits.length + fracDigits.length === 0) {
    throw new QuantityError(
      `quantity ${JSON.stringify(str)} is not valid: the number has no digits (e.g. 1, 0.5, .5)`,
      str,
      'numeric',
    );
  }
  let mag = BigInt(intDigits + fracDigits);
  let infScale = fracDigits.length; // digits after the point: value = mag / 10^infScale
  if (suffix.base === 10) infScale = int32(infScale + int32(-suffix.exponent));
  else mag <<= BigInt(suffix.exponent);

  if (mag !== 0n) {
    if (infScale <= 9) {
      mag *= pow10(9 - infScale); // RangeError past MAX_EXPONENT_SPAN: the caller reports it
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
  return { unscaled: sc.positive ? mag : -mag, scale: negNum(infScale), arbitrary: true, format };
}
