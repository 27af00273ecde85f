/** apimachinery's suffixes (suffix.go): decimal SI, binary SI and decimal exponents, and the Format each implies. */
import { fitsInt64 } from './amount.js';

export type QuantityFormat = 'DecimalSI' | 'BinarySI' | 'DecimalExponent';

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
export const DECIMAL_SUFFIX_BY_EXPONENT: ReadonlyMap<number, string> = new Map(
  [...DECIMAL_SUFFIXES].map(([k, v]) => [v, k]),
);
const BINARY_SUFFIXES: ReadonlyMap<string, number> = new Map([
  ['Ki', 10],
  ['Mi', 20],
  ['Gi', 30],
  ['Ti', 40],
  ['Pi', 50],
  ['Ei', 60],
]);
/** Index: power of 1024. Go has no BinarySI suffix for 1024^0 nor past Ei; the number prints bare. */
export const BINARY_SUFFIX_BY_POWER = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];

export interface Interpreted {
  base: 10 | 2;
  exponent: number;
  format: QuantityFormat;
}

export function interpretSuffix(s: string): Interpreted | undefined {
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
