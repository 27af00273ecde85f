/**
 * The cluster-side rules through src/validate/admission.ts over a MemorySnapshot, as the
 * webhook calls them: T2–T6, Q1–Q4, N2–N4, privileged subjects from the configuration. Users are the
 * `userInfo` of an AdmissionReview: `{ username, groups }`.
 */
import { aNamespace, aQuota, reviewContext } from '../support/fixtures.js';
import { describe, expect, it } from 'vitest';
import { configFromObject, DEFAULT_CONFIG, type TenantgateConfig } from '../../src/config/config.js';
import {
  reviewNamespace,
  reviewProject,
  reviewResourceQuota,
  type ReviewContext,
} from '../../src/validate/admission.js';
import type { UserInfo } from '../../src/validate/rules/tenancy.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import {
  LABEL_PROJECT,
  LABEL_TENANT,
  type NamespaceObject,
  type Project,
  type ResourceList,
  type ResourceQuotaObject,
} from '../../src/validate/types.js';

// ---------------------------------------------------------------------------------------------
// Fixtures: project payments (tenant acme), budget 20 cpu / 64Gi / 200 pods, two namespaces with
// 8 cpu each (16 allocated, 4 of headroom); project web (tenant acme) owned by another group.
// ---------------------------------------------------------------------------------------------

/** `request.userInfo` of AdmissionReviews, as the apiserver sends them (extra fields ignored). */
const review = (username: string, groups: string[]) =>
  ({ userInfo: { username, uid: `uid-${username}`, groups, extra: {} } }).userInfo as UserInfo;

const ADMIN = review('kubernetes-admin', ['system:masters', 'system:authenticated']);
const CONTROLLER = review('system:serviceaccount:tenantgate-system:tenantgate-controller', [
  'system:serviceaccounts',
  'system:authenticated',
]);
const ALICE = review('alice@acme.example', ['system:authenticated']); // owner by User
const BEN = review('ben', ['acme:payments-admins', 'system:authenticated']); // owner by Group
const DEPLOYER = review('system:serviceaccount:ci:deployer', [
  'system:serviceaccounts',
  'system:serviceaccounts:ci',
  'system:authenticated',
]); // owner by SA
const MALLORY = review('mallory', ['globex:admins', 'system:authenticated']); // owns nothing here
const WEBBY = review('webby', ['acme:web-admins', 'system:authenticated']); // owner of web only

function payments(overrides: Partial<Project['spec']> = {}): Project {
  return {
    apiVersion: 'tenantgate.io/v1alpha1',
    kind: 'Project',
    metadata: { name: 'payments', uid: 'uid-payments', generation: 1 },
    spec: {
      tenant: 'acme',
      owners: [
        { kind: 'Group', name: 'acme:payments-admins' },
        { kind: 'User', name: 'alice@acme.example' },
        { kind: 'ServiceAccount', namespace: 'ci', name: 'deployer' },
      ],
      quota: { hard: { 'requests.cpu': '20', 'requests.memory': '64Gi', pods: '200' } },
      namespaceDefaults: { quota: { hard: { 'requests.cpu': '2', 'requests.memory': '4Gi', pods: '20' } } },
      ...overrides,
    },
  };
}

const WEB: Project = {
  apiVersion: 'tenantgate.io/v1alpha1',
  kind: 'Project',
  metadata: { name: 'web', uid: 'uid-web' },
  spec: {
    tenant: 'acme',
    owners: [{ kind: 'Group', name: 'acme:web-admins' }],
    quota: { hard: { pods: '10' } },
    namespaces: [{ name: 'web-frontend' }],
  },
};

const namespace = (name: string, project?: string, tenant = 'acme'): NamespaceObject =>
  aNamespace(name, { ...(project ? { project } : {}), tenant });

const quota = (
  ns: string,
  hard: ResourceList,
  name = 'tenantgate-quota',
  extra: Partial<NonNullable<ResourceQuotaObject['spec']>> = {},
): ResourceQuotaObject => aQuota(ns, hard, { name, spec: extra });

const FULL = (cpu: string): ResourceList => ({ 'requests.cpu': cpu, 'requests.memory': '16Gi', pods: '50' });

function snapshot(
  project: Project = payments(),
  extra: { namespaces?: NamespaceObject[]; quotas?: ResourceQuotaObject[] } = {},
): MemorySnapshot {
  return MemorySnapshot.of({
    projects: [project, WEB],
    namespaces: [
      namespace('payments-api', 'payments'),
      namespace('payments-batch', 'payments'),
      namespace('web-frontend', 'web'),
      namespace('sandbox'),
      ...(extra.namespaces ?? []),
    ],
    quotas: [quota('payments-api', FULL('8')), quota('payments-batch', FULL('8')), ...(extra.quotas ?? [])],
  });
}

const ctx = (
  user: UserInfo,
  snap: MemorySnapshot = snapshot(),
  config: TenantgateConfig = DEFAULT_CONFIG,
): ReviewContext => reviewContext(user, snap, config);

const rules = (v: { violations: Array<{ rule: string }> }) => v.violations.map((x) => x.rule);

// ---------------------------------------------------------------------------------------------

describe('T2: a project namespace carries its project and tenant labels', () => {
  it('denies a project namespace created without the labels, saying which labels it needs', () => {
    const v = reviewNamespace(ctx(ALICE), 'CREATE', namespace('payments-dev'), undefined);
    expect(rules(v)).toEqual(['T2']);
    expect(v.violations[0]!.message).toBe(
      'Namespace payments-dev of project payments must carry the labels tenantgate.io/project=payments (has null), tenantgate.io/tenant=acme (has null)',
    );
  });

  it('denies a wrong tenant label', () => {
    const v = reviewNamespace(ctx(ALICE), 'CREATE', namespace('payments-dev', 'payments', 'globex'), undefined);
    expect(rules(v)).toEqual(['T2']);
    expect(v.violations[0]!.message).toContain('tenantgate.io/tenant=acme (has "globex")');
  });

  it('denies a label that names a project that does not exist', () => {
    const v = reviewNamespace(ctx(ADMIN), 'CREATE', namespace('ghost-api', 'ghost'), undefined);
    expect(rules(v)).toEqual(['T2']);
    expect(v.violations[0]!.message).toBe(
      'Namespace ghost-api is labelled tenantgate.io/project=ghost, but there is no project ghost',
    );
  });

  it('admits a correctly labelled namespace of an owner, allocating the defaults', () => {
    const v = reviewNamespace(ctx(ALICE), 'CREATE', namespace('payments-dev', 'payments'), undefined);
    expect(v.violations).toEqual([]);
    expect(v.allocation?.project).toBe('payments');
    expect(Object.fromEntries([...v.allocation!.resources].map(([r, q]) => [r, q.toString()]))).toEqual({
      'requests.cpu': '2',
      'requests.memory': '4Gi',
      pods: '20',
    });
  });
});

describe('T3: project and tenant labels are immutable but for privileged subjects', () => {
  const before = namespace('payments-api', 'payments');
  it('denies an owner moving a namespace to another project, with the old and new values', () => {
    const after = namespace('payments-api', 'web');
    const v = reviewNamespace(ctx(ALICE), 'UPDATE', after, before);
    expect(rules(v)).toEqual(['T3']);
    expect(v.violations[0]!.message).toContain(
      'Namespace payments-api: the labels tenantgate.io/project ("payments" → "web")',
    );
    expect(v.violations[0]!.message).toContain('immutable for user "alice@acme.example"');
  });

  it('denies removing the tenant label', () => {
    const after: NamespaceObject = {
      ...before,
      metadata: { ...before.metadata, labels: { [LABEL_PROJECT]: 'payments' } },
    };
    const v = reviewNamespace(ctx(BEN), 'UPDATE', after, before);
    expect(rules(v)).toEqual(['T3']);
    expect(v.violations[0]!.message).toContain('tenantgate.io/tenant ("acme" → null)');
  });

  it('admits other label changes by an owner, and a privileged subject releasing the namespace', () => {
    const relabelled: NamespaceObject = {
      ...before,
      metadata: { ...before.metadata, labels: { ...before.metadata.labels, team: 'api' } },
    };
    expect(reviewNamespace(ctx(ALICE), 'UPDATE', relabelled, before).violations).toEqual([]);
    expect(reviewNamespace(ctx(ADMIN), 'UPDATE', namespace('payments-api'), before).violations).toEqual([]);
  });

  it('lets a privileged subject move a namespace, still checking N2 and T2 for the target project', () => {
    const v = reviewNamespace(ctx(ADMIN), 'UPDATE', namespace('payments-api', 'web', 'globex'), before);
    expect(rules(v)).toEqual(['N2', 'T2']);
    expect(v.violations[0]!.message).toContain('must start with "web-"');
    expect(v.violations[1]!.message).toContain('tenantgate.io/tenant=acme (has "globex")');
  });
});

describe('the tenancy boundary on existing namespaces (T4, T6 for every verb)', () => {
  const withLabel = (ns: NamespaceObject, key: string, value: string): NamespaceObject => ({
    ...ns,
    metadata: { ...ns.metadata, labels: { ...ns.metadata.labels, [key]: value } },
  });

  it('denies every non-privileged update or delete of a namespace outside projects (T6), and admits admins', () => {
    for (const target of ['sandbox', 'argocd', 'kube-public', 'default']) {
      const before = namespace(target);
      for (const user of [ALICE, MALLORY, DEPLOYER]) {
        const update = reviewNamespace(ctx(user), 'UPDATE', withLabel(before, 'team', 'x'), before);
        expect(rules(update), `${user.username} update ${target}`).toEqual(['T6']);
        expect(update.violations[0]!.message).toContain(
          `Namespace ${target} belongs to no project: user "${user.username}" may not update namespace ${target}`,
        );
        const del = reviewNamespace(ctx(user), 'DELETE', undefined, before);
        expect(rules(del), `${user.username} delete ${target}`).toEqual(['T6']);
      }
      expect(reviewNamespace(ctx(ADMIN), 'UPDATE', withLabel(before, 'team', 'x'), before).violations).toEqual([]);
      expect(reviewNamespace(ctx(ADMIN), 'DELETE', undefined, before).violations).toEqual([]);
    }
  });

  it("a name prefix alone does not make an existing namespace a project's: owners may not touch an unlabelled payments-legacy", () => {
    const legacy = namespace('payments-legacy');
    expect(rules(reviewNamespace(ctx(ALICE), 'DELETE', undefined, legacy))).toEqual(['T6']);
    expect(rules(reviewNamespace(ctx(ALICE), 'UPDATE', withLabel(legacy, LABEL_PROJECT, 'payments'), legacy))).toEqual([
      'T6',
    ]);
  });

  it('a label naming a project that no longer exists is outside projects', () => {
    const orphan = namespace('gone-api', 'gone');
    expect(rules(reviewNamespace(ctx(ALICE), 'DELETE', undefined, orphan))).toEqual(['T6']);
  });

  it("denies a non-owner updating another project's namespace (T4), even a harmless label", () => {
    const before = namespace('web-frontend', 'web');
    const v = reviewNamespace(ctx(ALICE), 'UPDATE', withLabel(before, 'team', 'x'), before);
    expect(rules(v)).toEqual(['T4']);
    expect(v.violations[0]!.message).toContain(
      'user "alice@acme.example" may not update namespace web-frontend: it belongs to project web (tenant acme), whose owners are Group acme:web-admins',
    );
    expect(reviewNamespace(ctx(WEBBY), 'UPDATE', withLabel(before, 'team', 'x'), before).violations).toEqual([]);
  });
});

describe('T7: protected namespace metadata', () => {
  const before: NamespaceObject = {
    ...namespace('payments-api', 'payments'),
    metadata: {
      ...namespace('payments-api', 'payments').metadata,
      annotations: { 'tenantgate.io/project-uid': 'uid-payments' },
    },
  };
  const edit = (fn: (m: NamespaceObject['metadata']) => void): NamespaceObject => {
    const copy = structuredClone(before);
    fn(copy.metadata);
    return copy;
  };

  it('denies an owner weakening pod security, naming the key, the values, the project and what is protected', () => {
    const v = reviewNamespace(
      ctx(ALICE),
      'UPDATE',
      edit((m) => (m.labels!['pod-security.kubernetes.io/enforce'] = 'privileged')),
      before,
    );
    expect(rules(v)).toEqual(['T7']);
    expect(v.violations[0]!.message).toBe(
      'Namespace payments-api (project payments, tenant acme): user "alice@acme.example" may not add, change or remove the protected labels pod-security.kubernetes.io/enforce (null → "privileged") — Pod Security admission: the level and version pods are held to, and what is audited or warned about; only privileged subjects set labels pod-security.kubernetes.io/*, resource.kubernetes.io/admin-access, openshift.io/run-level, openshift.io/cluster-monitoring, control-plane, kubernetes.azure.com/managedby, tenantgate.io/*, annotations scheduler.alpha.kubernetes.io/node-selector, scheduler.alpha.kubernetes.io/defaultTolerations, scheduler.alpha.kubernetes.io/tolerationsWhitelist, openshift.io/node-selector, openshift.io/sa.scc.uid-range, openshift.io/sa.scc.supplemental-groups, openshift.io/sa.scc.mcs, tenantgate.io/*, metadata.finalizers and metadata.ownerReferences on namespaces (allowed: leave them as they are; ask the platform team)',
    );
  });

  it('denies removing or changing the project-uid annotation (the namespace would escape its cascade)', () => {
    expect(
      rules(
        reviewNamespace(
          ctx(ALICE),
          'UPDATE',
          edit((m) => delete m.annotations!['tenantgate.io/project-uid']),
          before,
        ),
      ),
    ).toEqual(['T7']);
    const changed = reviewNamespace(
      ctx(BEN),
      'UPDATE',
      edit((m) => (m.annotations!['tenantgate.io/project-uid'] = 'other')),
      before,
    );
    expect(changed.violations[0]!.message).toContain(
      'annotations tenantgate.io/project-uid ("uid-payments" → "other")',
    );
  });

  it('denies protected keys on CREATE too, but not the project-uid the mutating webhook set', () => {
    const fresh = (labels: Record<string, string>, annotations: Record<string, string>): NamespaceObject => ({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {
        name: 'payments-new',
        labels: { [LABEL_PROJECT]: 'payments', [LABEL_TENANT]: 'acme', ...labels },
        annotations,
      },
    });
    expect(
      reviewNamespace(ctx(ALICE), 'CREATE', fresh({}, { 'tenantgate.io/project-uid': 'uid-payments' }), undefined)
        .violations,
    ).toEqual([]);
    expect(
      rules(
        reviewNamespace(
          ctx(ALICE),
          'CREATE',
          fresh({ 'pod-security.kubernetes.io/enforce': 'privileged' }, {}),
          undefined,
        ),
      ),
    ).toEqual(['T7']);
    expect(
      rules(
        reviewNamespace(
          ctx(ALICE),
          'CREATE',
          fresh({}, { 'scheduler.alpha.kubernetes.io/node-selector': 'pool=gpu' }),
          undefined,
        ),
      ),
    ).toEqual(['T7']);
  });

  it('lets privileged subjects change protected metadata, and owners change everything else', () => {
    expect(
      reviewNamespace(
        ctx(ADMIN),
        'UPDATE',
        edit((m) => (m.labels!['pod-security.kubernetes.io/enforce'] = 'baseline')),
        before,
      ).violations,
    ).toEqual([]);
    expect(
      reviewNamespace(
        ctx(ALICE),
        'UPDATE',
        edit((m) => ((m.labels!.team = 'api'), (m.annotations!.owner = 'alice'))),
        before,
      ).violations,
    ).toEqual([]);
  });

  it('reports T3 (tenancy labels) and T7 (other protected keys) separately in one denial', () => {
    const v = reviewNamespace(
      ctx(ALICE),
      'UPDATE',
      edit((m) => ((m.labels![LABEL_PROJECT] = 'web'), (m.labels!['pod-security.kubernetes.io/warn'] = 'privileged'))),
      before,
    );
    expect(rules(v)).toEqual(['T3', 'T7']);
  });

  it('follows the configured list: exact keys and prefixes ending in *, besides the keys that grant power', () => {
    const config = configFromObject({
      protectedNamespaceMetadata: { labels: ['team'], annotations: ['example.com/*'] },
    });
    expect(
      rules(
        reviewNamespace(
          ctx(ALICE, snapshot(), config),
          'UPDATE',
          edit((m) => (m.labels!.team = 'x')),
          before,
        ),
      ),
    ).toEqual(['T7']);
    expect(
      rules(
        reviewNamespace(
          ctx(ALICE, snapshot(), config),
          'UPDATE',
          edit((m) => (m.annotations!['example.com/a'] = 'x')),
          before,
        ),
      ),
    ).toEqual(['T7']);
    expect(
      reviewNamespace(
        ctx(ALICE, snapshot(), config),
        'UPDATE',
        edit((m) => (m.labels!['tenantgate.io/x'] = 'x')),
        before,
      ).violations,
    ).toEqual([]);
    expect(
      rules(
        reviewNamespace(
          ctx(ALICE, snapshot(), config),
          'UPDATE',
          edit((m) => (m.labels!['pod-security.kubernetes.io/enforce'] = 'privileged')),
          before,
        ),
      ),
    ).toEqual(['T7']);
  });
});

describe('T4: only owners and privileged subjects create/delete namespaces and change quotas', () => {
  it('denies a non-owner creating a project namespace, naming the project, tenant and owners', () => {
    const v = reviewNamespace(ctx(MALLORY), 'CREATE', namespace('payments-dev', 'payments'), undefined);
    expect(rules(v)).toEqual(['T4']);
    expect(v.violations[0]!.message).toBe(
      'user "mallory" may not create namespace payments-dev: it belongs to project payments (tenant acme), whose owners are Group acme:payments-admins, User alice@acme.example, ServiceAccount ci/deployer',
    );
  });

  it('admits each kind of owner: user, group member, service account', () => {
    for (const user of [ALICE, BEN, DEPLOYER]) {
      expect(
        reviewNamespace(ctx(user), 'CREATE', namespace('payments-dev', 'payments'), undefined).violations,
        user.username,
      ).toEqual([]);
    }
  });

  it('denies the owner of another project of the same tenant', () => {
    expect(rules(reviewNamespace(ctx(WEBBY), 'CREATE', namespace('payments-dev', 'payments'), undefined))).toEqual([
      'T4',
    ]);
  });

  it('denies a non-owner deleting a project namespace; admits an owner and an admin', () => {
    const old = namespace('payments-batch', 'payments');
    const v = reviewNamespace(ctx(MALLORY), 'DELETE', undefined, old);
    expect(rules(v)).toEqual(['T4']);
    expect(v.violations[0]!.message).toContain('may not delete namespace payments-batch');
    expect(reviewNamespace(ctx(BEN), 'DELETE', undefined, old).violations).toEqual([]);
    expect(reviewNamespace(ctx(ADMIN), 'DELETE', undefined, old).violations).toEqual([]);
  });

  it('denies a non-owner creating, updating or deleting a ResourceQuota in a project namespace', () => {
    const created = reviewResourceQuota(
      ctx(MALLORY),
      'CREATE',
      'payments-api',
      quota('payments-api', FULL('1'), 'extra'),
      undefined,
    );
    expect(rules(created)).toEqual(['T4']);
    expect(created.violations[0]!.message).toContain('may not create ResourceQuota payments-api/extra');
    expect(
      rules(
        reviewResourceQuota(
          ctx(MALLORY),
          'UPDATE',
          'payments-api',
          quota('payments-api', FULL('7')),
          quota('payments-api', FULL('8')),
        ),
      ),
    ).toEqual(['T4']);
    expect(
      rules(reviewResourceQuota(ctx(MALLORY), 'DELETE', 'payments-api', undefined, quota('payments-api', FULL('8')))),
    ).toContain('T4');
  });

  it('denies quota writes outside projects to everyone but privileged subjects (T6)', () => {
    for (const op of ['CREATE', 'UPDATE', 'DELETE'] as const) {
      const object = op === 'DELETE' ? undefined : quota('sandbox', { pods: '1' });
      const old = op === 'CREATE' ? undefined : quota('sandbox', { pods: '1000' });
      for (const user of [MALLORY, ALICE]) {
        const v = reviewResourceQuota(ctx(user), op, 'sandbox', object, old);
        expect(rules(v), `${op} ${user.username}`).toEqual(['T6']);
        expect(v.violations[0]!.message).toMatch(
          /^Namespace sandbox belongs to no project: user "(mallory|alice@acme.example)" may not (create|update|delete) ResourceQuota sandbox\/tenantgate-quota; only privileged subjects \(group system:masters, user system:serviceaccount:tenantgate-system:tenantgate-controller\)/,
        );
      }
      expect(reviewResourceQuota(ctx(ADMIN), op, 'sandbox', object, old).violations, op).toEqual([]);
    }
  });

  it('treats a namespace the cache already holds by its label only: an unlabelled prefix match is outside projects', () => {
    const legacy = namespace('payments-legacy'); // made by an administrator before the project, never labelled
    const snap = snapshot(payments(), { namespaces: [legacy] });
    expect(
      rules(
        reviewResourceQuota(
          ctx(ALICE, snap),
          'CREATE',
          'payments-legacy',
          quota('payments-legacy', FULL('1')),
          undefined,
        ),
      ),
    ).toEqual(['T6']);
    // Not in the cache yet (just created): its prefix stands in for the label the mutating webhook set.
    expect(
      rules(reviewResourceQuota(ctx(ALICE), 'CREATE', 'payments-new', quota('payments-new', FULL('1')), undefined)),
    ).toEqual([]);
  });
});

describe('T5: only privileged subjects change Projects', () => {
  it('denies an owner raising their own budget (create, update, delete), pointing to git', () => {
    const raised = payments({ quota: { hard: { 'requests.cpu': '200', 'requests.memory': '64Gi', pods: '200' } } });
    for (const op of ['CREATE', 'UPDATE', 'DELETE'] as const) {
      const v = reviewProject(
        ctx(ALICE),
        op,
        op === 'DELETE' ? undefined : raised,
        op === 'CREATE' ? undefined : payments(),
      );
      expect(rules(v), op).toEqual(['T5']);
    }
    const v = reviewProject(ctx(ALICE), 'UPDATE', raised, payments());
    expect(v.violations[0]!.message).toContain(`user "alice@acme.example" may not update Project payments`);
    expect(v.violations[0]!.message).toContain('group system:masters');
    expect(v.violations[0]!.message).toContain('propose the change in git');
  });

  it('admits a privileged subject (group system:masters; the controller by username)', () => {
    const raised = payments({ quota: { hard: { 'requests.cpu': '40', 'requests.memory': '64Gi', pods: '200' } } });
    expect(reviewProject(ctx(ADMIN), 'UPDATE', raised, payments()).violations).toEqual([]);
    expect(reviewProject(ctx(CONTROLLER), 'UPDATE', raised, payments()).violations).toEqual([]);
    expect(reviewProject(ctx(ADMIN), 'DELETE', undefined, payments()).violations).toEqual([]);
  });

  it('still checks T1 for privileged subjects', () => {
    const v = reviewProject(ctx(ADMIN), 'UPDATE', payments({ tenant: 'globex' }), payments());
    expect(rules(v)).toEqual(['T1']);
    expect(v.violations[0]!.message).toContain('was "acme", now "globex"');
  });
});

describe('T6: non-privileged namespaces outside any project', () => {
  it('denies a namespace outside any project when requireProjectForUsers is on, listing the prefixes the user owns', () => {
    const v = reviewNamespace(ctx(ALICE), 'CREATE', namespace('scratch'), undefined);
    expect(rules(v)).toEqual(['T6']);
    expect(v.violations[0]!.message).toBe(
      'Namespace scratch belongs to no project, and user "alice@acme.example" may only create namespaces inside a project it owns (names starting with "payments-")',
    );
    expect(reviewNamespace(ctx(MALLORY), 'CREATE', namespace('scratch'), undefined).violations[0]!.message).toContain(
      '(it owns none)',
    );
  });

  it('admits it when requireProjectForUsers is off, and always for privileged subjects', () => {
    const config = configFromObject({ requireProjectForUsers: false });
    expect(
      reviewNamespace(ctx(MALLORY, snapshot(), config), 'CREATE', namespace('scratch'), undefined).violations,
    ).toEqual([]);
    expect(reviewNamespace(ctx(ADMIN), 'CREATE', namespace('scratch'), undefined).violations).toEqual([]);
  });

  it('denies a name carrying a project prefix even when requireProjectForUsers is off', () => {
    const config = configFromObject({ requireProjectForUsers: false });
    const v = reviewNamespace(ctx(MALLORY, snapshot(), config), 'CREATE', namespace('payments-shadow'), undefined);
    expect(v.violations.length).toBeGreaterThan(0);
    expect(rules(v)).toContain('T4');
  });

  it('denies reserved names to users (N2)', () => {
    const v = reviewNamespace(ctx(MALLORY), 'CREATE', namespace('kube-mine'), undefined);
    expect(rules(v)).toEqual(['N2', 'T6']);
    expect(v.violations[0]!.message).toContain('the prefix "kube-" is reserved');
  });
});

describe('Q1 at admission: headroom', () => {
  it('denies a namespace whose defaults do not fit, saying what fits', () => {
    const snap = snapshot(payments(), {
      namespaces: [namespace('payments-ledger', 'payments')],
      quotas: [quota('payments-ledger', FULL('3'))],
    });
    const v = reviewNamespace(ctx(ALICE, snap), 'CREATE', namespace('payments-dev', 'payments'), undefined);
    expect(rules(v)).toEqual(['Q1']);
    expect(v.violations[0]!.message).toBe(
      'Namespace payments-dev asks requests.cpu 2 (namespaceDefaults), project payments has 20 of which 19 are allocated to other namespaces: at most 1 fits',
    );
  });

  it('counts a namespace without a quota with the defaults', () => {
    // payments-ledger has no quota yet: it holds 2 (defaults) of the 4 left.
    const snap = snapshot(payments(), { namespaces: [namespace('payments-ledger', 'payments')] });
    const v = reviewResourceQuota(
      ctx(ALICE, snap),
      'CREATE',
      'payments-api',
      quota('payments-api', FULL('4'), 'second'),
      undefined,
    );
    expect(v.violations).toEqual([]);
    const w = reviewNamespace(ctx(ALICE, snap), 'CREATE', namespace('payments-dev', 'payments'), undefined);
    expect(w.violations).toEqual([]);
    const snap2 = snapshot(payments(), {
      namespaces: [namespace('payments-ledger', 'payments'), namespace('payments-dev', 'payments')],
    });
    const x = reviewNamespace(ctx(ALICE, snap2), 'CREATE', namespace('payments-qa', 'payments'), undefined);
    expect(rules(x)).toEqual(['Q1']);
    expect(x.violations[0]!.message).toContain('of which 20 are allocated to other namespaces: nothing fits');
  });

  it('denies a quota create over the headroom with "at most X fits"', () => {
    const snap = snapshot(payments(), { namespaces: [namespace('payments-new', 'payments')] });
    const v = reviewResourceQuota(
      ctx(ALICE, snap),
      'CREATE',
      'payments-new',
      quota('payments-new', FULL('6')),
      undefined,
    );
    expect(rules(v)).toEqual(['Q1']);
    expect(v.violations[0]!.path).toEqual(['spec', 'hard', 'requests.cpu']);
    expect(v.violations[0]!.message).toBe(
      'ResourceQuota payments-new/tenantgate-quota asks requests.cpu 6, project payments has 20 of which 16 are allocated to other namespaces: at most 4 fits',
    );
    expect(
      reviewResourceQuota(ctx(ALICE, snap), 'CREATE', 'payments-new', quota('payments-new', FULL('4')), undefined)
        .violations,
    ).toEqual([]);
  });

  it('denies a quota update over the headroom (the new object replaces the old)', () => {
    const v = reviewResourceQuota(
      ctx(BEN),
      'UPDATE',
      'payments-api',
      quota('payments-api', FULL('12500m')),
      quota('payments-api', FULL('8')),
    );
    expect(rules(v)).toEqual(['Q1']);
    expect(v.violations[0]!.message).toBe(
      'ResourceQuota payments-api/tenantgate-quota asks requests.cpu 12500m, project payments has 20 of which 8 are allocated to other namespaces: at most 12 fits',
    );
    expect(
      reviewResourceQuota(
        ctx(BEN),
        'UPDATE',
        'payments-api',
        quota('payments-api', FULL('12')),
        quota('payments-api', FULL('8')),
      ).violations,
    ).toEqual([]);
  });

  it('uses exact quantities: 11.5 + 500m fills the headroom exactly', () => {
    const v = reviewResourceQuota(
      ctx(BEN),
      'UPDATE',
      'payments-api',
      quota('payments-api', FULL('11.5')),
      quota('payments-api', FULL('8')),
    );
    expect(v.violations).toEqual([]);
    const snap = snapshot(payments(), {
      namespaces: [namespace('payments-x', 'payments')],
      quotas: [quota('payments-api', FULL('11.5'))],
    });
    // 11.5 (payments-api) + 8 (batch) = 19.5: 500m left
    expect(
      reviewResourceQuota(ctx(BEN, snap), 'CREATE', 'payments-x', quota('payments-x', FULL('500m')), undefined)
        .violations,
    ).toEqual([]);
    expect(
      reviewResourceQuota(ctx(BEN, snap), 'CREATE', 'payments-x', quota('payments-x', FULL('501m')), undefined)
        .violations[0]!.message,
    ).toContain('at most 500m fits');
  });

  it('counts the tightest of several unscoped quotas, and ignores scoped ones', () => {
    const extra = quota('payments-api', FULL('4'), 'tight');
    const snap = snapshot(payments(), { quotas: [extra] }); // payments-api now effectively 4: 12 allocated
    const v = reviewResourceQuota(
      ctx(BEN, snap),
      'CREATE',
      'payments-batch',
      quota('payments-batch', FULL('100'), 'besteffort', { scopes: ['BestEffort'] }),
      undefined,
    );
    expect(v.violations).toEqual([]);
    const w = reviewResourceQuota(
      ctx(BEN, snap),
      'UPDATE',
      'payments-batch',
      quota('payments-batch', FULL('17')),
      quota('payments-batch', FULL('8')),
    );
    expect(w.violations[0]!.message).toContain('of which 4 are allocated to other namespaces: at most 16 fits');
  });

  it('admits shrinking a quota even when the project is over budget', () => {
    const snap = snapshot(
      payments({ quota: { hard: { 'requests.cpu': '10', 'requests.memory': '64Gi', pods: '200' } } }),
    );
    expect(
      reviewResourceQuota(
        ctx(BEN, snap),
        'UPDATE',
        'payments-api',
        quota('payments-api', FULL('6')),
        quota('payments-api', FULL('8')),
      ).violations,
    ).toEqual([]);
  });

  it('uses the budget of the configured cluster', () => {
    const project = payments({
      clusters: { 'prod-eu': { quota: { hard: { 'requests.cpu': '18', 'requests.memory': '64Gi', pods: '200' } } } },
    });
    const config = configFromObject({ clusterName: 'prod-eu' });
    const snap = snapshot(project, { namespaces: [namespace('payments-new', 'payments')] });
    const v = reviewResourceQuota(
      ctx(ALICE, snap, config),
      'CREATE',
      'payments-new',
      quota('payments-new', FULL('3')),
      undefined,
    );
    expect(v.violations[0]!.message).toBe(
      'ResourceQuota payments-new/tenantgate-quota asks requests.cpu 3, project payments on cluster prod-eu has 18 of which 16 are allocated to other namespaces: at most 2 fits',
    );
  });

  it('denies a Project update lowering the budget below the allocation, listing each namespace', () => {
    const lowered = payments({ quota: { hard: { 'requests.cpu': '15', 'requests.memory': '64Gi', pods: '200' } } });
    const v = reviewProject(ctx(ADMIN), 'UPDATE', lowered, payments());
    expect(rules(v)).toEqual(['Q1']);
    expect(v.violations[0]!.path).toEqual(['spec', 'quota', 'hard', 'requests.cpu']);
    expect(v.violations[0]!.message).toBe(
      'project payments: namespaces allocate requests.cpu 16 but the budget is 15 (payments-api 8, payments-batch 8): 1 over',
    );
    const exact = payments({ quota: { hard: { 'requests.cpu': '16', 'requests.memory': '64Gi', pods: '200' } } });
    expect(reviewProject(ctx(ADMIN), 'UPDATE', exact, payments()).violations).toEqual([]);
  });
});

describe('Q2: a quota change may not leave a budget resource uncovered', () => {
  it('denies an update dropping pods from the only covering quota', () => {
    const v = reviewResourceQuota(
      ctx(BEN),
      'UPDATE',
      'payments-api',
      quota('payments-api', { 'requests.cpu': '8', 'requests.memory': '16Gi' }),
      quota('payments-api', FULL('8')),
    );
    expect(rules(v)).toEqual(['Q2']);
    expect(v.violations[0]!.message).toBe(
      'ResourceQuota payments-api/tenantgate-quota leaves pods without a quota, but project payments budgets it: every namespace needs an unscoped ResourceQuota covering pods, requests.cpu, requests.memory',
    );
  });

  it('admits it when another unscoped quota still covers pods', () => {
    const snap = snapshot(payments(), { quotas: [quota('payments-api', { pods: '40' }, 'pods')] });
    expect(
      reviewResourceQuota(
        ctx(BEN, snap),
        'UPDATE',
        'payments-api',
        quota('payments-api', { 'requests.cpu': '8', 'requests.memory': '16Gi' }),
        quota('payments-api', FULL('8')),
      ).violations,
    ).toEqual([]);
  });

  it('holds privileged subjects to it on updates, not on deletes (docs/rules.md Q2)', () => {
    // The same coverage taken away: by an update dropping pods, refused to the admin and the controller too ...
    for (const who of [ADMIN, CONTROLLER]) {
      expect(
        rules(
          reviewResourceQuota(
            ctx(who),
            'UPDATE',
            'payments-api',
            quota('payments-api', { 'requests.cpu': '8', 'requests.memory': '16Gi' }),
            quota('payments-api', FULL('8')),
          ),
        ),
      ).toEqual(['Q2']);
    }
    // ... by deleting the quota, admitted to them (and refused to the owner, Q3).
    for (const who of [ADMIN, CONTROLLER])
      expect(
        reviewResourceQuota(ctx(who), 'DELETE', 'payments-api', undefined, quota('payments-api', FULL('8'))).violations,
      ).toEqual([]);
    expect(
      rules(reviewResourceQuota(ctx(BEN), 'DELETE', 'payments-api', undefined, quota('payments-api', FULL('8')))),
    ).toEqual(['Q3']);
    // A privileged partial quota in a namespace not covered yet is still fine.
    const bare = snapshot(payments(), { namespaces: [namespace('payments-new', 'payments')] });
    expect(
      reviewResourceQuota(
        ctx(ADMIN, bare),
        'CREATE',
        'payments-new',
        quota('payments-new', { 'requests.cpu': '1' }),
        undefined,
      ).violations,
    ).toEqual([]);
  });
});

describe('Q3: tenants cannot delete the quota that provides coverage', () => {
  it('denies an owner deleting the covering quota, naming the resources', () => {
    const v = reviewResourceQuota(ctx(BEN), 'DELETE', 'payments-api', undefined, quota('payments-api', FULL('8')));
    expect(rules(v)).toEqual(['Q3']);
    expect(v.violations[0]!.message).toBe(
      'ResourceQuota payments-api/tenantgate-quota provides the only coverage of pods, requests.cpu, requests.memory in namespace payments-api (project payments budgets them); user "ben" may replace it but not delete it',
    );
  });

  it('admits an admin deleting it, and an owner deleting a redundant or scoped quota', () => {
    expect(
      reviewResourceQuota(ctx(ADMIN), 'DELETE', 'payments-api', undefined, quota('payments-api', FULL('8'))).violations,
    ).toEqual([]);
    const redundant = quota('payments-api', FULL('10'), 'old');
    const scoped = quota('payments-api', FULL('1'), 'scoped', { scopes: ['BestEffort'] });
    const snap = snapshot(payments(), { quotas: [redundant, scoped] });
    expect(reviewResourceQuota(ctx(BEN, snap), 'DELETE', 'payments-api', undefined, redundant).violations).toEqual([]);
    expect(reviewResourceQuota(ctx(BEN, snap), 'DELETE', 'payments-api', undefined, scoped).violations).toEqual([]);
  });
});

describe('Q4: a warning near the limit', () => {
  it('warns when an admitted change leaves less than 10 % of headroom', () => {
    const v = reviewResourceQuota(
      ctx(BEN),
      'UPDATE',
      'payments-api',
      quota('payments-api', FULL('11')),
      quota('payments-api', FULL('8')),
    );
    expect(v.violations).toEqual([]);
    expect(v.warnings).toEqual(['[Q4] project payments: requests.cpu headroom 1 of 20 left']);
  });

  it('does not warn at exactly 10 %, nor when denying', () => {
    expect(
      reviewResourceQuota(
        ctx(BEN),
        'UPDATE',
        'payments-api',
        quota('payments-api', FULL('10')),
        quota('payments-api', FULL('8')),
      ).warnings,
    ).toEqual([]);
    expect(
      reviewResourceQuota(
        ctx(BEN),
        'UPDATE',
        'payments-api',
        quota('payments-api', FULL('13')),
        quota('payments-api', FULL('8')),
      ).warnings,
    ).toEqual([]);
  });

  it('warns on an admitted delete that lets the namespace grow into the last 10 %', () => {
    // payments-api: tenantgate-quota 8 and wide 11; deleting the tighter one grows it to 11: 11 + 8 of 20.
    const snap = snapshot(payments(), { quotas: [quota('payments-api', FULL('11'), 'wide')] });
    const v = reviewResourceQuota(
      ctx(BEN, snap),
      'DELETE',
      'payments-api',
      undefined,
      quota('payments-api', FULL('8')),
    );
    expect(v.violations).toEqual([]);
    expect(v.warnings).toEqual(['[Q4] project payments: requests.cpu headroom 1 of 20 left']);
    // Deleting the wider one changes nothing and leaves 4 of 20: no warning.
    expect(
      reviewResourceQuota(
        ctx(BEN, snap),
        'DELETE',
        'payments-api',
        undefined,
        quota('payments-api', FULL('11'), 'wide'),
      ).warnings,
    ).toEqual([]);
  });

  it('follows the configured threshold, and warns on namespace creation too', () => {
    const config = configFromObject({ headroomWarningThreshold: 0.25 });
    const v = reviewNamespace(
      ctx(ALICE, snapshot(), config),
      'CREATE',
      namespace('payments-dev', 'payments'),
      undefined,
    );
    expect(v.violations).toEqual([]);
    expect(v.warnings).toEqual(['[Q4] project payments: requests.cpu headroom 2 of 20 left']);
  });
});

describe('N3 and N4 at admission', () => {
  const shop = (namespaces: string[], name = 'shop'): Project => ({
    apiVersion: 'tenantgate.io/v1alpha1',
    kind: 'Project',
    metadata: { name },
    spec: { tenant: 'initech', namespaces: namespaces.map((n) => ({ name: n })) },
  });

  it('denies declaring a namespace already labelled for another project in the cluster', () => {
    const snap = snapshot(payments(), { namespaces: [namespace('shop-legacy', 'payments')] });
    const v = reviewProject(ctx(ADMIN, snap), 'CREATE', shop(['shop-legacy']), undefined);
    expect(rules(v)).toEqual(['N3']);
    expect(v.violations[0]!.path).toEqual(['spec', 'namespaces', 0, 'name']);
    expect(v.violations[0]!.message).toBe(
      'namespace shop-legacy already exists in the cluster labelled for project payments; a namespace belongs to at most one project',
    );
  });

  it('denies declaring a namespace another Project declares', () => {
    const v = reviewProject(
      ctx(ADMIN),
      'CREATE',
      { ...shop([]), metadata: { name: 'web2' }, spec: { tenant: 'acme', namespaces: [{ name: 'web-frontend' }] } },
      undefined,
    );
    expect(rules(v)).toContain('N3');
    expect(v.violations.find((x) => x.rule === 'N3')!.message).toContain(
      'namespace web-frontend is already declared by project web',
    );
  });

  it('denies a project whose prefix overlaps an existing one (N4)', () => {
    const v = reviewProject(ctx(ADMIN), 'CREATE', shop([], 'payments-eu'), undefined);
    expect(rules(v)).toEqual(['N4']);
    expect(v.violations[0]!.message).toContain('"payments-eu-" overlaps the prefix "payments-" of project payments');
  });

  it('admits a new project with its own namespaces', () => {
    expect(reviewProject(ctx(ADMIN), 'CREATE', shop(['shop-api', 'shop-web']), undefined).violations).toEqual([]);
  });
});

describe('privileged subjects come from the configuration', () => {
  const config = configFromObject({ privileged: { users: ['platform-bot'], groups: ['platform-admins'] } });
  const PLATFORM = review('pat', ['platform-admins']);
  const BOT = review('platform-bot', []);

  it('a configured group or user is privileged; system:masters no longer is when not listed', () => {
    const raised = payments({ quota: { hard: { 'requests.cpu': '40', 'requests.memory': '64Gi', pods: '200' } } });
    expect(reviewProject(ctx(PLATFORM, snapshot(), config), 'UPDATE', raised, payments()).violations).toEqual([]);
    expect(reviewProject(ctx(BOT, snapshot(), config), 'UPDATE', raised, payments()).violations).toEqual([]);
    const v = reviewProject(ctx(ADMIN, snapshot(), config), 'UPDATE', raised, payments());
    expect(rules(v)).toEqual(['T5']);
    expect(v.violations[0]!.message).toContain('group platform-admins');
  });

  it('privileged subjects may delete covering quotas and change labels under that configuration', () => {
    expect(
      reviewResourceQuota(
        ctx(PLATFORM, snapshot(), config),
        'DELETE',
        'payments-api',
        undefined,
        quota('payments-api', FULL('8')),
      ).violations,
    ).toEqual([]);
    expect(
      rules(
        reviewResourceQuota(
          ctx(ADMIN, snapshot(), config),
          'DELETE',
          'payments-api',
          undefined,
          quota('payments-api', FULL('8')),
        ),
      ),
    ).toEqual(['T4', 'Q3']);
    expect(
      reviewNamespace(
        ctx(PLATFORM, snapshot(), config),
        'UPDATE',
        namespace('payments-api'),
        namespace('payments-api', 'payments'),
      ).violations,
    ).toEqual([]);
  });

  it('by default, system:masters and the tenantgate controller are privileged; Argo CD is not (ADR 0007)', () => {
    const shop: Project = { ...payments(), metadata: { name: 'shop' }, spec: { tenant: 'initech' } };
    for (const user of [ADMIN, CONTROLLER]) {
      expect(reviewProject(ctx(user), 'CREATE', shop, undefined).violations, user.username).toEqual([]);
    }
    const argo = review('system:serviceaccount:argocd:argocd-application-controller', ['system:serviceaccounts']);
    expect(rules(reviewProject(ctx(argo), 'CREATE', shop, undefined))).toEqual(['T5']);
    const listed = configFromObject({
      privileged: { users: ['system:serviceaccount:argocd:argocd-application-controller'] },
    });
    expect(reviewProject(ctx(argo, snapshot(), listed), 'CREATE', shop, undefined).violations).toEqual([]);
  });
});
