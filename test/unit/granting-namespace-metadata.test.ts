/**
 * T7 on the namespace labels and annotations Kubernetes (and the platforms it runs on) read as a grant:
 * `resource.kubernetes.io/admin-access: "true"` lets a ResourceClaim with adminAccess reach devices
 * allocated to other namespaces. A tenant may not add, change or remove one — on CREATE or UPDATE, as a
 * label or as an annotation — whatever tenantgate.yaml's protectedNamespaceMetadata lists; privileged
 * subjects may. Nor may a Project declare one for its namespaces (tenantgate validate, render, the
 * Project webhook).
 */
import { TEST_NOW } from '../support/instant.js';
import { describe, expect, it } from 'vitest';
import fastJsonPatch from 'fast-json-patch';
import { aNamespace, aProject, aUser, reviewContext } from '../support/fixtures.js';
import { configFromObject, DEFAULT_CONFIG, type TenantgateConfig } from '../../src/config/config.js';
import { reviewNamespace } from '../../src/validate/admission.js';
import { mutateNamespace } from '../../src/mutate/mutate.js';
import { renderProjectsLazily } from '../../src/render/render.js';
import { GRANTING_NAMESPACE_METADATA, grantingKey } from '../../src/validate/granting-metadata.js';
import { validateDeclarations } from '../../src/validate/offline.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import { LABEL_PROJECT, LABEL_TENANT, type NamespaceObject, type Project } from '../../src/validate/types.js';

const ADMIN_ACCESS = 'resource.kubernetes.io/admin-access';

const ALICE = aUser('alice', ['system:authenticated']); // owner of payments
const PLATFORM = aUser('kubernetes-admin', ['system:masters', 'system:authenticated']);
const CONTROLLER = aUser('system:serviceaccount:tenantgate-system:tenantgate-controller', [
  'system:serviceaccounts',
  'system:authenticated',
]);

const PAYMENTS: Project = aProject(
  'payments',
  {
    owners: [{ kind: 'User', name: 'alice' }],
    quota: { hard: { pods: '100' } },
    namespaceDefaults: { quota: { hard: { pods: '10' } } },
  },
  { uid: 'uid-payments' },
);

/** payments-api as it is stored: the labels and annotation tenantgate sets, plus `extra`. */
function stored(
  extra: { labels?: Record<string, string>; annotations?: Record<string, string> } = {},
): NamespaceObject {
  const ns = aNamespace('payments-api', {
    project: 'payments',
    uid: 'uid-payments',
    labels: {
      ...extra.labels,
      'pod-security.kubernetes.io/enforce': 'baseline',
      'pod-security.kubernetes.io/warn': 'restricted',
      'pod-security.kubernetes.io/audit': 'restricted',
    },
    annotations: extra.annotations,
  });
  return ns;
}

const ctx = (user = ALICE, config: TenantgateConfig = DEFAULT_CONFIG) =>
  reviewContext(user, MemorySnapshot.of({ projects: [PAYMENTS], namespaces: [stored()], quotas: [] }), config);
const rules = (v: { violations: Array<{ rule: string }> }) => v.violations.map((x) => x.rule);

/** A CREATE of payments-new as the mutating webhook leaves it (tenancy labels, Pod Security labels, project-uid), plus `extra`. */
function created(extra: { labels?: Record<string, string>; annotations?: Record<string, string> }): NamespaceObject {
  const ns = stored(extra);
  return { ...ns, metadata: { ...ns.metadata, name: 'payments-new' } };
}

type Where = 'labels' | 'annotations';
const withKey = (where: Where, key: string, value: string) =>
  where === 'labels' ? { labels: { [key]: value } } : { annotations: { [key]: value } };

describe('T7: the DRA admin-access label', () => {
  it('refuses a tenant owner creating a project namespace labelled resource.kubernetes.io/admin-access=true, naming the namespace, the label, the value and what is allowed', () => {
    const v = reviewNamespace(ctx(), 'CREATE', created({ labels: { [ADMIN_ACCESS]: 'true' } }), undefined);
    expect(rules(v)).toEqual(['T7']);
    const message = v.violations[0]!.message;
    expect(message).toContain(
      'Namespace payments-new (project payments, tenant acme): user "alice" may not add, change or remove the protected labels resource.kubernetes.io/admin-access (null → "true"',
    );
    expect(message).toContain('DRA admin access');
    expect(message).toContain('only privileged subjects set labels');
    expect(message).toContain(ADMIN_ACCESS);
  });

  it('refuses a tenant owner labelling an existing project namespace with it', () => {
    const before = stored();
    const v = reviewNamespace(ctx(), 'UPDATE', stored({ labels: { [ADMIN_ACCESS]: 'true' } }), before);
    expect(rules(v)).toEqual(['T7']);
    expect(v.violations[0]!.path).toEqual(['metadata', 'labels']);
  });
});

/** Every entry of the list as a label or annotation key, with a value Kubernetes or the platform would act on. */
const CASES: Array<{ where: Where; key: string; value: string }> = [
  { where: 'labels', key: ADMIN_ACCESS, value: 'true' },
  { where: 'labels', key: 'pod-security.kubernetes.io/enforce-version', value: 'v1.0' },
  { where: 'labels', key: 'openshift.io/run-level', value: '0' },
  { where: 'labels', key: 'control-plane', value: 'true' },
  { where: 'labels', key: 'kubernetes.azure.com/managedby', value: 'aks' },
  { where: 'labels', key: 'openshift.io/cluster-monitoring', value: 'true' },
  { where: 'annotations', key: 'scheduler.alpha.kubernetes.io/node-selector', value: '' },
  { where: 'annotations', key: 'scheduler.alpha.kubernetes.io/defaultTolerations', value: '[{"operator":"Exists"}]' },
  { where: 'annotations', key: 'scheduler.alpha.kubernetes.io/tolerationsWhitelist', value: '[{"operator":"Exists"}]' },
  { where: 'annotations', key: 'openshift.io/node-selector', value: '' },
  { where: 'annotations', key: 'openshift.io/sa.scc.uid-range', value: '0/10000' },
  { where: 'annotations', key: 'openshift.io/sa.scc.mcs', value: 's0:c1,c0' },
  { where: 'annotations', key: 'openshift.io/sa.scc.supplemental-groups', value: '0/10000' },
];

describe('T7: every granting label and annotation, for tenants and for privileged subjects', () => {
  // A configuration that protects nothing of its own: the granting keys are protected regardless.
  const bare = configFromObject({ protectedNamespaceMetadata: { labels: [], annotations: [] } });

  for (const { where, key, value } of CASES) {
    describe(`${where} ${key}`, () => {
      const has = stored(withKey(where, key, 'platform-set'));
      const without = stored();

      it('a tenant owner may not set it on CREATE, nor add, change or remove it on UPDATE, whatever tenantgate.yaml protects', () => {
        for (const config of [DEFAULT_CONFIG, bare]) {
          const create = reviewNamespace(ctx(ALICE, config), 'CREATE', created(withKey(where, key, value)), undefined);
          expect(rules(create), 'create').toEqual(['T7']);
          expect(create.violations[0]!.message).toContain(`${key} (null → ${JSON.stringify(value)}`);
          expect(create.violations[0]!.path).toEqual(['metadata', where]);
          const add = reviewNamespace(ctx(ALICE, config), 'UPDATE', stored(withKey(where, key, value)), without);
          expect(rules(add), 'add').toEqual(['T7']);
          const change = reviewNamespace(ctx(ALICE, config), 'UPDATE', stored(withKey(where, key, value)), has);
          expect(rules(change), 'change').toEqual(['T7']);
          expect(change.violations[0]!.message).toContain(`${key} ("platform-set" → ${JSON.stringify(value)}`);
          const remove = reviewNamespace(ctx(ALICE, config), 'UPDATE', without, has);
          expect(rules(remove), 'remove').toEqual(['T7']);
          expect(remove.violations[0]!.message).toContain(`${key} ("platform-set" → null`);
        }
      });

      it('a tenant owner may leave it as it is while changing other metadata', () => {
        const after = structuredClone(has);
        after.metadata.labels!.team = 'api';
        expect(reviewNamespace(ctx(ALICE, bare), 'UPDATE', after, has).violations).toEqual([]);
      });

      it('the platform team and the controller may set, change and remove it', () => {
        for (const user of [PLATFORM, CONTROLLER]) {
          expect(
            reviewNamespace(ctx(user), 'CREATE', created(withKey(where, key, value)), undefined).violations,
          ).toEqual([]);
          expect(reviewNamespace(ctx(user), 'UPDATE', stored(withKey(where, key, value)), without).violations).toEqual(
            [],
          );
          expect(reviewNamespace(ctx(user), 'UPDATE', without, has).violations).toEqual([]);
        }
      });
    });
  }

  it('judges the key only where Kubernetes reads it: the admin-access key as an annotation grants nothing', () => {
    expect(
      reviewNamespace(ctx(ALICE, bare), 'UPDATE', stored({ annotations: { [ADMIN_ACCESS]: 'true' } }), stored())
        .violations,
    ).toEqual([]);
  });
});

describe('T7 offline: a Project may not declare a granting label or annotation for its namespaces', () => {
  it('tenantgate validate refuses one, naming the project, the namespace, the key, the value and what is allowed', () => {
    const project = aProject('payments', {
      ...PAYMENTS.spec,
      namespaces: [
        {
          name: 'payments-api',
          labels: { team: 'api', [ADMIN_ACCESS]: 'true' },
          annotations: { 'openshift.io/sa.scc.uid-range': '0/10000' },
        },
      ],
    });
    const v = validateDeclarations([project], DEFAULT_CONFIG, TEST_NOW).filter((x) => x.rule === 'T7');
    expect(v.map((x) => x.path)).toEqual([
      ['spec', 'namespaces', 0, 'labels', ADMIN_ACCESS],
      ['spec', 'namespaces', 0, 'annotations', 'openshift.io/sa.scc.uid-range'],
    ]);
    expect(v[0]!.message).toContain(
      'Project payments declares namespace payments-api with the label resource.kubernetes.io/admin-access="true"',
    );
    expect(v[0]!.message).toContain('allowed:');
  });

  it('points a declared Pod Security label to spec.podSecurity', () => {
    const project = aProject('payments', {
      ...PAYMENTS.spec,
      namespaces: [{ name: 'payments-api', labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } }],
    });
    const v = validateDeclarations([project], DEFAULT_CONFIG, TEST_NOW).filter((x) => x.rule === 'T7');
    expect(v).toHaveLength(1);
    expect(v[0]!.message).toContain('spec.podSecurity');
  });

  it('passes labels and annotations that grant nothing', () => {
    const project = aProject('payments', {
      ...PAYMENTS.spec,
      namespaces: [
        {
          name: 'payments-api',
          labels: { team: 'api', [LABEL_PROJECT]: 'payments', [LABEL_TENANT]: 'acme' },
          annotations: { owner: 'alice', [ADMIN_ACCESS]: 'true' },
        },
      ],
    });
    expect(validateDeclarations([project], DEFAULT_CONFIG, TEST_NOW).filter((x) => x.rule === 'T7')).toEqual([]);
  });
});

describe('neither the mutating webhook nor render adds a granting key a tenant did not have the platform set', () => {
  it('mutate adds only the tenancy labels, the project-uid and the Pod Security levels of tenantgate.yaml or the Project', () => {
    const request: NamespaceObject = {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'payments-new', labels: { team: 'api' } },
    };
    const patch = mutateNamespace(ctx(), 'CREATE', request) as fastJsonPatch.Operation[];
    const after = fastJsonPatch.applyPatch(structuredClone(request), patch, true, false).newDocument;
    expect(Object.keys(after.metadata.annotations ?? {}).filter((k) => grantingKey('annotations', k))).toEqual([]);
    const granting = Object.entries(after.metadata.labels ?? {}).filter(([key]) => grantingKey('labels', key));
    expect(after.metadata.labels?.team).toBe('api');
    expect(granting).toEqual([
      ['pod-security.kubernetes.io/enforce', 'baseline'],
      ['pod-security.kubernetes.io/warn', 'restricted'],
      ['pod-security.kubernetes.io/audit', 'restricted'],
    ]);
  });

  it("render drops a declared granting key should it be called without validation (the Pod Security labels are the Project's levels)", () => {
    const labels = Object.fromEntries(
      GRANTING_NAMESPACE_METADATA.filter((g) => g.field === 'labels').map((g) => [
        g.key.replace('*', 'enforce'),
        'true',
      ]),
    );
    const annotations = Object.fromEntries(
      GRANTING_NAMESPACE_METADATA.filter((g) => g.field === 'annotations').map((g) => [g.key, 'x']),
    );
    const project = aProject('payments', {
      ...PAYMENTS.spec,
      namespaces: [
        { name: 'payments-api', labels: { ...labels, team: 'api' }, annotations: { ...annotations, owner: 'alice' } },
      ],
    });
    const ns = [...renderProjectsLazily([project], DEFAULT_CONFIG, { at: TEST_NOW, cluster: '' })].find(
      (o) => o.kind === 'Namespace',
    )!;
    const meta = ns.metadata as { labels: Record<string, string>; annotations: Record<string, string> };
    expect(Object.keys(meta.labels).filter((k) => grantingKey('labels', k))).toEqual([
      'pod-security.kubernetes.io/enforce',
      'pod-security.kubernetes.io/warn',
      'pod-security.kubernetes.io/audit',
    ]);
    expect(meta.labels['pod-security.kubernetes.io/enforce']).toBe('baseline');
    expect(meta.labels.team).toBe('api');
    expect(Object.keys(meta.annotations).filter((k) => grantingKey('annotations', k))).toEqual([]);
    expect(meta.annotations.owner).toBe('alice');
  });
});
