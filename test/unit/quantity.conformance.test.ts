/**
 * Conformance of src/quantity/ with apimachinery's own test tables, copied in
 * test/conformance/k8s-vectors (see SOURCES.md there). Every row of every section runs.
 *
 * Version: our control planes pin Kubernetes v1.37.2 and v1.35.4, whose resource.Quantity code is the same
 * (apimachinery v0.37.2 only adds QuantityPtrEqual), so this module implements the behaviour of both. The
 * rows the vector files keep apart under `version_sensitive` pin fixes from the 1.37 development line (kubernetes/kubernetes#140459: String() of DecimalSI above E / below n and of
 * BinarySI past Ei falls back to the exponent form; #141264: Neg/Sub of the most negative int64 no
 * longer wrap), which did not reach the v1.37.2 release. v1.35.4 has neither fix, so for those rows we assert the v1.35.4 result, derived from
 * the released code (amount.go, math.go, quantity.go, suffix.go) and confirmed by running
 * k8s.io/apimachinery v0.35.4 on the same expressions; the test names give the 1.37 result beside it.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Quantity, QuantityError, type QuantityFormat } from '../../src/quantity/quantity.js';

const VECTORS = new URL('../conformance/k8s-vectors/', import.meta.url);
const load = (name: string): any => JSON.parse(readFileSync(new URL(name, VECTORS), 'utf8'));

const PARSE = load('quantity-parse.json');
const COMPARE = load('quantity-compare.json');

interface ValueSpec {
  unscaled: string;
  exponent: number;
  format: string;
  decimal: string;
  go: string;
}

/** A Quantity built the way the Go expression in `go` builds it (int64 form, inf.Dec form or zero value). */
function build(v: ValueSpec): Quantity {
  const format = v.format as QuantityFormat; // '' (Go's zero Format) prints as DecimalExponent, like any unknown Format
  if (v.go.startsWith('intQuantity(')) return Quantity.fromScaled(BigInt(v.unscaled), v.exponent, format);
  if (v.go.includes('(zero value)') || /^Quantity\{(Format: \w+)?\}$/.test(v.go)) {
    expect(v.unscaled).toBe('0');
    return Quantity.zero(format);
  }
  // decQuantity, bigDecQuantity, Quantity{d: infDecAmount{dec(...)}}, Quantity{d: maxAllowed}: inf.Dec
  expect(v.go).toMatch(/^(decQuantity|bigDecQuantity)\(|^Quantity\{d: (infDecAmount\{dec\(|maxAllowed)/);
  return Quantity.fromDecimal(BigInt(v.unscaled), v.exponent, format);
}

/** Asserts q has the value of v (Cmp == 0), and says which value it has when it does not. */
function expectValue(q: Quantity, v: ValueSpec): void {
  expect(q.toDecimalString()).toBe(v.decimal);
  expect(q.cmp(build(v))).toBe(0);
}

const rowName = (x: unknown): string => JSON.stringify(x);

function expectSections(file: Record<string, unknown>, handled: string[]): void {
  // The files name their sections in _meta.sections; version_sensitive is extra. A new section fails here.
  const meta = (file._meta as { sections: Record<string, string> }).sections;
  expect(
    Object.keys(file)
      .filter((k) => k !== '_meta')
      .sort(),
  ).toEqual(handled.slice().sort());
  for (const section of Object.keys(meta)) expect(handled).toContain(section);
}

describe('quantity-parse.json', () => {
  it('has exactly the sections this file runs', () => {
    expectSections(PARSE, [
      'valid',
      'invalid',
      'invalid_detail',
      'valid_loop_derived',
      'parse_values',
      'string_from_value',
      'constructors',
      'json_unmarshal',
      'accessors',
      'round_up',
      'as_approximate_float64',
      'version_sensitive',
    ]);
  });

  describe('valid: ParseQuantity(input).String() == canonical (+ AsDec, AsInt64, Format)', () => {
    for (const row of PARSE.valid as Array<{
      input: string;
      canonical: string;
      asDec?: string;
      asInt64?: string | null;
      format?: string;
    }>) {
      it(rowName(row.input), () => {
        const q = Quantity.parse(row.input);
        expect(q.toString()).toBe(row.canonical);
        expect(q.toApiString()).toBe(row.canonical);
        expect(q.toJSON()).toBe(row.canonical);
        if (row.asDec !== undefined) expect(q.toDecimalString()).toBe(row.asDec);
        if (row.asInt64 !== undefined) expect(q.asInt64()).toBe(row.asInt64 === null ? undefined : BigInt(row.asInt64));
        if (row.format !== undefined) expect(q.format).toBe(row.format);
        // the canonical form is itself stable
        expect(Quantity.parse(row.canonical).toString()).toBe(row.canonical);
        expect(Quantity.parse(row.canonical).cmp(q)).toBe(0);
      });
    }
  });

  describe('invalid: ParseQuantity(input) fails', () => {
    for (const input of PARSE.invalid as string[]) {
      it(rowName(input), () => {
        expect(() => Quantity.parse(input)).toThrow(QuantityError);
        expect(Quantity.tryParse(input)).toBeUndefined();
      });
    }
  });

  describe('invalid_detail: ParseQuantity(input) fails', () => {
    for (const row of PARSE.invalid_detail as Array<{ input: string; source: string }>) {
      it(`${rowName(row.input)} (${row.source})`, () => {
        let error: unknown;
        try {
          Quantity.parse(row.input);
        } catch (e) {
          error = e;
        }
        expect(error).toBeInstanceOf(QuantityError);
        expect((error as QuantityError).message).toContain(JSON.stringify(row.input));
        expect((error as QuantityError).input).toBe(row.input);
      });
    }
  });

  describe('valid_loop_derived: ParseQuantity("-"+in).String() == "-"+expect', () => {
    for (const row of PARSE.valid_loop_derived as Array<{ input: string; canonical: string }>) {
      it(rowName(row.input), () => {
        expect(Quantity.parse(row.input).toString()).toBe(row.canonical);
      });
    }
  });

  describe('parse_values: value and Format of ParseQuantity(input), and of "-"+input and "+"+input', () => {
    for (const row of PARSE.parse_values as Array<ValueSpec & { input: string; canonical?: string }>) {
      it(rowName(row.input), () => {
        const q = Quantity.parse(row.input);
        expectValue(q, row);
        expect(q.format).toBe(row.format);
        const negated = Quantity.parse(`-${row.input}`);
        expect(negated.cmp(build(row).neg())).toBe(0);
        expect(negated.format).toBe(row.format);
        const plus = Quantity.parse(`+${row.input}`);
        expectValue(plus, row);
        expect(plus.format).toBe(row.format);
        if (row.canonical !== undefined) expect(q.toString()).toBe(row.canonical);
      });
    }
  });

  describe('string_from_value: a Quantity with this value and Format prints canonical, its negation "-"+canonical', () => {
    for (const row of PARSE.string_from_value as Array<{
      value: ValueSpec;
      canonical: string;
      negated_canonical: string | null;
    }>) {
      it(row.value.go, () => {
        expect(build(row.value).toString()).toBe(row.canonical);
        if (row.negated_canonical !== null) {
          expect(build(row.value).neg().toString()).toBe(row.negated_canonical);
          expect(build({ ...row.value, unscaled: (-BigInt(row.value.unscaled)).toString() }).toString()).toBe(
            row.negated_canonical,
          );
        } else {
          expect(build(row.value).neg().toString()).toBe(row.canonical);
        }
      });
    }
  });

  describe('constructors: NewQuantity / NewMilliQuantity / NewScaledQuantity .String()', () => {
    for (const row of PARSE.constructors as Array<{
      ctor: string;
      value: string;
      format?: string;
      scale?: number;
      canonical: string;
      exact_round_trip?: boolean;
      source: string;
    }>) {
      it(`${row.ctor}(${row.value}, ${row.format ?? row.scale}) (${row.source})`, () => {
        const value = BigInt(row.value);
        const format = row.format as QuantityFormat;
        let q: Quantity;
        let scale: number;
        if (row.ctor === 'NewQuantity') {
          q = Quantity.fromInt(value, format);
          scale = 0;
        } else if (row.ctor === 'NewMilliQuantity') {
          q = Quantity.fromMilli(value, format);
          scale = -3;
        } else {
          expect(row.ctor).toBe('NewScaledQuantity');
          q = Quantity.fromScaled(value, row.scale!);
          scale = row.scale!;
          expect(q.format).toBe('DecimalSI');
        }
        expect(q.toString()).toBe(row.canonical);
        // the same value after ToDec() (inf.Dec form) prints the same
        expect(
          Quantity.fromDecimal(value, scale, row.ctor === 'NewScaledQuantity' ? 'DecimalSI' : format).toString(),
        ).toBe(row.canonical);
        if (row.exact_round_trip === true) expect(Quantity.parse(q.toString()).milliValue()).toBe(value);
        if (row.ctor === 'NewQuantity' && row.format !== undefined) {
          expect(Quantity.parse(q.toString()).value()).toBe(value);
        }
      });
    }
  });

  describe('json_unmarshal: json.Unmarshal(json, &q); q.String() == canonical', () => {
    for (const row of PARSE.json_unmarshal as Array<{ json: string; canonical: string }>) {
      it(rowName(row.json), () => {
        expect(Quantity.fromJSON(row.json).toString()).toBe(row.canonical);
      });
    }
  });

  describe('accessors: MustParse(input).Value() / .MilliValue() and .Format', () => {
    for (const row of PARSE.accessors as Array<{ input: string; method: string; result: string; format: string }>) {
      it(`${row.input}.${row.method}()`, () => {
        const q = Quantity.parse(row.input);
        const got = row.method === 'Value' ? q.value() : row.method === 'MilliValue' ? q.milliValue() : undefined;
        expect(got).toBe(BigInt(row.result));
        expect(q.format).toBe(row.format);
      });
    }
  });

  describe('round_up: ParseQuantity(input).RoundUp(scale)', () => {
    for (const row of PARSE.round_up as Array<{ input: string; scale: number; expect: ValueSpec; ok: boolean }>) {
      it(`${row.input} RoundUp(${row.scale})`, () => {
        const { quantity, exact } = Quantity.parse(row.input).roundUp(row.scale);
        expect(exact).toBe(row.ok);
        expectValue(quantity, row.expect);
        expect(quantity.format).toBe(row.expect.format);
      });
    }
  });

  describe('as_approximate_float64: AsApproximateFloat64() and AsFloat64Slow()', () => {
    for (const row of PARSE.as_approximate_float64 as Array<{ input: string; float64: number }>) {
      it(row.input, () => {
        const q = Quantity.parse(row.input);
        expect(q.asApproximateFloat64()).toBe(row.float64);
        expect(q.asFloat64Slow()).toBe(row.float64);
      });
    }
  });

  describe('version_sensitive (Kubernetes 1.37 rows; we assert the v1.35.4 behaviour)', () => {
    const vs = PARSE.version_sensitive as {
      string_from_value: Array<{ value: ValueSpec; canonical: string; test: string }>;
      parse_then_string: Array<{ input: string; canonical: string }>;
      arithmetic_then_string: Array<{ expr: string; canonical: string; json: string }>;
    };
    const fiveTo70 = (5n ** 70n).toString();
    // Go expression -> String() in v1.35.4. Past E / below n (DecimalSI) or past Ei (BinarySI) there is
    // no suffix and released CanonicalizeBytes prints the mantissa alone.
    const stringFromValue135: Record<string, string> = {
      'decQuantity(1, 18, DecimalSI)': '1E', // same in 1.37
      'decQuantity(1, 21, DecimalSI)': '1', // 1.37: 1e21
      'decQuantity(5, 21, DecimalSI)': '5', // 1.37: 5e21
      'decQuantity(1, 24, DecimalSI)': '1', // 1.37: 1e24
      'decQuantity(1, 70, BinarySI)': fiveTo70, // 10^70 = 1024^7 * 5^70, no suffix for 1024^7; 1.37: 10e69
      'decQuantity(2, 70, BinarySI)': (2n * 5n ** 70n).toString(), // 1.37: 20e69
      'decQuantity(1, 72, BinarySI)': (4n * 5n ** 72n).toString(), // 1.37: 1e72
      'intQuantity(2000, 0, BinarySI)': '2000', // same in 1.37
      'intQuantity(-2000, 0, BinarySI)': '-2000',
      'decQuantity(2000, 0, BinarySI)': '2000',
      'decQuantity(-2000, 0, BinarySI)': '-2000',
      'decQuantity(1, -12, DecimalSI)': '1', // 1.37: 1e-12
      'decQuantity(1, -10, DecimalSI)': '100', // 1.37: 100e-12
    };
    for (const row of vs.string_from_value) {
      it(`${row.value.go}: v1.35.4 prints ${JSON.stringify(stringFromValue135[row.value.go])} (1.37: ${JSON.stringify(row.canonical)})`, () => {
        expect(stringFromValue135).toHaveProperty([row.value.go]);
        const q = build(row.value);
        expect(q.toString()).toBe(stringFromValue135[row.value.go]);
        expect(q.format).toBe(row.value.format);
      });
    }

    const parseThenString135: Record<string, string> = {
      '1e21': '1e21',
      '1000E': '1', // 1.37: 1e21
      '5e21': '5e21',
      '5000E': '5', // 1.37: 5e21
      '1e24': '1e24',
      '1000000E': '1', // 1.37: 1e24
      '10e69': '10e69',
      '20e69': '20e69',
      '1e72': '1e72',
    };
    for (const row of vs.parse_then_string) {
      it(`ParseQuantity(${JSON.stringify(row.input)}): v1.35.4 prints ${JSON.stringify(parseThenString135[row.input])} (1.37: ${JSON.stringify(row.canonical)})`, () => {
        expect(parseThenString135).toHaveProperty([row.input]);
        const q = Quantity.parse(row.input);
        expect(q.toString()).toBe(parseThenString135[row.input]);
        // the value itself is exact either way
        expect(q.toDecimalString()).toBe(Quantity.parse(row.canonical).toDecimalString());
      });
    }

    for (const row of vs.arithmetic_then_string) {
      it(`${row.expr}: v1.35.4 prints "1" (1.37: ${JSON.stringify(row.canonical)})`, () => {
        expect(row.expr).toBe('MustParse("1Ei"); q.Mul(1024)');
        const { quantity, ok } = Quantity.parse('1Ei').mulChecked(1024);
        expect(ok).toBe(false); // inf.Dec unscaled 2^70 * 10^9 does not fit an int64
        expect(quantity.format).toBe('BinarySI');
        expect(quantity.toDecimalString()).toBe(row.canonical);
        expect(quantity.toString()).toBe('1'); // 2^70 = 1 * 1024^7: no suffix in v1.35.4
        expect(JSON.stringify(quantity)).toBe('"1"');
      });
    }
  });
});

describe('quantity-compare.json', () => {
  it('has exactly the sections this file runs', () => {
    expectSections(COMPARE, [
      'cmp',
      'cmp_values',
      'equal',
      'add',
      'add_values',
      'sub',
      'sub_values',
      'neg',
      'neg_values',
      'mul_values',
      'version_sensitive',
    ]);
  });

  describe('cmp: MustParse(a).Cmp(MustParse(b))', () => {
    for (const row of COMPARE.cmp as Array<{ a: string; b: string; cmp: number }>) {
      it(`${row.a} <=> ${row.b}`, () => {
        expect(Quantity.parse(row.a).cmp(Quantity.parse(row.b))).toBe(row.cmp);
        expect(Quantity.parse(row.b).cmp(Quantity.parse(row.a))).toBe(-row.cmp || 0);
      });
    }
  });

  describe('cmp_values: a.Cmp(b) and b.Cmp(a)', () => {
    for (const row of COMPARE.cmp_values as Array<{ a: ValueSpec; b: ValueSpec; cmp: number }>) {
      it(`${row.a.go} <=> ${row.b.go}`, () => {
        const a = build(row.a);
        const b = build(row.b);
        expect(a.cmp(b)).toBe(row.cmp);
        expect(b.cmp(a)).toBe(-row.cmp || 0);
        expect(a.equals(b)).toBe(row.cmp === 0);
      });
    }
  });

  describe('equal: QuantityPtrEqual(&MustParse(a), &MustParse(b))', () => {
    for (const row of COMPARE.equal as Array<{ a: string; b: string; equal: boolean }>) {
      it(`${row.a} == ${row.b}`, () => {
        expect(Quantity.parse(row.a).equals(Quantity.parse(row.b))).toBe(row.equal);
      });
    }
  });

  describe('add: MustParse(a).Add(MustParse(b)).String() (the non-zero operand keeps its suffix)', () => {
    for (const row of COMPARE.add as Array<{ a: string; b: string; sum: string }>) {
      it(`${row.a} + ${row.b}`, () => {
        expect(Quantity.parse(row.a).add(Quantity.parse(row.b)).toString()).toBe(row.sum);
      });
    }
  });

  describe("add_values: a.Add(b) has the value sum; the Format is a's (b's when a is zero)", () => {
    for (const row of COMPARE.add_values as Array<{ a: ValueSpec; b: ValueSpec; sum: ValueSpec }>) {
      it(`${row.a.go} + ${row.b.go}`, () => {
        const a = build(row.a);
        const b = build(row.b);
        const sum = a.add(b);
        expectValue(sum, row.sum);
        expect(sum.format).toBe(a.isZero() ? b.format : a.format);
      });
    }
  });

  describe('sub: MustParse(a).Sub(MustParse(b)).String()', () => {
    for (const row of COMPARE.sub as Array<{
      a: string;
      b: string;
      diff: string | null;
      diff_equals_string_of?: string;
    }>) {
      it(`${row.a} - ${row.b}`, () => {
        let expected = row.diff;
        if (expected === null) {
          expect(row.diff_equals_string_of).toBe('Neg(MustParse(b))');
          expected = Quantity.parse(row.b).neg().toString();
        }
        expect(Quantity.parse(row.a).sub(Quantity.parse(row.b)).toString()).toBe(expected);
      });
    }
  });

  describe("sub_values: a.Sub(b) has the value diff; the Format is a's (b's when a is zero)", () => {
    for (const row of COMPARE.sub_values as Array<{ a: ValueSpec; b: ValueSpec; diff: ValueSpec }>) {
      it(`${row.a.go} - ${row.b.go}`, () => {
        const a = build(row.a);
        const b = build(row.b);
        const diff = a.sub(b);
        expectValue(diff, row.diff);
        expect(diff.format).toBe(a.isZero() ? b.format : a.format);
      });
    }
  });

  describe('neg: a.Neg().String()', () => {
    for (const row of COMPARE.neg as Array<{ a: ValueSpec; neg_canonical: string }>) {
      it(row.a.go, () => {
        expect(build(row.a).neg().toString()).toBe(row.neg_canonical);
      });
    }
  });

  describe('neg_values: a.Neg() has the value neg', () => {
    for (const row of COMPARE.neg_values as Array<{ a: ValueSpec; neg: ValueSpec }>) {
      it(row.a.go, () => {
        const a = build(row.a);
        const n = a.neg();
        expectValue(n, row.neg);
        expect(n.format).toBe(a.format);
      });
    }
  });

  describe('mul_values: a.Mul(b) returns ok and has the value product', () => {
    for (const row of COMPARE.mul_values as Array<{ a: ValueSpec; b: string; product: ValueSpec; ok: boolean }>) {
      it(`${row.a.go} * ${row.b}`, () => {
        const a = build(row.a);
        const { quantity, ok } = a.mulChecked(BigInt(row.b));
        expect(ok).toBe(row.ok);
        expectValue(quantity, row.product);
        expect(quantity.format).toBe(a.format);
        expect(a.mul(BigInt(row.b)).cmp(quantity)).toBe(0);
      });
    }
  });

  describe('version_sensitive (Kubernetes 1.37 rows; we assert the v1.35.4 behaviour: the int64 fast path wraps at -2^63)', () => {
    const MOST_NEGATIVE = -(1n << 63n);
    const int = (v: bigint, scale: number, format: QuantityFormat = 'DecimalSI') =>
      Quantity.fromScaled(v, scale, format);
    // expr -> [the Quantity the expression computes, String() in v1.35.4, Format]
    const rows135: Record<string, () => [Quantity, string, QuantityFormat]> = {
      'intQuantity(mostNegative, 0, DecimalSI).Neg()': () => [
        int(MOST_NEGATIVE, 0).neg(),
        '-9223372036854775808',
        'DecimalSI',
      ],
      'Quantity{Format: DecimalSI}.Sub(intQuantity(mostNegative, 0, DecimalSI))': () => [
        Quantity.zero('DecimalSI').sub(int(MOST_NEGATIVE, 0)),
        '-9223372036854775808',
        'DecimalSI',
      ],
      'intQuantity(1, 0, DecimalSI).Sub(intQuantity(mostNegative, 0, DecimalSI))': () => [
        int(1n, 0).sub(int(MOST_NEGATIVE, 0)),
        '-9223372036854775807',
        'DecimalSI',
      ],
      'intQuantity(mostNegative, Milli, DecimalSI).Neg()': () => [
        int(MOST_NEGATIVE, -3).neg(),
        '-9223372036854775808m',
        'DecimalSI',
      ],
      'intQuantity(1, Milli, DecimalSI).Sub(intQuantity(mostNegative, Milli, DecimalSI))': () => [
        int(1n, -3).sub(int(MOST_NEGATIVE, -3)),
        '-9223372036854775807m',
        'DecimalSI',
      ],
      'Quantity{Format: DecimalSI}.Sub(*NewScaledQuantity(mostNegative, Milli))': () => [
        Quantity.zero('DecimalSI').sub(Quantity.fromScaled(MOST_NEGATIVE, -3)),
        '-9223372036854775808m',
        'DecimalSI',
      ],
      'intQuantity(1, 1, DecimalSI).Sub(intQuantity(mostNegative, 0, DecimalSI))': () => [
        int(1n, 1).sub(int(MOST_NEGATIVE, 0)),
        '-9223372036854775798',
        'DecimalSI',
      ],
      // released removeInt64Factors cannot negate -2^63, so no Ei comes out of the int64 form
      'Quantity{Format: DecimalSI}.Sub(intQuantity(mostNegative, 0, BinarySI))': () => [
        Quantity.zero('DecimalSI').sub(int(MOST_NEGATIVE, 0, 'BinarySI')),
        '-9223372036854775808',
        'BinarySI',
      ],
    };
    for (const row of COMPARE.version_sensitive.rows as Array<{
      expr: string;
      canonical: string;
      format_after?: string;
    }>) {
      it(`${row.expr} (1.37: ${row.canonical})`, () => {
        expect(rows135).toHaveProperty([row.expr]);
        const [q, v135, format] = rows135[row.expr]!();
        expect(q.toString()).toBe(v135);
        expect(q.format).toBe(format);
        if (row.format_after !== undefined) expect(q.format).toBe(row.format_after);
      });
    }

    it('the same operations on the arbitrary-precision form do not wrap (as in every release)', () => {
      const mostNegative = Quantity.fromDecimal(MOST_NEGATIVE, 0);
      expect(mostNegative.neg().toString()).toBe('9223372036854775808');
      expect(Quantity.zero().sub(mostNegative).toString()).toBe('9223372036854775808');
      expect(Quantity.fromDecimal(MOST_NEGATIVE, 0, 'BinarySI').toString()).toBe('-8Ei');
    });
  });
});
