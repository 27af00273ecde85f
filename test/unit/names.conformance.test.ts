/**
 * Conformance of src/validate/names.ts with apimachinery's validation_test.go tables, copied in
 * test/conformance/k8s-vectors (dns1123-label.json, qualified-name.json). Every row runs:
 * valid strings give no message, invalid ones at least one.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { isDNS1123Label, isDNS1123Subdomain, isQualifiedName, isValidLabelValue } from '../../src/validate/names.js';

const VECTORS = new URL('../conformance/k8s-vectors/', import.meta.url);
const load = (name: string): unknown => JSON.parse(readFileSync(new URL(name, VECTORS), 'utf8'));

interface Table {
  valid: string[];
  invalid: string[];
  long_cases_as_written?: { valid: string[]; invalid: string[] };
}

const LABEL = load('dns1123-label.json') as Table & { extra_dns1123_subdomain: Table };
const QNAME = load('qualified-name.json') as { qualified_name: Table; label_value: Table };

const show = (s: string): string =>
  s.length > 40 ? `${JSON.stringify(s.slice(0, 12))}… (${s.length} characters)` : JSON.stringify(s);

function runTable(name: string, table: Table, validate: (value: string) => string[]): void {
  describe(name, () => {
    for (const value of table.valid) {
      it(`valid ${show(value)}`, () => {
        expect(validate(value)).toEqual([]);
      });
    }
    for (const value of table.invalid) {
      it(`invalid ${show(value)}`, () => {
        const errs = validate(value);
        expect(errs.length).toBeGreaterThan(0);
        for (const e of errs) expect(e).toMatch(/\S/);
      });
    }
    it('long cases are written out as their Go expressions say', () => {
      // strings.Repeat("a", n) [+ "/" + strings.Repeat("b", m)] [+ "/abc"]
      const expand = (expr: string): string =>
        expr
          .split(' + ')
          .map((part) => {
            const m = /^strings\.Repeat\("(.)", (\d+)\)$/.exec(part);
            if (m) return m[1]!.repeat(Number(m[2]));
            return JSON.parse(part) as string;
          })
          .join('');
      for (const expr of table.long_cases_as_written?.valid ?? []) expect(table.valid).toContain(expand(expr));
      for (const expr of table.long_cases_as_written?.invalid ?? []) expect(table.invalid).toContain(expand(expr));
    });
  });
}

runTable('dns1123-label.json: IsDNS1123Label', LABEL, isDNS1123Label);
runTable(
  'dns1123-label.json extra_dns1123_subdomain: IsDNS1123Subdomain',
  LABEL.extra_dns1123_subdomain,
  isDNS1123Subdomain,
);
runTable('qualified-name.json qualified_name: IsQualifiedName', QNAME.qualified_name, isQualifiedName);
runTable('qualified-name.json label_value: IsValidLabelValue', QNAME.label_value, isValidLabelValue);

describe('messages as apimachinery words them', () => {
  it('IsDNS1123Label', () => {
    expect(isDNS1123Label('a'.repeat(64))).toEqual(['must be no more than 63 characters']);
    expect(isDNS1123Label('a.b')).toEqual(['must not contain dots']);
    expect(isDNS1123Label('A')).toEqual([
      "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
    ]);
  });

  it('IsDNS1123Subdomain', () => {
    expect(isDNS1123Subdomain('a..b')).toEqual([
      "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
    ]);
    expect(isDNS1123Subdomain('a'.repeat(254))).toEqual(['must be no more than 253 characters']);
  });

  it('IsQualifiedName', () => {
    expect(isQualifiedName('/simple')).toEqual(['prefix part must be non-empty']);
    expect(isQualifiedName('example.com/')).toEqual([
      'name part must be non-empty',
      "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
    ]);
    expect(isQualifiedName('Example.com/abc')[0]).toMatch(/^prefix part a lowercase RFC 1123 subdomain/);
    expect(isQualifiedName('only/one/slash')).toHaveLength(1);
    expect(isQualifiedName('only/one/slash')[0]).toMatch(
      /^a qualified name must consist of .* with an optional DNS subdomain prefix and '\/' \(e\.g\. 'example\.com\/MyName'\)$/,
    );
    expect(isQualifiedName('a'.repeat(64))).toEqual(['name part must be no more than 63 characters']);
  });

  it('IsValidLabelValue', () => {
    expect(isValidLabelValue('a'.repeat(64))).toEqual(['must be no more than 63 characters']);
    expect(isValidLabelValue('-a')).toEqual([
      "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
    ]);
  });

  it('counts length in UTF-8 bytes, as Go does', () => {
    // 32 × "ā" is 32 characters but 64 bytes
    expect(isValidLabelValue('ā'.repeat(32))).toContain('must be no more than 63 characters');
  });
});
