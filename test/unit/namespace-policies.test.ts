import { describe, expect, it } from 'vitest';
import {
  isolationPolicyFor,
  isolationPolicyMatches,
  limitRangeFor,
  limitRangeMatches,
  storedLimitItem,
} from '../../src/render/namespace-policies.js';
import type { Project } from '../../src/validate/types.js';
import { configFromObject, DEFAULT_CONFIG } from '../../src/config/config.js';
import { validateProjectSchema } from '../../src/validate/schema/validate-schema.js';

const project = (spec: Partial<Project['spec']> = {}): Project => ({
  apiVersion: 'tenantgate.io/v1alpha1',
  kind: 'Project',
  metadata: { name: 'payments' },
  spec: { tenant: 'acme', ...spec },
});

const limits = {
  default: { cpu: '500m', memory: '512Mi' },
  defaultRequest: { cpu: '100m' },
  max: { cpu: '2', memory: '2Gi' },
};

describe('the LimitRange of a project namespace', () => {
  it('is absent without namespaceDefaults.limitRange (or with an empty one)', () => {
    expect(limitRangeFor(project(), 'payments-api')).toBeUndefined();
    expect(limitRangeFor(project({ namespaceDefaults: { limitRange: { max: {} } } }), 'payments-api')).toBeUndefined();
  });

  it('carries the declared limits for containers, labelled for the project', () => {
    const lr = limitRangeFor(project({ namespaceDefaults: { limitRange: limits } }), 'payments-api')!;
    expect(lr.metadata).toEqual({
      name: 'tenantgate-limits',
      namespace: 'payments-api',
      labels: { 'tenantgate.io/project': 'payments', 'app.kubernetes.io/managed-by': 'tenantgate' },
    });
    expect(lr.spec.limits).toEqual([{ type: 'Container', ...limits }]);
  });

  it('is completed as the apiserver stores it: default from max, defaultRequest from default, else min', () => {
    expect(
      storedLimitItem({
        max: { cpu: '2', memory: '2Gi' },
        min: { memory: '64Mi', storage: '1Gi' },
        default: { cpu: '1' },
      }),
    ).toEqual({
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
      spec: {
        limits: [
          {
            type: 'Container',
            default: { cpu: '0.5', memory: '512Mi' },
            defaultRequest: { cpu: '100m', memory: '512Mi' },
            max: { cpu: '2', memory: '2Gi' },
          },
        ],
      },
    };
    expect(limitRangeMatches(stored, desired)).toBe(true);
    // an edited max, a dropped label, an extra item: each is a change to repair
    expect(
      limitRangeMatches(
        { ...stored, spec: { limits: [{ ...stored.spec.limits[0]!, max: { cpu: '64', memory: '2Gi' } }] } },
        desired,
      ),
    ).toBe(false);
    expect(limitRangeMatches({ ...stored, metadata: { labels: {} } }, desired)).toBe(false);
    expect(
      limitRangeMatches({ ...stored, spec: { limits: [...stored.spec.limits, { type: 'Container' }] } }, desired),
    ).toBe(false);
    expect(
      limitRangeMatches(
        { ...stored, spec: { limits: [{ ...stored.spec.limits[0]!, maxLimitRequestRatio: { cpu: '10' } } as never] } },
        desired,
      ),
    ).toBe(false);
  });
});

describe('the isolation NetworkPolicy of a project namespace', () => {
  it('is absent without networkIsolation', () => {
    expect(isolationPolicyFor(project(), 'payments-api')).toBeUndefined();
  });

  const own = { namespaceSelector: { matchLabels: { 'tenantgate.io/project': 'payments' } } };
  const dns = {
    to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } } }],
    ports: [
      { protocol: 'UDP', port: 53 },
      { protocol: 'TCP', port: 53 },
    ],
  };
  const named = (name: string) => ({ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': name } } });
  // The tenant label and a project label: a namespace outside projects may carry any tenant label.
  const sameTenant = {
    namespaceSelector: {
      matchLabels: { 'tenantgate.io/tenant': 'acme' },
      matchExpressions: [{ key: 'tenantgate.io/project', operator: 'Exists' }],
    },
  };

  it('by default: ingress from the project namespaces only; egress to them and to DNS in kube-system only', () => {
    const np = isolationPolicyFor(project({ networkIsolation: true }), 'payments-api')!;
    expect(np.metadata.name).toBe('tenantgate-isolation');
    expect(np.spec).toEqual({
      podSelector: {},
      policyTypes: ['Ingress', 'Egress'],
      ingress: [{ from: [own] }],
      egress: [{ to: [own] }, dns],
    });
  });

  it("adds the declared allow-from (the tenant's other projects, named namespaces) and egress (namespaces, CIDRs), sorted and without repeats", () => {
    const network = {
      allowFrom: { sameTenant: true, namespaces: ['ingress-nginx', 'monitoring', 'ingress-nginx'] },
      egress: { namespaces: ['shared-db'], cidrs: ['203.0.113.0/24', '10.0.0.0/8'] },
    };
    expect(isolationPolicyFor(project({ networkIsolation: true, network }), 'payments-api')!.spec).toEqual({
      podSelector: {},
      policyTypes: ['Ingress', 'Egress'],
      ingress: [{ from: [own, sameTenant, named('ingress-nginx'), named('monitoring')] }],
      egress: [
        { to: [own] },
        dns,
        { to: [named('shared-db'), { ipBlock: { cidr: '10.0.0.0/8' } }, { ipBlock: { cidr: '203.0.113.0/24' } }] },
      ],
    });
  });

  it("takes tenantgate.yaml's network field by field: a Project field replaces the default", () => {
    const defaults = { allowFrom: { namespaces: ['ingress-nginx'] }, egress: { cidrs: ['10.0.0.0/8'] } };
    const byDefault = isolationPolicyFor(project({ networkIsolation: true }), 'payments-api', defaults)!.spec;
    expect(byDefault.ingress).toEqual([{ from: [own, named('ingress-nginx')] }]);
    expect(byDefault.egress).toEqual([{ to: [own] }, dns, { to: [{ ipBlock: { cidr: '10.0.0.0/8' } }] }]);
    const replaced = isolationPolicyFor(
      project({ networkIsolation: true, network: { egress: { cidrs: [] }, allowFrom: { namespaces: ['edge'] } } }),
      'payments-api',
      defaults,
    )!.spec;
    expect(replaced.ingress).toEqual([{ from: [own, named('edge')] }]);
    expect(replaced.egress).toEqual([{ to: [own] }, dns]);
  });

  it('matches the same spec in any key order; an added rule is a change', () => {
    const desired = isolationPolicyFor(project({ networkIsolation: true }), 'payments-api')!;
    const stored = {
      metadata: { labels: desired.metadata.labels },
      spec: {
        egress: desired.spec.egress,
        policyTypes: ['Ingress', 'Egress'],
        ingress: desired.spec.ingress,
        podSelector: {},
      },
    };
    expect(isolationPolicyMatches(stored, desired)).toBe(true);
    expect(
      isolationPolicyMatches({ ...stored, spec: { ...stored.spec, ingress: [...desired.spec.ingress, {}] } }, desired),
    ).toBe(false);
    expect(
      isolationPolicyMatches(
        {
          ...stored,
          spec: { ...stored.spec, egress: [...desired.spec.egress, { to: [{ ipBlock: { cidr: '0.0.0.0/0' } }] }] },
        },
        desired,
      ),
    ).toBe(false);
    expect(isolationPolicyMatches({ ...stored, spec: { ...stored.spec, policyTypes: ['Ingress'] } }, desired)).toBe(
      false,
    );
    expect(
      isolationPolicyMatches(
        { ...stored, spec: { ...stored.spec, podSelector: { matchLabels: { app: 'x' } } } },
        desired,
      ),
    ).toBe(false);
  });
});

describe('spec.network and tenantgate.yaml network: schema errors name the field, the value and what is allowed', () => {
  it('the Project schema takes spec.network and refuses bad CIDRs and namespace names', () => {
    const withNetwork = (network: unknown) =>
      project({ networkIsolation: true, network: network as Project['spec']['network'] });
    expect(
      validateProjectSchema(
        withNetwork({
          allowFrom: { sameTenant: true, namespaces: ['ingress-nginx'] },
          egress: { cidrs: ['10.0.0.0/8'], namespaces: ['db'] },
        }),
      ),
    ).toEqual([]);
    const bad = validateProjectSchema(
      withNetwork({ egress: { cidrs: ['the internet'] }, allowFrom: { namespaces: ['Ingress_Nginx'] } }),
    );
    expect(bad.map((v) => v.rule)).toEqual(['S1', 'S1']);
    expect(bad.map((v) => v.message).join('\n')).toContain('spec.network.egress.cidrs[0]');
    expect(bad.map((v) => v.message).join('\n')).toContain('spec.network.allowFrom.namespaces[0]');
  });

  it('tenantgate.yaml: network is optional, closed, and checked', () => {
    expect(DEFAULT_CONFIG.network).toEqual({});
    expect(configFromObject({ network: { allowFrom: { sameTenant: true } } }).network).toEqual({
      allowFrom: { sameTenant: true },
    });
    expect(() => configFromObject({ network: { ingress: {} } })).toThrow(
      /network\.ingress is not a known key; allowed: egress, allowFrom/,
    );
    expect(() => configFromObject({ network: { egress: { cidrs: ['anywhere'] } } })).toThrow(
      /network\.egress\.cidrs\[0\] is "anywhere"; allowed: a CIDR/,
    );
  });
});
