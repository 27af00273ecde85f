/**
 * Our own cases for src/quantity/ (the apimachinery tables are in
 * quantity.conformance.test.ts), and fast-check properties of the arithmetic and the order.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Quantity, QuantityError, type QuantityFormat } from '../../src/quantity/quantity.js';
import { signOfSum } from '../../src/quantity/sign-of-sum.js';

const q = (s: string | number): Quantity => Quantity.parse(s);

describe('parse and canonical String()', () => {
  const cases: Array<[input: string, canonical: string, format: QuantityFormat]> = [
    ['1.5Gi', '1536Mi', 'BinarySI'],
    ['0.5Gi', '512Mi', 'BinarySI'],
    ['1024Ki', '1Mi', 'BinarySI'],
    ['2048Mi', '2Gi', 'BinarySI'],
    ['1Gi', '1Gi', 'BinarySI'],
    ['1Ti', '1Ti', 'BinarySI'],
    ['1Pi', '1Pi', 'BinarySI'],
    ['1Ei', '1Ei', 'BinarySI'],
    ['1025Ki', '1025Ki', 'BinarySI'],
    ['0.5Mi', '512Ki', 'BinarySI'],
    ['0.5Ki', '512', 'BinarySI'], // |value| < 1024 prints in DecimalSI
    ['1.1Ki', '1126400m', 'BinarySI'], // not an integer: DecimalSI, no rounding
    ['100.035Ki', '102435840m', 'BinarySI'],
    ['-1.5Gi', '-1536Mi', 'BinarySI'],
    ['0Gi', '0', 'BinarySI'],
    ['9Ei', '9223372036854775807', 'BinarySI'], // capped at 2^63-1
    ['8Ei', '9223372036854775807', 'BinarySI'],
    ['-9Ei', '-9223372036854775807', 'BinarySI'],
    ['.000000000001Ki', '2n', 'DecimalSI'], // 0 < value < 1 and rounded up to nano: DecimalSI
    ['0.1', '100m', 'DecimalSI'],
    ['1000m', '1', 'DecimalSI'],
    ['1.5', '1500m', 'DecimalSI'],
    ['.5', '500m', 'DecimalSI'],
    ['5.', '5', 'DecimalSI'],
    ['1.G', '1G', 'DecimalSI'],
    ['100m', '100m', 'DecimalSI'],
    ['1500', '1500', 'DecimalSI'],
    ['1000', '1k', 'DecimalSI'],
    ['1000000', '1M', 'DecimalSI'],
    ['10000', '10k', 'DecimalSI'],
    ['0.000001', '1u', 'DecimalSI'],
    ['0.0000000001', '1n', 'DecimalSI'], // rounded up to nano
    ['0.9n', '1n', 'DecimalSI'],
    ['-0.9n', '-1n', 'DecimalSI'], // away from zero
    ['1.123456789', '1123456789n', 'DecimalSI'],
    ['1.1234567891', '1123456790n', 'DecimalSI'],
    ['-0.1', '-100m', 'DecimalSI'],
    ['+5', '5', 'DecimalSI'],
    ['05', '5', 'DecimalSI'],
    ['0', '0', 'DecimalSI'],
    ['00', '0', 'DecimalSI'],
    ['-0', '0', 'DecimalSI'],
    ['0.000', '0', 'DecimalSI'],
    ['1E', '1E', 'DecimalSI'],
    ['1P', '1P', 'DecimalSI'],
    ['999P', '999P', 'DecimalSI'],
    ['1000P', '1E', 'DecimalSI'],
    ['123456789012345678901234567890', '123456789012345678901234567890', 'DecimalSI'], // no int64 cap for decimal
    ['1e3', '1e3', 'DecimalExponent'],
    ['1E3', '1e3', 'DecimalExponent'],
    ['12e6', '12e6', 'DecimalExponent'],
    ['1.5e3', '1500', 'DecimalExponent'],
    ['1e-3', '1e-3', 'DecimalExponent'],
    ['1E-9', '1e-9', 'DecimalExponent'],
    ['1e+2', '100', 'DecimalExponent'],
    ['1e0', '1', 'DecimalExponent'],
    ['0.5e-9', '1e-9', 'DecimalExponent'],
    // apimachinery quirks, kept: a sign or a point without digits is zero
    ['-', '0', 'DecimalSI'],
    ['+', '0', 'DecimalSI'],
    ['.', '0', 'DecimalSI'],
    ['-k', '0', 'DecimalSI'],
    ['.Ki', '0', 'BinarySI'],
  ];
  for (const [input, canonical, format] of cases) {
    it(`${JSON.stringify(input)} -> ${canonical} (${format})`, () => {
      const parsed = q(input);
      expect(parsed.toString()).toBe(canonical);
      expect(parsed.format).toBe(format);
      expect(q(canonical).cmp(parsed)).toBe(0);
    });
  }

  const numbers: Array<[input: number, canonical: string]> = [
    [20, '20'],
    [0.5, '500m'],
    [1.5, '1500m'],
    [-3, '-3'],
    [1000, '1k'],
    [0, '0'],
    [-0, '0'],
    [1e21, '1e21'], // String(1e21) is "1e+21": DecimalExponent
    [0.1 + 0.2, '300000001n'], // the double 0.30000000000000004 is parsed as written and rounded up to nano
  ];
  for (const [input, canonical] of numbers) {
    it(`number ${input} -> ${canonical}`, () => {
      expect(q(input).toString()).toBe(canonical);
    });
  }
});

describe('invalid quantities', () => {
  const invalid = [
    '',
    ' 1',
    '1 ',
    '1 Gi',
    '1.5.0',
    '1Ki2',
    'abc',
    '1ki', // suffixes are case sensitive
    '1KI',
    '1Mb',
    '1e',
    '1e+',
    '1e1.5',
    '--1',
    '+-1',
    '1,5',
    '0x10',
    'Infinity',
    'NaN',
    '1Gi ',
    '1e99999999999999999999', // exponent does not fit an int64
    '١', // not an ASCII digit
    '-Ei', // no digits on the arbitrary-precision path
    '1.5m.5',
  ];
  for (const input of invalid) {
    it(JSON.stringify(input), () => {
      expect(() => q(input)).toThrow(QuantityError);
      expect(Quantity.tryParse(input)).toBeUndefined();
    });
  }

  it('says what was wrong and what is allowed', () => {
    expect.assertions(5);
    expect(() => q('1.5.0')).toThrow(
      `quantity "1.5.0" is not valid: must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
    );
    expect(() => q('1ki')).toThrow(
      /unknown suffix "ki"; allowed suffixes are n, u, m, k, M, G, T, P, E .* Ki, Mi, Gi, Ti, Pi, Ei/,
    );
    try {
      q('0.1mi');
    } catch (e) {
      expect(e).toBeInstanceOf(QuantityError);
      expect((e as QuantityError).reason).toBe('suffix');
      expect((e as QuantityError).input).toBe('0.1mi');
    }
  });

  it('rejects numbers that are not finite and values that are neither strings nor numbers', () => {
    expect(() => q(Number.NaN)).toThrow(QuantityError);
    expect(() => q(Number.POSITIVE_INFINITY)).toThrow(QuantityError);
    for (const v of [undefined, null, true, {}, [], 1n]) expect(Quantity.tryParse(v)).toBeUndefined();
    expect(Quantity.tryParse('1Gi')?.toString()).toBe('1Gi');
    expect(Quantity.tryParse(2)?.toString()).toBe('2');
  });
});

describe('arithmetic', () => {
  it('1Gi + 512Mi == 1536Mi', () => {
    const sum = q('1Gi').add(q('512Mi'));
    expect(sum.toString()).toBe('1536Mi');
    expect(sum.cmp(q('1.5Gi'))).toBe(0);
  });

  it('0.1 + 0.2 == 300m exactly', () => {
    const sum = q('0.1').add(q('0.2'));
    expect(sum.toString()).toBe('300m');
    expect(sum.cmp(q('300m'))).toBe(0);
    expect(sum.cmp(q('0.3'))).toBe(0);
    expect(sum.toDecimalString()).toBe('0.3');
  });

  it('1Gi == 1073741824', () => {
    expect(q('1Gi').cmp(q('1073741824'))).toBe(0);
    expect(q('1Gi').equals(q('1073741824'))).toBe(true);
    expect(q('1073741824').toString()).toBe('1073741824'); // DecimalSI keeps its own suffixes
  });

  it('500m + 500m == 1', () => {
    expect(q('500m').add(q('500m')).toString()).toBe('1');
  });

  const table: Array<[a: string, op: '+' | '-', b: string, result: string]> = [
    ['2Gi', '-', '1Gi', '1Gi'],
    ['1', '-', '1500m', '-500m'],
    ['100m', '-', '1', '-900m'],
    ['1Gi', '+', '1G', '2073741824'], // BinarySI without a whole binary suffix prints the number
    ['1G', '+', '1Gi', '2073741824'],
    ['100m', '+', '1Gi', '1073741824100m'],
    ['1Gi', '+', '100m', '1073741824100m'], // BinarySI that is not an integer prints in DecimalSI
    ['0', '+', '1Gi', '1Gi'], // a zero receiver takes the other's Format
    ['1Gi', '-', '1Gi', '0'],
    ['0', '-', '1Gi', '-1Gi'],
    ['1e3', '+', '1', '1001'],
    ['1k', '+', '1e3', '2k'],
    ['1e3', '+', '1k', '2e3'],
    ['99999999999999999999', '+', '1', '100E'],
    ['9223372036854775807', '+', '1', '9223372036854775808'], // past int64: exact
    ['-9223372036854775807', '-', '2', '-9223372036854775809'],
    ['1n', '+', '1E', '1000000000000000000000000001n'], // exact: 10^18 + 10^-9
  ];
  for (const [a, op, b, result] of table) {
    it(`${a} ${op} ${b} == ${result}`, () => {
      const r = op === '+' ? q(a).add(q(b)) : q(a).sub(q(b));
      expect(r.toString()).toBe(result);
    });
  }

  it('neg, mul and addAll', () => {
    expect(q('1Gi').neg().toString()).toBe('-1Gi');
    expect(q('0').neg().toString()).toBe('0');
    expect(q('250m').mul(4).toString()).toBe('1');
    expect(q('1Gi').mul(3n).toString()).toBe('3Gi');
    expect(q('1.5').mul(-2).toString()).toBe('-3');
    expect(Quantity.addAll(['100m', '200m', '300m', '400m'].map(q)).toString()).toBe('1');
    expect(Quantity.addAll([q('1Gi'), q('1Gi')]).toString()).toBe('2Gi');
    expect(() => Quantity.addAll([])).toThrow(RangeError);
  });

  it('roundUp, value and milliValue round away from zero', () => {
    expect(q('1.5').roundUp(0)).toMatchObject({ exact: false });
    expect(q('1.5').roundUp(0).quantity.toString()).toBe('2');
    expect(q('-1.5').roundUp(0).quantity.toString()).toBe('-2');
    expect(q('1.5').roundUp(-3).exact).toBe(true);
    expect(q('1.5').value()).toBe(2n);
    expect(q('1500m').milliValue()).toBe(1500n);
    expect(q('1Ki').value()).toBe(1024n);
    expect(q('0.1n').milliValue()).toBe(1n);
  });
});

describe('order', () => {
  const cases: Array<[a: string, b: string, cmp: -1 | 0 | 1]> = [
    ['1Gi', '1G', 1],
    ['1000m', '1', 0],
    ['-1', '0', -1],
    ['1e3', '1k', 0],
    ['1Ki', '1024', 0],
    ['0.001', '1m', 0],
    ['1E', '999P', 1],
    ['1n', '0', 1],
    ['-1n', '0', -1],
    ['-1Gi', '-1G', -1],
    ['1e-9', '1n', 0],
    ['123456789012345678901234567890', '123456789012345678901234567891', -1],
  ];
  for (const [a, b, c] of cases) {
    it(`${a} <=> ${b} == ${c}`, () => {
      expect(q(a).cmp(q(b))).toBe(c);
      expect(q(b).cmp(q(a))).toBe(-c || 0);
    });
  }

  it('cmp agrees with the exact order for every scale gap (the aligned fast path and the digit-count path)', () => {
    const exact = (u1: bigint, s1: number, u2: bigint, s2: number): number => {
      const s = Math.min(s1, s2);
      const x = u1 * 10n ** BigInt(s1 - s);
      const y = u2 * 10n ** BigInt(s2 - s);
      return x === y ? 0 : x > y ? 1 : -1;
    };
    fc.assert(
      fc.property(
        fc.bigInt(-(10n ** 20n), 10n ** 20n),
        fc.integer({ min: -45, max: 45 }),
        fc.bigInt(-(10n ** 20n), 10n ** 20n),
        fc.integer({ min: -45, max: 45 }),
        (u1, s1, u2, s2) => {
          expect(Quantity.fromDecimal(u1, s1).cmp(Quantity.fromDecimal(u2, s2))).toBe(exact(u1, s1, u2, s2));
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('parsing the same string again gives the same value, also after many other strings, and never caches an invalid one', () => {
    expect(Quantity.parse('8Gi')).toBe(Quantity.parse('8Gi'));
    expect(Quantity.parse('1500m').toString()).toBe('1500m');
    expect(Quantity.parse('1500m').toString()).toBe('1500m');
    for (let i = 0; i < 10_000; i++) expect(Quantity.parse(`${i}m`).cmp(Quantity.fromMilli(i))).toBe(0);
    expect(Quantity.parse('8Gi').cmp(Quantity.fromInt(8n * 1024n ** 3n))).toBe(0);
    expect(() => Quantity.parse('8Gx')).toThrow(QuantityError);
    expect(() => Quantity.parse('8Gx')).toThrow(QuantityError);
  });

  it('isZero and sign', () => {
    expect(q('0m').isZero()).toBe(true);
    expect(q('-0.0').isZero()).toBe(true);
    expect(q('0Gi').sign()).toBe(0);
    expect(q('-1n').sign()).toBe(-1);
    expect(q('1n').sign()).toBe(1);
  });
});

describe('serialisation', () => {
  it('toJSON is the canonical string', () => {
    expect(JSON.stringify({ memory: q('1.5Gi'), cpu: q('0.5') })).toBe('{"memory":"1536Mi","cpu":"500m"}');
  });

  it('fromJSON reads what the API server reads', () => {
    expect(Quantity.fromJSON('"1Gi"').toString()).toBe('1Gi');
    expect(Quantity.fromJSON('" 1Gi "').toString()).toBe('1Gi');
    expect(Quantity.fromJSON('1.5').toString()).toBe('1500m');
    expect(Quantity.fromJSON('1e3').format).toBe('DecimalExponent'); // a JSON number keeps its exponent form
    expect(Quantity.fromJSON('null').isZero()).toBe(true);
    expect(() => Quantity.fromJSON('true')).toThrow(QuantityError);
    expect(() => Quantity.fromJSON('1k')).toThrow(QuantityError); // not JSON
  });

  it('toApiString keeps what apimachinery keeps as its cached String()', () => {
    expect(q('+1').toApiString()).toBe('+1');
    expect(q('05').toApiString()).toBe('05');
    expect(q('1E3').toApiString()).toBe('1E3');
    expect(q('1.5Gi').toApiString()).toBe('1536Mi');
    expect(q('+1').add(q('0')).toApiString()).toBe('1'); // any arithmetic drops it
  });

  it('a BinarySI value past 2^63-1 prints exactly but parses capped, as in apimachinery', () => {
    const big = q('8Ei').add(q('8Ei')); // 2 * (2^63 - 1), an odd multiple of 2
    expect(big.toString()).toBe('18446744073709551614');
    expect(q('62.5Ki').toString()).toBe('64000'); // BinarySI with no whole binary suffix prints bare
    expect(q('64000').toString()).toBe('64k'); // ... and reads back as DecimalSI
    const sixteenEi = q('4Ei').mul(4);
    expect(sixteenEi.toString()).toBe('16Ei');
    expect(q('16Ei').toString()).toBe('9223372036854775807');
  });

  it('exact accessors', () => {
    expect(q('1.5Gi').toDecimalString()).toBe('1610612736');
    expect(q('-0.001').toDecimalString()).toBe('-0.001');
    expect(q('1k').asInt64()).toBe(1000n);
    expect(q('0.5').asInt64()).toBeUndefined();
    expect(q('1.5Gi').withFormat('DecimalSI').toString()).toBe('1610612736');
  });
});

// ---------------------------------------------------------------------------------------------
// Properties

const digitString = (minLength: number, maxLength: number): fc.Arbitrary<string> =>
  fc.array(fc.constantFrom(...'0123456789'), { minLength, maxLength }).map((a) => a.join(''));

/**
 * Quantity strings of at most 5 integer digits: every suffix, fractions down to below nano, and
 * exponents. Values stay below 10^21, where the released DecimalSI String() keeps its magnitude (it
 * prints 1000E as "1"; see the module doc), so printing round-trips.
 */
const SUFFIXES = [
  '',
  'n',
  'u',
  'm',
  'k',
  'M',
  'G',
  'T',
  'P',
  'E',
  'Ki',
  'Mi',
  'Gi',
  'Ti',
  'Pi',
  'Ei',
  'e0',
  'e3',
  'e-3',
  'E6',
  'e-9',
  'e9',
  'e+2',
  'e-1',
  'e-12',
];
const quantityString = fc
  .tuple(
    fc.constantFrom('', '-', '+'),
    digitString(1, 5),
    fc.option(digitString(0, 12), { nil: undefined }),
    fc.constantFrom(...SUFFIXES),
  )
  .map(([sign, int, frac, suffix]) => `${sign}${int}${frac === undefined ? '' : `.${frac}`}${suffix}`)
  .filter((s) => !/^[-+]?\d+(\.\d*)?E$/.test(s) || Number(s.replace(/E$/, '').replace(/^[-+]/, '')) < 100);
const quantity = quantityString.map((s) => Quantity.parse(s));

/** An independent reading of a quantity string: the exact rational value and the Format. */
function reference(s: string): { decimal: string; format: QuantityFormat } {
  const m = /^([+-]?)(\d*)(?:\.(\d*))?(.*)$/.exec(s)!;
  const negative = m[1] === '-';
  const frac = m[3] ?? '';
  let num = BigInt(`${m[2] ?? ''}${frac}` || '0');
  let den = 10n ** BigInt(frac.length);
  const suffix = m[4] ?? '';
  const decimal: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
  const binary: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
  let format: QuantityFormat;
  let exp10 = 0;
  if (suffix in decimal) {
    format = 'DecimalSI';
    exp10 = decimal[suffix]!;
  } else if (suffix in binary) {
    format = 'BinarySI';
    num *= 1n << BigInt(binary[suffix]!);
  } else {
    format = 'DecimalExponent';
    exp10 = Number(suffix.slice(1));
  }
  if (exp10 >= 0) num *= 10n ** BigInt(exp10);
  else den *= 10n ** BigInt(-exp10);
  // round |value| up to a whole number of nanos; BinarySI caps at 2^63-1
  let nanos = (num * 1_000_000_000n + den - 1n) / den;
  if (format === 'BinarySI') {
    const cap = ((1n << 63n) - 1n) * 1_000_000_000n;
    if (nanos > cap) nanos = cap;
    if (nanos > 0n && nanos < 1_000_000_000n) format = 'DecimalSI';
  }
  const digits = nanos.toString().padStart(10, '0');
  let text = `${digits.slice(0, -9)}.${digits.slice(-9)}`.replace(/0+$/, '').replace(/\.$/, '');
  if (nanos === 0n) text = '0';
  else if (negative) text = `-${text}`;
  return { decimal: text, format };
}

/** Exact rational comparison through the plain decimal strings (independent of Quantity.cmp). */
function decimalCompare(a: string, b: string): number {
  const scaled = (d: string, places: number): bigint => {
    const [i, f = ''] = d.split('.');
    return BigInt(`${i}${f.padEnd(places, '0')}`);
  };
  const places = Math.max(a.split('.')[1]?.length ?? 0, b.split('.')[1]?.length ?? 0);
  const x = scaled(a, places);
  const y = scaled(b, places);
  return x === y ? 0 : x > y ? 1 : -1;
}

function decimalAdd(a: string, b: string): string {
  const places = Math.max(a.split('.')[1]?.length ?? 0, b.split('.')[1]?.length ?? 0);
  const scaled = (d: string): bigint => {
    const [i, f = ''] = d.split('.');
    return BigInt(`${i}${f.padEnd(places, '0')}`);
  };
  const sum = scaled(a) + scaled(b);
  const negative = sum < 0n;
  const digits = (negative ? -sum : sum).toString().padStart(places + 1, '0');
  let text =
    places === 0
      ? digits
      : `${digits.slice(0, -places)}.${digits.slice(-places)}`.replace(/0+$/, '').replace(/\.$/, '');
  if (text === '' || /^0+$/.test(text)) text = '0';
  return sum === 0n ? '0' : `${negative ? '-' : ''}${text}`;
}

const RUNS = { numRuns: 600 };

describe('properties', () => {
  it('parse agrees with an independent reading of the value and Format', () => {
    fc.assert(
      fc.property(quantityString, (s) => {
        const parsed = Quantity.parse(s);
        const ref = reference(s);
        expect(parsed.toDecimalString()).toBe(ref.decimal);
        expect(parsed.format).toBe(ref.format);
      }),
      RUNS,
    );
  });

  it('parse(toString(q)) cmp q == 0, and the canonical form is stable', () => {
    fc.assert(
      fc.property(quantity, (a) => {
        const printed = a.toString();
        const again = Quantity.parse(printed);
        expect(again.cmp(a)).toBe(0);
        // A BinarySI value without a whole binary suffix prints bare (62.5Ki -> "64000"), which parses
        // back as DecimalSI ("64k"); every other form prints the same again.
        if (a.format !== 'BinarySI' || again.format === 'BinarySI') expect(again.toString()).toBe(printed);
        expect(Quantity.parse(again.toString()).toString()).toBe(again.toString());
        expect(Quantity.parse(a.toApiString()).cmp(a)).toBe(0);
      }),
      RUNS,
    );
  });

  it('parse(toString(a + b)) cmp (a + b) == 0, except where parsing caps BinarySI at 2^63-1', () => {
    const cap = Quantity.parse('9223372036854775807');
    fc.assert(
      fc.property(quantity, quantity, (a, b) => {
        const sum = a.add(b);
        const back = Quantity.parse(sum.toString());
        // A BinarySI sum past 2^63-1 prints with a binary suffix that ParseQuantity caps (as in apimachinery).
        const capped = back.format === 'BinarySI' && (sum.cmp(cap) > 0 || sum.cmp(cap.neg()) < 0);
        expect(back.cmp(capped ? (sum.sign() > 0 ? cap : cap.neg()) : sum)).toBe(0);
      }),
      RUNS,
    );
  });

  it('a + b - b == a', () => {
    fc.assert(
      fc.property(quantity, quantity, (a, b) => {
        expect(a.add(b).sub(b).cmp(a)).toBe(0);
        expect(a.sub(b).add(b).cmp(a)).toBe(0);
      }),
      RUNS,
    );
  });

  it('addition is exact, commutative and associative', () => {
    fc.assert(
      fc.property(quantity, quantity, quantity, (a, b, c) => {
        expect(a.add(b).toDecimalString()).toBe(decimalAdd(a.toDecimalString(), b.toDecimalString()));
        expect(a.add(b).cmp(b.add(a))).toBe(0);
        expect(
          a
            .add(b)
            .add(c)
            .cmp(a.add(b.add(c))),
        ).toBe(0);
        expect(a.sub(b).cmp(a.add(b.neg()))).toBe(0);
        expect(a.neg().neg().cmp(a)).toBe(0);
        expect(Quantity.addAll([a, b, c]).cmp(a.add(b).add(c))).toBe(0);
      }),
      RUNS,
    );
  });

  it('cmp is the exact order of the values: antisymmetric, transitive and total', () => {
    fc.assert(
      fc.property(quantity, quantity, quantity, (a, b, c) => {
        const ab = a.cmp(b);
        expect(ab).toBe(decimalCompare(a.toDecimalString(), b.toDecimalString()));
        expect(b.cmp(a)).toBe(-ab || 0);
        expect(a.cmp(a)).toBe(0);
        if (ab <= 0 && b.cmp(c) <= 0) expect(a.cmp(c)).toBeLessThanOrEqual(0);
        if (ab >= 0 && b.cmp(c) >= 0) expect(a.cmp(c)).toBeGreaterThanOrEqual(0);
        // sorting by cmp gives an order every pair agrees with
        const sorted = [a, b, c].sort((x, y) => x.cmp(y));
        for (let i = 0; i < sorted.length; i++) {
          for (let j = i + 1; j < sorted.length; j++) expect(sorted[i]!.cmp(sorted[j]!)).toBeLessThanOrEqual(0);
        }
        expect(a.sub(b).sign()).toBe(ab);
      }),
      RUNS,
    );
  });

  it('mul by an integer is repeated addition', () => {
    fc.assert(
      fc.property(quantity, fc.integer({ min: -20, max: 20 }), (a, n) => {
        let expected = Quantity.zero();
        for (let i = 0; i < Math.abs(n); i++) expected = expected.add(a);
        if (n < 0) expected = expected.neg();
        expect(a.mul(n).cmp(expected)).toBe(0);
      }),
      RUNS,
    );
  });
});

describe("signOfSum (the rules' allocation-free comparison)", () => {
  const exact = (ka: number, a: Quantity, kb: number, b: Quantity, kc: number, c: Quantity) =>
    a.mul(ka).add(b.mul(kb)).add(c.mul(kc)).sign();

  // Found by search: plain doubles give these the wrong sign (each term rounds, and the sum keeps the
  // error), so a version without the exact fallback, or with too little slack, fails here.
  const doublesMisjudge: Array<[string, string, string, -1 | 0 | 1]> = [
    ['100000000000000413', '100000000000000395', '200000000000000810', -1],
    ['1000000000000000366', '1000000000000000243', '2000000000000000610', -1],
    ['1000000000000000136', '1000000000000000016', '2000000000000000152', 0],
  ];
  it.each(doublesMisjudge)('%s + %s − %s has the exact sign', (a, b, c, sign) => {
    const naive = Math.sign(q(a).asApproximateFloat64() + q(b).asApproximateFloat64() - q(c).asApproximateFloat64());
    expect(naive).not.toBe(sign); // the row is a real trap for doubles
    expect(signOfSum(1, q(a), 1, q(b), -1, q(c))).toBe(sign);
  });

  const rows: Array<[number, string, number, string, number, string]> = [
    [1, '4', 1, '96', -1, '100'], // exactly full
    [1, '4', 1, '96', -1, '99999999999n'], // full but for a nano
    [10000, '0', 10000, '90', -9000, '100'], // headroom exactly a tenth
    [10000, '1n', 10000, '90', -9000, '100'],
    [1, '1e400', 1, '1', -1, '1e400'], // beyond doubles: computed exactly
    [1, '-1e400', 1, '1e400', -1, '0'],
    [1, '1e300', 1, '1n', -1, '1e300'], // terms 10^309 apart
    [1, '1n', 1, '1n', -1, '2n'],
    [1, '8Gi', 1, '8Gi', -1, '16Gi'],
    [1, '8Gi', 1, '8G', -1, '16Gi'],
    [1, '0', 1, '0', -1, '0'],
    [-1, '5', 3, '2', 1, '-1'],
    [1, '9223372036854775807', 1, '1', -1, '9223372036854775808'], // past int64
  ];
  it.each(rows)('%d·%s + %d·%s + %d·%s', (ka, a, kb, b, kc, c) => {
    expect(signOfSum(ka, q(a), kb, q(b), kc, q(c))).toBe(exact(ka, q(a), kb, q(b), kc, q(c)));
  });

  it('agrees with exact arithmetic on random terms, near-ties included', () => {
    const coefficient = fc.constantFrom(1, -1, 10000, -9000, -1000, 3, 0);
    fc.assert(
      fc.property(coefficient, quantity, coefficient, quantity, coefficient, quantity, (ka, a, kb, b, kc, c) => {
        expect(signOfSum(ka, a, kb, b, kc, c)).toBe(exact(ka, a, kb, b, kc, c));
      }),
      RUNS,
    );
    // c = a + b ± a few nanos: the doubles cannot tell, the exact path must.
    fc.assert(
      fc.property(quantity, quantity, fc.integer({ min: -3, max: 3 }), (a, b, nanos) => {
        const c = a.add(b).add(Quantity.fromScaled(nanos, -9));
        expect(signOfSum(1, a, 1, b, -1, c)).toBe(exact(1, a, 1, b, -1, c));
      }),
      RUNS,
    );
  });
});

describe('Quantity.addAll (left-to-right add without the partial sums)', () => {
  const fold = (terms: Quantity[]) => terms.slice(1).reduce((sum, t) => sum.add(t), terms[0]!);
  const same = (terms: Quantity[]) => {
    const got = Quantity.addAll(terms);
    const want = fold(terms);
    expect(got.cmp(want)).toBe(0);
    expect(got.format).toBe(want.format);
    expect(got.toString()).toBe(want.toString());
    expect(got.toApiString()).toBe(want.toApiString());
    expect(got.asInt64()).toBe(want.asInt64()); // the same int64 or inf.Dec form
  };

  it.each([
    [['4', '8', '40']],
    [['8Gi', '2Gi', '512Mi']],
    [['0', '8Gi', '1']], // a zero running total takes the next term's Format
    [['1', '-1', '2Gi']],
    [['500m', '1.5', '2']], // one scale after parsing: milli
    [['9007199254740991', '1']], // past 2^53: partial sums are no longer safe integers
    [['9223372036854775807', '1']], // past int64: inf.Dec
    [['1e400', '1']],
    [['05']], // one term: returned as it is (its string too)
  ])('%j', (strings) => same(strings.map((t) => q(t))));

  it('agrees with repeated add on random lists', () => {
    fc.assert(
      fc.property(fc.array(quantity, { minLength: 1, maxLength: 6 }), (terms) => same(terms)),
      RUNS,
    );
  });
});
