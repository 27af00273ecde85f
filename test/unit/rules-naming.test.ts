/**
 * N1–N4 through the offline entry point `validateDeclarations`, the one `tenantgate
 * validate` and `tenantgate render` use: a failing and a passing case each, with rule id, field path
 * and the parts of the message a user needs (the object, the values, what is allowed).
 */
import { TEST_NOW } from '../support/instant.js';
import { aProject } from '../support/fixtures.js';
import { describe, expect, it } from 'vitest';
import { configFromObject, DEFAULT_CONFIG, type TenantgateConfig } from '../../src/config/config.js';
import { validateDeclarations } from '../../src/validate/offline.js';
import type { Project, ProjectSpec, Violation } from '../../src/validate/types.js';

const project = (name: string, spec: Partial<ProjectSpec> = {}): Project => aProject(name, spec);

function check(projects: Project[], config: TenantgateConfig = DEFAULT_CONFIG): Violation[] {
  return validateDeclarations(projects, config, TEST_NOW);
}

function only(violations: Violation[], rule: string): Violation[] {
  return violations.filter((v) => v.rule === rule);
}

describe('N1: a Project name is a DNS-1123 label of at most 40 characters', () => {
  it('rejects a name with upper case and underscores, quoting the name and the DNS-1123 rule', () => {
    const violations = check([project('Payments_Team')]);
    expect(violations.map((v) => v.rule)).toEqual(['N1']);
    const [v] = violations;
    expect(v!.path).toEqual(['metadata', 'name']);
    expect(v!.document).toBe(0);
    expect(v!.message).toContain('"Payments_Team"');
    expect(v!.message).toContain('lowercase RFC 1123 label');
    expect(v!.message).toContain("'my-name'"); // the examples apimachinery gives
  });

  it('rejects 41 characters and says the limit and the length', () => {
    const name = 'a'.repeat(41);
    const [v, ...rest] = only(check([project(name)]), 'N1');
    expect(rest).toEqual([]);
    expect(v!.message).toContain(`"${name}"`);
    expect(v!.message).toContain('no more than 40 characters (has 41)');
  });

  it('rejects a name ending in a dash', () => {
    expect(only(check([project('payments-')]), 'N1')).toHaveLength(1);
  });

  it('accepts a 40-character DNS-1123 label and a short one', () => {
    expect(check([project('a'.repeat(40))])).toEqual([]);
    expect(check([project('payments')])).toEqual([]);
    expect(check([project('p2')])).toEqual([]);
  });
});

describe('N2: a namespace is a DNS-1123 label with the project prefix plus a suffix, not reserved', () => {
  it('rejects a namespace without the prefix, naming the namespace, the project and the prefix', () => {
    const violations = check([project('shop', { namespaces: [{ name: 'shop-api' }, { name: 'checkout' }] })]);
    expect(violations.map((v) => v.rule)).toEqual(['N2']);
    expect(violations[0]!.path).toEqual(['spec', 'namespaces', 1, 'name']);
    expect(violations[0]!.message).toContain('namespace "checkout" is not allowed');
    expect(violations[0]!.message).toContain(
      'project shop must start with "shop-" followed by a non-empty suffix (e.g. shop-api)',
    );
  });

  it('rejects the bare prefix (an empty suffix)', () => {
    const [v] = check([project('shop', { namespaces: [{ name: 'shop-' }] })]);
    expect(v!.rule).toBe('N2');
    expect(v!.message).toContain('"shop-"');
    expect(v!.message).toContain('non-empty suffix');
  });

  it('rejects a name over 63 characters and an invalid DNS label', () => {
    const long = `shop-${'x'.repeat(59)}`; // 64 characters
    const violations = check([project('shop', { namespaces: [{ name: long }, { name: 'shop-API' }] })]);
    expect(violations.map((v) => [v.rule, v.path])).toEqual([
      ['N2', ['spec', 'namespaces', 0, 'name']],
      ['N2', ['spec', 'namespaces', 1, 'name']],
    ]);
    expect(violations[0]!.message).toContain('must be no more than 63 characters');
    expect(violations[1]!.message).toContain('"shop-API"');
  });

  it('rejects reserved prefixes even when they are the project prefix', () => {
    const [v] = check([project('kube', { namespaces: [{ name: 'kube-tools' }] })]);
    expect(v!.rule).toBe('N2');
    expect(v!.message).toContain('the prefix "kube-" is reserved');
  });

  it('follows the configured prefix template', () => {
    const config = configFromObject({ namespacePrefix: 'team-{project}-' });
    expect(check([project('shop', { namespaces: [{ name: 'team-shop-api' }] })], config)).toEqual([]);
    const [v] = check([project('shop', { namespaces: [{ name: 'shop-api' }] })], config);
    expect(v!.rule).toBe('N2');
    expect(v!.message).toContain('must start with "team-shop-"');
  });

  it('accepts prefixed namespaces', () => {
    expect(check([project('shop', { namespaces: [{ name: 'shop-api' }, { name: 'shop-web-2' }] })])).toEqual([]);
  });
});

describe('N3: a namespace belongs to at most one project', () => {
  it('rejects a namespace declared twice in one project, pointing at the second entry', () => {
    const violations = check([project('shop', { namespaces: [{ name: 'shop-api' }, { name: 'shop-api' }] })]);
    expect(violations.map((v) => v.rule)).toEqual(['N3']);
    expect(violations[0]!.path).toEqual(['spec', 'namespaces', 1, 'name']);
    expect(violations[0]!.message).toContain('namespace shop-api is declared twice in project shop');
  });

  it('rejects a namespace declared by two projects, on both sides, naming both projects', () => {
    const violations = only(
      check([
        project('shop', { namespaces: [{ name: 'shop-api' }] }),
        project('web', { namespaces: [{ name: 'shop-api' }] }),
      ]),
      'N3',
    );
    expect(violations.map((v) => v.document)).toEqual([0, 1]);
    expect(violations[0]!.message).toContain('namespace shop-api is declared by project shop and by project web');
    expect(violations[1]!.message).toContain('namespace shop-api is declared by project web and by project shop');
    expect(violations[0]!.message).toContain('at most one project');
  });

  it('rejects a project declared twice, pointing at the first declaration', () => {
    const violations = check([project('shop'), project('web'), project('shop')]);
    expect(violations.map((v) => [v.rule, v.document])).toEqual([['N3', 2]]);
    expect(violations[0]!.message).toContain(
      'project shop is declared twice (the first declaration is document 1 of the input)',
    );
  });

  it('accepts the same namespace name placed on two different clusters of one project', () => {
    expect(
      check([
        project('shop', {
          namespaces: [
            { name: 'shop-api', cluster: 'prod-eu' },
            { name: 'shop-api', cluster: 'prod-us' },
          ],
        }),
      ]),
    ).toEqual([]);
  });

  it('accepts distinct namespaces in distinct projects', () => {
    expect(
      check([
        project('shop', { namespaces: [{ name: 'shop-api' }] }),
        project('web', { namespaces: [{ name: 'web-api' }] }),
      ]),
    ).toEqual([]);
  });
});

describe('N4: project prefixes must not overlap', () => {
  it('rejects pay beside pay-eu, on both projects, with both prefixes and a namespace matching both', () => {
    const violations = check([project('pay'), project('pay-eu')]);
    expect(violations.map((v) => [v.rule, v.document, v.path])).toEqual([
      ['N4', 0, ['metadata', 'name']],
      ['N4', 1, ['metadata', 'name']],
    ]);
    expect(violations[0]!.message).toContain(
      'project pay: its namespace prefix "pay-" overlaps the prefix "pay-eu-" of project pay-eu',
    );
    expect(violations[0]!.message).toContain('a namespace pay-eu-x would match both');
    expect(violations[1]!.message).toContain(
      'project pay-eu: its namespace prefix "pay-eu-" overlaps the prefix "pay-" of project pay',
    );
  });

  it('accepts names that share letters but not a prefix (pay, payments, pay2)', () => {
    expect(check([project('pay'), project('payments'), project('pay2')])).toEqual([]);
  });

  it('with 2,000 projects reports exactly the one overlapping pair', () => {
    const projects = Array.from({ length: 2000 }, (_, i) =>
      project(`team-${String(i).padStart(4, '0')}`, { tenant: `tenant-${i}` }),
    );
    projects.push(project('team-1234-eu', { tenant: 'eu' }));
    const violations = check(projects);
    expect(violations.map((v) => [v.rule, v.document])).toEqual([
      ['N4', 1234],
      ['N4', 2000],
    ]);
    expect(violations[0]!.message).toContain(
      '"team-1234-" overlaps the prefix "team-1234-eu-" of project team-1234-eu',
    );
    expect(violations[1]!.message).toContain(
      'project team-1234-eu: its namespace prefix "team-1234-eu-" overlaps the prefix "team-1234-" of project team-1234',
    );
  });
});
