import { describe, expect, it } from 'vitest';
import { isolationPolicyFor, isolationPolicyMatches, limitRangeFor, limitRangeMatches, storedLimitItem } from '../../src/render/namespace-policies.js';
import type { Project } from '../../src/validate/types.js';

const project = (spec: Partial<Project['spec']> = {}): Project => ({
  apiVersion: 'tenantgate.io/v1alpha1',
  kind: 'Project',
  metadata: { name: 'payments' },
  spec: { tenant: 'acme', ...spec },
});

const limits = { default: { cpu: '500m', memory: '512Mi' }, defaultRequest: { cpu: '100m' }, max: { cpu: '2', memory: '2Gi' } };

describe('the LimitRange of a project namespace', () => {
  it('is absent without namespaceDefaults.limitRange (or with an empty one)', () => {
    expect(limitRangeFor(project(), 'payments-api')).toBeUndefined();
    expect(limitRangeFor(project({ namespaceDefaults: { limitRange: { max: {} } } }), 'payments-api')).toBeUndefined();
  });

  it('carries the declared limits for containers, labelled for the project', () => {
    const lr = limitRangeFor(project({ namespaceDefaults: { limitRange: limits } }), 'payments-api')!;
    expect(lr.metadata).toEqual({ name: 'tenantgate-limits', namespace: 'payments-api', labels: { 'tenantgate.io/project': 'payments', 'app.kubernetes.io/managed-by': 'tenantgate' } });
    expect(lr.spec.limits).toEqual([{ type: 'Container', ...limits }]);
  });

  it('is completed as the apiserver stores it: default from max, defaultRequest from default, else min', () => {
    expect(storedLimitItem({ max: { cpu: '2', memory: '2Gi' }, min: { memory: '64Mi', storage: '1Gi' }, default: { cpu: '1' } })).toEqual({
      default: { cpu: '1', memory: '2Gi' },
      defaultRequest: { cpu: '1', memory: '2Gi', storage: '1Gi' },
      max: { cpu: '2', memory: '2Gi' },
      min: { memory: '64Mi', storage: '1Gi' },
    });
  });

  it('matches what the apiserver stored (defaulted, quantities canonicalised) and nothing else', () => {
    const desired = limitRangeFor(project({ namespaceDefaults: { limitRange: limits } }), 'payments-api')!;
    const stored = {
      metadata: { labels: { ...desired.metadata.labels, 'argocd.argoproj.io/instance': 'x' } },
      spec: { limits: [{ type: 'Container', default: { cpu: '0.5', memory: '512Mi' }, defaultRequest: { cpu: '100m', memory: '512Mi' }, max: { cpu: '2', memory: '2Gi' } }] },
    };
    expect(limitRangeMatches(stored, desired)).toBe(true);
    // an edited max, a dropped label, an extra item: each is a change to repair
    expect(limitRangeMatches({ ...stored, spec: { limits: [{ ...stored.spec.limits[0]!, max: { cpu: '64', memory: '2Gi' } }] } }, desired)).toBe(false);
    expect(limitRangeMatches({ ...stored, metadata: { labels: {} } }, desired)).toBe(false);
    expect(limitRangeMatches({ ...stored, spec: { limits: [...stored.spec.limits, { type: 'Container' }] } }, desired)).toBe(false);
    expect(limitRangeMatches({ ...stored, spec: { limits: [{ ...stored.spec.limits[0]!, maxLimitRequestRatio: { cpu: '10' } } as never] } }, desired)).toBe(false);
  });
});

describe('the isolation NetworkPolicy of a project namespace', () => {
  it('is absent without networkIsolation', () => {
    expect(isolationPolicyFor(project(), 'payments-api')).toBeUndefined();
  });

  it('admits ingress from the project namespaces only', () => {
    const np = isolationPolicyFor(project({ networkIsolation: true }), 'payments-api')!;
    expect(np.metadata.name).toBe('tenantgate-isolation');
    expect(np.spec).toEqual({ podSelector: {}, policyTypes: ['Ingress'], ingress: [{ from: [{ namespaceSelector: { matchLabels: { 'tenantgate.io/project': 'payments' } } }] }] });
  });

  it('matches the same spec in any key order; an added rule is a change', () => {
    const desired = isolationPolicyFor(project({ networkIsolation: true }), 'payments-api')!;
    const stored = { metadata: { labels: desired.metadata.labels }, spec: { policyTypes: ['Ingress'], ingress: desired.spec.ingress, podSelector: {} } };
    expect(isolationPolicyMatches(stored, desired)).toBe(true);
    expect(isolationPolicyMatches({ ...stored, spec: { ...stored.spec, ingress: [...desired.spec.ingress, {}] } }, desired)).toBe(false);
    expect(isolationPolicyMatches({ ...stored, spec: { ...stored.spec, podSelector: { matchLabels: { app: 'x' } } } }, desired)).toBe(false);
  });
});
