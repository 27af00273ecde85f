/** T1 offline: `validateDeclarations(projects, config, base)` compares with the base (git HEAD). */
import { TEST_NOW } from '../support/instant.js';
import { aProject } from '../support/fixtures.js';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { validateDeclarations } from '../../src/validate/offline.js';
import type { Project } from '../../src/validate/types.js';

const project = (name: string, tenant: string, extra: Partial<Project['spec']> = {}): Project =>
  aProject(name, { tenant, ...extra });

describe('T1: spec.tenant is immutable', () => {
  it('rejects a changed tenant, at spec.tenant, with the old and the new value', () => {
    const violations = validateDeclarations([project('shop', 'globex')], DEFAULT_CONFIG, TEST_NOW, [
      project('shop', 'acme'),
    ]);
    expect(violations).toHaveLength(1);
    const [v] = violations;
    expect(v!.rule).toBe('T1');
    expect(v!.path).toEqual(['spec', 'tenant']);
    expect(v!.document).toBe(0);
    expect(v!.message).toContain('Project shop');
    expect(v!.message).toContain('was "acme", now "globex"');
    expect(v!.message).toContain('create a new project for another tenant');
  });

  it('reports the changed project only, among several', () => {
    const base = [project('shop', 'acme'), project('web', 'acme')];
    const violations = validateDeclarations(
      [project('web', 'acme'), project('shop', 'initech')],
      DEFAULT_CONFIG,
      TEST_NOW,
      base,
    );
    expect(violations.map((v) => [v.rule, v.document])).toEqual([['T1', 1]]);
  });

  it('accepts other changes to a project whose tenant stays', () => {
    const before = project('shop', 'acme', { displayName: 'Shop' });
    const after = project('shop', 'acme', {
      displayName: 'Shop (new)',
      quota: { hard: { pods: '10' } },
      namespaceDefaults: { quota: { hard: { pods: '5' } } },
    });
    expect(validateDeclarations([after], DEFAULT_CONFIG, TEST_NOW, [before])).toEqual([]);
  });

  it('accepts a new project (not in the base) and a tenant shared with other projects', () => {
    expect(
      validateDeclarations([project('shop', 'globex')], DEFAULT_CONFIG, TEST_NOW, [project('web', 'acme')]),
    ).toEqual([]);
    expect(validateDeclarations([project('shop', 'acme')], DEFAULT_CONFIG, TEST_NOW, [])).toEqual([]);
  });
});
