/**
 * What a denial tells a subject about a project it does not own (docs/visibility.md). With
 * `visibility: all` (the default) the findings are as they always were: T4 names the project's tenant
 * and owners, and the other rules that run for a non-owner (T2, T3, T7, N2, Q1, Q2, Q3, T4's "being
 * deleted") describe the project's labels, namespaces and budget. With `own` the only finding is T4,
 * which names none of that and says what the caller owns instead. Every case below leaks under `all`
 * (the test shows the leak), so a rule that starts running for non-owners again under `own` fails it.
 */
import { aNamespace, aProject, aQuota, reviewContext } from '../support/fixtures.js';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, type TenantgateConfig } from '../../src/config/config.js';
import { reviewNamespace, reviewResourceQuota, type Verdict } from '../../src/validate/admission.js';
import type { UserInfo } from '../../src/validate/rules/tenancy.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import type { Project } from '../../src/validate/types.js';

const MALLORY: UserInfo = { username: 'mallory', groups: ['globex:admins'] }; // owns nothing
const WEBBY: UserInfo = { username: 'webby', groups: ['acme:web-admins'] }; // owns web and shop

const OWNERS: Project['spec']['owners'] = [
  { kind: 'Group', name: 'acme:payments-admins' },
  { kind: 'User', name: 'alice@acme.example' },
  { kind: 'ServiceAccount', namespace: 'ci', name: 'deployer' },
];

/** payments (tenant acme): budget 20 cpu / 64Gi / 200 pods, two namespaces of 8 cpu each. */
function payments(spec: Partial<Project['spec']> = {}, metadata: Partial<Project['metadata']> = {}): Project {
  return aProject(
    'payments',
    {
      tenant: 'acme',
      owners: OWNERS,
      quota: { hard: { 'requests.cpu': '20', 'requests.memory': '64Gi', pods: '200' } },
      namespaceDefaults: { quota: { hard: { 'requests.cpu': '2', 'requests.memory': '4Gi', pods: '20' } } },
      ...spec,
    },
    { uid: 'uid-payments', ...metadata },
  );
}

const FULL = (cpu: string) => ({ 'requests.cpu': cpu, 'requests.memory': '16Gi', pods: '50' });

function snapshot(project: Project = payments()): MemorySnapshot {
  return MemorySnapshot.of({
    projects: [
      project,
      aProject('web', { tenant: 'acme', owners: [{ kind: 'Group', name: 'acme:web-admins' }] }),
      aProject('shop', { tenant: 'acme', owners: [{ kind: 'User', name: 'webby' }] }),
    ],
    namespaces: [
      aNamespace('payments-api', { project: 'payments' }),
      aNamespace('payments-batch', { project: 'payments' }),
    ],
    quotas: [aQuota('payments-api', FULL('8')), aQuota('payments-batch', FULL('8'))],
  });
}

const config = (visibility: 'all' | 'own'): TenantgateConfig => ({ ...DEFAULT_CONFIG, visibility });

interface Case {
  /** The rules that leak under `all` (besides T4). */
  rules: string[];
  /** What the `all` findings disclose. */
  leaks: RegExp;
  review(config: TenantgateConfig, user: UserInfo): Verdict;
}

const CASES: Record<string, Case> = {
  'T4 create namespace: tenant and owners': {
    rules: [],
    leaks: /tenant acme.*owners are Group acme:payments-admins, User alice@acme\.example, ServiceAccount ci\/deployer/,
    review: (c, u) =>
      reviewNamespace(
        reviewContext(u, snapshot(), c),
        'CREATE',
        aNamespace('payments-dev', { project: 'payments' }),
        undefined,
      ),
  },
  "T2 create namespace with a wrong tenant label: the project's tenant": {
    rules: ['T2'],
    leaks: /tenantgate\.io\/tenant=acme/,
    review: (c, u) =>
      reviewNamespace(
        reviewContext(u, snapshot(), c),
        'CREATE',
        aNamespace('payments-dev', { project: 'payments', tenant: 'globex' }),
        undefined,
      ),
  },
  "N2 create namespace claiming the project by label under another name: the project's prefix": {
    rules: ['N2'],
    leaks: /a namespace of project payments must start with "payments-"/,
    review: (c, u) =>
      reviewNamespace(
        reviewContext(u, snapshot(), c),
        'CREATE',
        aNamespace('elsewhere', { project: 'payments' }),
        undefined,
      ),
  },
  "T7 create namespace with a protected label: the project's tenant": {
    rules: ['T7'],
    leaks: /\(project payments, tenant acme\)/,
    review: (c, u) =>
      reviewNamespace(
        reviewContext(u, snapshot(), c),
        'CREATE',
        aNamespace('payments-dev', {
          project: 'payments',
          labels: { 'pod-security.kubernetes.io/enforce': 'privileged' },
        }),
        undefined,
      ),
  },
  'Q1 maxNamespaces: how many namespaces the project has': {
    rules: ['Q1'],
    leaks: /would be namespace 3 of project payments, whose maxNamespaces is 2/,
    review: (c, u) =>
      reviewNamespace(
        reviewContext(u, snapshot(payments({ maxNamespaces: 2 })), c),
        'CREATE',
        aNamespace('payments-dev', { project: 'payments' }),
        undefined,
      ),
  },
  'Q1 create namespace over budget: the budget and its allocation': {
    rules: ['Q1'],
    leaks: /project payments has 17 of which 16 are allocated/,
    review: (c, u) =>
      reviewNamespace(
        reviewContext(
          u,
          snapshot(payments({ quota: { hard: { 'requests.cpu': '17', 'requests.memory': '64Gi', pods: '200' } } })),
          c,
        ),
        'CREATE',
        aNamespace('payments-dev', { project: 'payments' }),
        undefined,
      ),
  },
  'Q2 create namespace: the budgeted resources the defaults miss': {
    rules: ['Q2'],
    leaks: /budgets it, but .* does not cover it/,
    review: (c, u) =>
      reviewNamespace(
        reviewContext(
          u,
          snapshot(
            payments({ namespaceDefaults: { quota: { hard: { 'requests.cpu': '2', 'requests.memory': '4Gi' } } } }),
          ),
          c,
        ),
        'CREATE',
        aNamespace('payments-dev', { project: 'payments' }),
        undefined,
      ),
  },
  'T4 create namespace of a project being deleted: its state': {
    rules: ['T4'],
    leaks: /project payments is being deleted/,
    review: (c, u) =>
      reviewNamespace(
        reviewContext(u, snapshot(payments({}, { deletionTimestamp: '2026-01-01T00:00:00Z' })), c),
        'CREATE',
        aNamespace('payments-dev', { project: 'payments' }),
        undefined,
      ),
  },
  'T3 and T7 update namespace: the labels and the tenant': {
    rules: ['T3', 'T7'],
    leaks: /tenant acme/,
    review: (c, u) =>
      reviewNamespace(
        reviewContext(u, snapshot(), c),
        'UPDATE',
        aNamespace('payments-api', { project: 'web', labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } }),
        aNamespace('payments-api', { project: 'payments' }),
      ),
  },
  'T4 delete namespace: tenant and owners': {
    rules: [],
    leaks: /owners are Group acme:payments-admins/,
    review: (c, u) =>
      reviewNamespace(
        reviewContext(u, snapshot(), c),
        'DELETE',
        undefined,
        aNamespace('payments-batch', { project: 'payments' }),
      ),
  },
  'Q1 and Q2 create quota: the budget, its allocation, the budgeted resources': {
    rules: ['Q2', 'Q1'],
    leaks: /project payments has 20 of which 16 are allocated/,
    review: (c, u) =>
      reviewResourceQuota(
        reviewContext(u, snapshot(), c),
        'CREATE',
        'payments-new',
        aQuota('payments-new', { 'requests.cpu': '9' }, { name: 'extra' }),
        undefined,
      ),
  },
  'Q1 update quota: the budget and its allocation': {
    rules: ['Q1'],
    leaks: /project payments has 20 of which 8 are allocated/,
    review: (c, u) =>
      reviewResourceQuota(
        reviewContext(u, snapshot(), c),
        'UPDATE',
        'payments-api',
        aQuota('payments-api', FULL('13')),
        aQuota('payments-api', FULL('8')),
      ),
  },
  'Q3 delete quota: what the project budgets': {
    rules: ['Q3'],
    leaks: /project payments budgets them/,
    review: (c, u) =>
      reviewResourceQuota(
        reviewContext(u, snapshot(), c),
        'DELETE',
        'payments-api',
        undefined,
        aQuota('payments-api', FULL('8')),
      ),
  },
};

const rules = (v: Verdict) => v.violations.map((x) => x.rule);
const text = (v: Verdict) => v.violations.map((x) => x.message).join('\n');

describe('visibility: all keeps the full findings for a non-owner', () => {
  for (const [name, c] of Object.entries(CASES)) {
    it(name, () => {
      const v = c.review(config('all'), MALLORY);
      expect(rules(v).sort()).toEqual(['T4', ...c.rules].sort());
      expect(text(v)).toMatch(c.leaks);
    });
  }
});

describe('visibility: own tells a non-owner only T4, naming nothing of the project', () => {
  for (const [name, c] of Object.entries(CASES)) {
    it(name, () => {
      for (const user of [MALLORY, WEBBY]) {
        const v = c.review(config('own'), user);
        expect(rules(v)).toEqual(['T4']);
        const message = text(v);
        expect(message).not.toMatch(c.leaks);
        // No tenant, no owner, no number (budgets, allocations, counts), no project name beyond the namespace asked for.
        expect(message).not.toMatch(/acme|alice|deployer|payments-admins|\btenant\b|\d|project payments/);
        expect(message).toContain(`user "${user.username}" may not `);
        expect(message).toContain('ask the platform team');
      }
    });
  }

  it('says what the caller owns instead: its projects and their prefixes, or none', () => {
    const create = (user: UserInfo) =>
      reviewNamespace(
        reviewContext(user, snapshot(), config('own')),
        'CREATE',
        aNamespace('payments-dev', { project: 'payments' }),
        undefined,
      );
    expect(text(create(WEBBY))).toBe(
      'user "webby" may not create namespace payments-dev: it belongs to a project user "webby" does not own; user "webby" owns projects shop (namespaces starting with "shop-"), web (namespaces starting with "web-"); ask the platform team to be made an owner of another',
    );
    expect(text(create(MALLORY))).toBe(
      'user "mallory" may not create namespace payments-dev: it belongs to a project user "mallory" does not own; user "mallory" owns no project; ask the platform team to be made an owner of another',
    );
  });

  it("changes nothing for the project's owners: their findings still name their own budget", () => {
    const owner: UserInfo = { username: 'alice@acme.example' };
    const v = reviewResourceQuota(
      reviewContext(owner, snapshot(), config('own')),
      'UPDATE',
      'payments-api',
      aQuota('payments-api', FULL('13')),
      aQuota('payments-api', FULL('8')),
    );
    expect(rules(v)).toEqual(['Q1']);
    expect(text(v)).toMatch(/project payments has 20 of which 8 are allocated/);
    expect(
      reviewNamespace(
        reviewContext(owner, snapshot(), config('own')),
        'CREATE',
        aNamespace('payments-dev', { project: 'payments' }),
        undefined,
      ).violations,
    ).toEqual([]);
  });
});
