import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { CRD_PATH, renderCrdYaml } from '../../src/validate/schema/crd.js';
import { PROJECT_SCHEMA } from '../../src/validate/schema/project-schema.js';
import { validateProjectSchema } from '../../src/validate/schema/validate-schema.js';

/** A full Project example (spec part; status omitted: its `...` placeholders are not data). */
const FULL_EXAMPLE = `
apiVersion: tenantgate.io/v1alpha1
kind: Project
metadata:
  name: payments                 # DNS-1123 label, at most 40 characters
spec:
  tenant: acme                   # required, DNS-1123 label, immutable
  displayName: Payments team
  owners:                        # who may self-serve namespaces and quotas in this project
    - {kind: Group, name: "acme:payments-admins"}
    - {kind: User, name: "alice@acme.example"}
    - {kind: ServiceAccount, namespace: ci, name: deployer}
  quota:
    hard:
      requests.cpu: "20"
      requests.memory: 64Gi
      limits.cpu: "40"
      pods: "200"
  clusters:                      # optional: a budget per cluster (TKE "ClusterHard")
    prod-eu: {quota: {hard: {requests.cpu: "12", requests.memory: 32Gi, limits.cpu: "24", pods: "100"}}}
  maxNamespaces: 10              # optional
  namespaceDefaults:             # applied to declared namespaces without a quota, and to self-service ones
    quota: {hard: {requests.cpu: "2", requests.memory: 4Gi, limits.cpu: "4", pods: "20"}}
    limitRange: {default: {cpu: 500m, memory: 512Mi}, defaultRequest: {cpu: 100m, memory: 128Mi}}
  networkIsolation: true         # render a NetworkPolicy that admits traffic only from the same project
  namespaces:                    # declared namespaces, rendered by the plugin
    - name: payments-api
      cluster: prod-eu           # optional: rendered only for that cluster
      quota: {hard: {requests.cpu: "8", requests.memory: 16Gi, limits.cpu: "16", pods: "50"}}
      labels: {team: api}
    - name: payments-batch
`;

const STATUS_EXAMPLE = {
  phase: 'Active',
  observedGeneration: 3,
  namespaceCount: 2,
  budgetUse: 'requests.cpu 10/20',
  allocated: { 'requests.cpu': '10' },
  used: { 'requests.cpu': '3200m' },
  headroom: { 'requests.cpu': '10' },
  namespaces: [{ name: 'payments-api', health: 'Healthy', phase: 'Active' }],
  conditions: [
    {
      type: 'Ready',
      status: 'True',
      reason: 'AllHealthy',
      message: '',
      lastTransitionTime: '2025-01-31T12:00:00Z',
      observedGeneration: 3,
    },
  ],
};

function example(): Record<string, any> {
  return parse(FULL_EXAMPLE) as Record<string, any>;
}

describe('Project schema and CRD', () => {
  it('the committed CRD is the generated one, byte for byte', () => {
    const committed = readFileSync(new URL(`../../${CRD_PATH}`, import.meta.url), 'utf8');
    expect(
      committed === renderCrdYaml(),
      `${CRD_PATH} differs from the schema in src/validate/schema/project-schema.ts: run \`make crd\` and commit the result`,
    ).toBe(true);
  });

  it('the CRD carries the schema, the names, the status subresource and the printer columns', () => {
    const crd = parse(renderCrdYaml());
    expect(crd.metadata.name).toBe('projects.tenantgate.io');
    expect(crd.spec.scope).toBe('Cluster');
    expect(crd.spec.names).toMatchObject({
      kind: 'Project',
      plural: 'projects',
      singular: 'project',
      shortNames: ['proj'],
    });
    const [version] = crd.spec.versions;
    expect(version).toMatchObject({ name: 'v1alpha1', served: true, storage: true, subresources: { status: {} } });
    expect(version.schema.openAPIV3Schema).toEqual(PROJECT_SCHEMA);
    expect(
      version.additionalPrinterColumns.map((c: { name: string; jsonPath: string }) => `${c.name}=${c.jsonPath}`),
    ).toEqual([
      'Tenant=.spec.tenant',
      'Phase=.status.phase',
      'Namespaces=.status.namespaceCount',
      'Budget use=.status.budgetUse',
      'Age=.metadata.creationTimestamp',
    ]);
    expect(version.schema.openAPIV3Schema.properties.spec['x-kubernetes-validations']).toEqual([
      expect.objectContaining({ rule: 'self.tenant == oldSelf.tenant', message: '[T1] spec.tenant is immutable' }),
    ]);
  });

  it('is a structural schema: a type everywhere, no $ref, additionalProperties never beside properties', () => {
    const problems: string[] = [];
    const walk = (s: Record<string, any>, at: string): void => {
      if ('$ref' in s) problems.push(`${at}: $ref`);
      if (s.type === undefined && s['x-kubernetes-int-or-string'] !== true) problems.push(`${at}: no type`);
      if (s.properties && s.additionalProperties !== undefined)
        problems.push(`${at}: properties and additionalProperties`);
      if (typeof s.additionalProperties === 'boolean') problems.push(`${at}: boolean additionalProperties`);
      if (s.type === 'array' && !s.items) problems.push(`${at}: array without items`);
      for (const [k, v] of Object.entries(s.properties ?? {})) walk(v as Record<string, any>, `${at}.${k}`);
      if (s.additionalProperties) walk(s.additionalProperties, `${at}[*]`);
      if (s.items) walk(s.items, `${at}[]`);
    };
    walk(PROJECT_SCHEMA as Record<string, any>, 'root');
    expect(problems).toEqual([]);
  });

  it('accepts the full example, with a status', () => {
    expect(validateProjectSchema(example())).toEqual([]);
    expect(validateProjectSchema({ ...example(), status: STATUS_EXAMPLE })).toEqual([]);
  });

  it('accepts integer quantities and every quantity form Kubernetes accepts', () => {
    const p = example();
    p.spec.quota.hard = {
      pods: 200,
      'requests.cpu': '1.5',
      'requests.memory': '1e3',
      'limits.cpu': '+.5',
      storage: '1Ei',
      x: '-3m',
    };
    expect(validateProjectSchema(p)).toEqual([]);
  });

  it('rejects a missing tenant', () => {
    const p = example();
    delete p.spec.tenant;
    const v = validateProjectSchema(p);
    expect(v).toHaveLength(1);
    expect(v[0]).toMatchObject({ rule: 'S1', path: ['spec'] });
    expect(v[0]!.message).toContain('Project payments');
    expect(v[0]!.message).toContain('spec.tenant is required');
  });

  it('rejects an owner of kind Robot, listing the allowed kinds', () => {
    const p = example();
    p.spec.owners[1].kind = 'Robot';
    const v = validateProjectSchema(p);
    expect(v).toHaveLength(1);
    expect(v[0]).toMatchObject({ rule: 'S1', path: ['spec', 'owners', 1, 'kind'] });
    expect(v[0]!.message).toContain('spec.owners[1].kind is "Robot"');
    expect(v[0]!.message).toContain('User, Group, ServiceAccount');
  });

  it('rejects quota "lots" as not a quantity', () => {
    const p = example();
    p.spec.quota.hard['requests.cpu'] = 'lots';
    const v = validateProjectSchema(p);
    expect(v).toHaveLength(1);
    expect(v[0]).toMatchObject({ rule: 'S1', path: ['spec', 'quota', 'hard', 'requests.cpu'] });
    expect(v[0]!.message).toContain('spec.quota.hard[requests.cpu] is "lots"');
    expect(v[0]!.message).toContain('a Kubernetes quantity such as 500m, 2, 1.5Gi');
  });

  it('rejects a fractional number as a quantity once, suggesting a string (the apiserver refuses it too)', () => {
    const p = example();
    p.spec.namespaces[0].quota.hard.pods = 0.5;
    const v = validateProjectSchema(p);
    expect(v).toHaveLength(1);
    expect(v[0]).toMatchObject({ path: ['spec', 'namespaces', 0, 'quota', 'hard', 'pods'] });
    expect(v[0]!.message).toContain('quantity');
    expect(v[0]!.message).toContain('"0.5"');
  });

  it('rejects the unknown spec field quotas, pointing at it and suggesting quota', () => {
    const p = example();
    p.spec.quotas = p.spec.quota;
    delete p.spec.quota;
    const v = validateProjectSchema(p);
    expect(v).toHaveLength(1);
    expect(v[0]).toMatchObject({ rule: 'S1', path: ['spec', 'quotas'] });
    expect(v[0]!.message).toContain('spec.quotas is not a known field');
    expect(v[0]!.message).toContain('did you mean quota?');
  });

  it('reports every violation at once', () => {
    const p = example();
    p.spec.tenant = 'Acme';
    p.spec.maxNamespaces = -1;
    p.spec.networkIsolation = 'yes';
    p.spec.namespaces[1].labels = { team: 7 };
    const v = validateProjectSchema(p);
    expect(v.map((x) => x.path)).toEqual([
      ['spec', 'tenant'],
      ['spec', 'maxNamespaces'],
      ['spec', 'networkIsolation'],
      ['spec', 'namespaces', 1, 'labels', 'team'],
    ]);
    expect(v[0]!.message).toContain('DNS-1123 label');
    expect(v[1]!.message).toContain('at least 0');
    expect(v[2]!.message).toContain('boolean');
    expect(v[3]!.message).toContain('must be a string');
  });
});
