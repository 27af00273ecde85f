/**
 * T7 beyond the namespace's own metadata: a tenant may not put finalizers or owner references on the
 * objects that hold its project's budget and boundary (every ResourceQuota of a project namespace, and
 * the LimitRange, NetworkPolicy and RoleBinding tenantgate writes there), by CREATE or UPDATE, nor
 * create a namespace with a spec.finalizers entry nobody removes. Kubernetes' controllers still drop
 * them; privileged subjects still set them. And a namespace created with generateName is labelled,
 * judged and refused as a named one (the mutating webhook sees no name yet: measured on kube-apiserver
 * v1.35, test/e2e/deletion-blocking.test.ts).
 */
import fastJsonPatch from 'fast-json-patch';
import { describe, expect, it } from 'vitest';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import {
  reviewNamespace,
  reviewResourceQuota,
  type ReviewContext,
  type Verdict,
} from '../../src/validate/admission.js';
import { mutationFor, verdictFor, type AdmissionRequest } from '../../src/webhook/review.js';
import { HeadroomGuard } from '../../src/webhook/headroom/guard.js';
import { MemoryLedger } from '../support/memory-ledger.js';
import { aNamespace, aProject, aQuota, aUser, reviewContext } from '../support/fixtures.js';
import type { NamespaceObject } from '../../src/validate/types.js';

const ALICE = aUser('alice', ['acme:payments-admins']);
const BOB = aUser('bob', ['globex:admins']);
const ADMIN = aUser('admin', ['system:masters']);
const GC = aUser('system:serviceaccount:kube-system:generic-garbage-collector');
const NAMESPACE_CONTROLLER = aUser('system:serviceaccount:kube-system:namespace-controller');

const payments = aProject(
  'payments',
  {
    owners: [{ kind: 'Group', name: 'acme:payments-admins' }],
    quota: { hard: { 'requests.cpu': '10' } },
    namespaceDefaults: { quota: { hard: { 'requests.cpu': '1' } } },
  },
  { uid: 'uid-payments' },
);
const ml = aProject('ml', { tenant: 'globex', owners: [{ kind: 'Group', name: 'globex:admins' }] }, { uid: 'uid-ml' });
const covering = aQuota('payments-dev', { 'requests.cpu': '2' });
const snapshot = () =>
  MemorySnapshot.of({
    projects: [payments, ml],
    namespaces: [
      aNamespace('payments-dev', { project: 'payments', uid: 'uid-payments' }),
      aNamespace('platform-tools'),
    ],
    quotas: [covering],
  });
const ctx = (user = ALICE): ReviewContext => reviewContext(user, snapshot());
const rules = (v: Verdict) => v.violations.map((x) => x.rule);
const messages = (v: Verdict) => v.violations.map((x) => x.message).join('\n');

/** An owner reference to another tenant's Project that would make its foreground deletion wait. */
const FOREIGN_OWNER = {
  apiVersion: 'tenantgate.io/v1alpha1',
  kind: 'Project',
  name: 'ml',
  uid: 'uid-ml',
  blockOwnerDeletion: true,
};

function withMeta<T extends { metadata: object }>(o: T, meta: Record<string, unknown>): T {
  return { ...o, metadata: { ...o.metadata, ...meta } };
}

describe('T7 on ResourceQuotas in project namespaces', () => {
  it('refuses an owner adding an owner reference to its covering quota, naming object, field, value and what is allowed', () => {
    const v = reviewResourceQuota(
      ctx(),
      'UPDATE',
      'payments-dev',
      withMeta(covering, { ownerReferences: [FOREIGN_OWNER] }),
      covering,
    );
    expect(rules(v)).toEqual(['T7']);
    expect(messages(v)).toBe(
      `ResourceQuota payments-dev/tenantgate-quota (project payments, tenant acme): user "alice" may not add, change or remove metadata.ownerReferences ([] → [${JSON.stringify(FOREIGN_OWNER)}]); in a project namespace only privileged subjects set metadata.finalizers and metadata.ownerReferences of every ResourceQuota, LimitRange tenantgate-limits, NetworkPolicy tenantgate-isolation and RoleBinding tenantgate-owners (allowed: leave both as they are; ask the platform team)`,
    );
    expect(v.violations[0]!.path).toEqual(['metadata', 'ownerReferences']);
  });

  it('refuses finalizers of any domain, on CREATE of another quota as on UPDATE, and their removal too', () => {
    for (const finalizer of ['example.com/hold', 'kubernetes', 'foregroundDeletion', 'x']) {
      const created = aQuota('payments-dev', { 'requests.cpu': '2' }, { name: 'extra' });
      expect(
        rules(
          reviewResourceQuota(
            ctx(),
            'CREATE',
            'payments-dev',
            withMeta(created, { finalizers: [finalizer] }),
            undefined,
          ),
        ),
        finalizer,
      ).toEqual(['T7']);
      expect(
        rules(
          reviewResourceQuota(
            ctx(),
            'UPDATE',
            'payments-dev',
            withMeta(covering, { finalizers: [finalizer] }),
            covering,
          ),
        ),
        finalizer,
      ).toEqual(['T7']);
    }
    const held = withMeta(covering, { finalizers: ['platform.example/keep'] });
    expect(messages(reviewResourceQuota(ctx(), 'UPDATE', 'payments-dev', covering, held))).toContain(
      'metadata.finalizers (["platform.example/keep"] → [])',
    );
    // A scoped quota counts for nothing, yet it is a quota in a project namespace: the same rule.
    const scoped = aQuota('payments-dev', { 'requests.cpu': '0' }, { name: 'besteffort', scopes: ['BestEffort'] });
    expect(
      rules(
        reviewResourceQuota(
          ctx(),
          'CREATE',
          'payments-dev',
          withMeta(scoped, { ownerReferences: [{ ...FOREIGN_OWNER, blockOwnerDeletion: false }] }),
          undefined,
        ),
      ),
    ).toEqual(['T7']);
  });

  it('admits the same quota writes without a change to either list, and every change by a privileged subject', () => {
    const held = withMeta(covering, { finalizers: ['platform.example/keep'], ownerReferences: [FOREIGN_OWNER] });
    expect(
      rules(reviewResourceQuota(ctx(), 'UPDATE', 'payments-dev', withMeta(held, { labels: { team: 'x' } }), held)),
    ).toEqual([]);
    expect(rules(reviewResourceQuota(ctx(ADMIN), 'UPDATE', 'payments-dev', held, covering))).toEqual([]);
    expect(
      rules(
        reviewResourceQuota(
          ctx(ADMIN),
          'CREATE',
          'payments-dev',
          withMeta(aQuota('payments-dev', { 'requests.cpu': '1' }, { name: 'p' }), { finalizers: ['x'] }),
          undefined,
        ),
      ),
    ).toEqual([]);
  });

  it("lets Kubernetes' controllers drop finalizers and owner references and delete, but not add one", () => {
    const foreground = withMeta(covering, { finalizers: ['foregroundDeletion'], ownerReferences: [FOREIGN_OWNER] });
    expect(
      rules(
        reviewResourceQuota(
          ctx(GC),
          'UPDATE',
          'payments-dev',
          withMeta(covering, { ownerReferences: [FOREIGN_OWNER] }),
          foreground,
        ),
      ),
    ).toEqual([]);
    expect(rules(reviewResourceQuota(ctx(GC), 'UPDATE', 'payments-dev', covering, foreground))).toEqual([]);
    expect(rules(reviewResourceQuota(ctx(GC), 'UPDATE', 'payments-dev', foreground, covering))).toContain('T7');
    // A terminating namespace is emptied by the namespace controller, its covering quota included.
    const terminating = MemorySnapshot.of({
      projects: [payments],
      namespaces: [aNamespace('payments-dev', { project: 'payments', terminating: true })],
      quotas: [covering],
    });
    expect(
      rules(
        reviewResourceQuota(
          reviewContext(NAMESPACE_CONTROLLER, terminating),
          'DELETE',
          'payments-dev',
          undefined,
          covering,
        ),
      ),
    ).toEqual([]);
  });
});

function request(
  kind: string,
  group: string,
  namespace: string,
  object: Record<string, unknown>,
  oldObject?: Record<string, unknown>,
  user = ALICE,
): AdmissionRequest {
  return {
    uid: 'u',
    kind: { group, version: 'v1', kind },
    namespace,
    operation: oldObject ? 'UPDATE' : 'CREATE',
    userInfo: user,
    object,
    ...(oldObject ? { oldObject } : {}),
  };
}

describe("T7 on tenantgate's LimitRange, NetworkPolicy and RoleBinding (through the webhook's dispatch)", () => {
  const managed = [
    ['LimitRange', '', 'tenantgate-limits'],
    ['NetworkPolicy', 'networking.k8s.io', 'tenantgate-isolation'],
    ['RoleBinding', 'rbac.authorization.k8s.io', 'tenantgate-owners'],
  ] as const;

  it.each(managed)('%s: a tenant adds, changes or removes no owner reference or finalizer', (kind, group, name) => {
    const stored = {
      apiVersion: 'v1',
      kind,
      metadata: { name, namespace: 'payments-dev', labels: { 'app.kubernetes.io/managed-by': 'tenantgate' } },
      spec: {},
    };
    const attacked = withMeta(stored, { ownerReferences: [FOREIGN_OWNER] });
    const v = verdictFor(ctx(), request(kind, group, 'payments-dev', attacked, stored));
    expect(rules(v)).toEqual(['T7']);
    expect(messages(v)).toContain(
      `${kind} payments-dev/${name} (project payments, tenant acme): user "alice" may not add, change or remove metadata.ownerReferences`,
    );
    expect(
      rules(
        verdictFor(
          ctx(),
          request(kind, group, 'payments-dev', withMeta(stored, { finalizers: ['weird.domain.example/x'] }), stored),
        ),
      ),
    ).toEqual(['T7']);
    expect(
      rules(
        verdictFor(
          ctx(),
          request(kind, group, 'payments-dev', withMeta(stored, { finalizers: ['weird.domain.example/x'] })),
        ),
      ),
    ).toEqual(['T7']); // CREATE
    expect(rules(verdictFor(ctx(BOB), request(kind, group, 'payments-dev', attacked, stored, BOB)))).toEqual(['T7']);
    // Allowed: privileged subjects; the garbage collector dropping one; an edit that leaves both lists alone.
    expect(rules(verdictFor(ctx(ADMIN), request(kind, group, 'payments-dev', attacked, stored, ADMIN)))).toEqual([]);
    expect(
      rules(
        verdictFor(
          ctx(GC),
          request(kind, group, 'payments-dev', stored, withMeta(stored, { finalizers: ['foregroundDeletion'] }), GC),
        ),
      ),
    ).toEqual([]);
    expect(rules(verdictFor(ctx(GC), request(kind, group, 'payments-dev', attacked, stored, GC)))).toEqual(['T7']);
    expect(
      rules(
        verdictFor(ctx(), request(kind, group, 'payments-dev', withMeta(stored, { labels: { team: 'x' } }), stored)),
      ),
    ).toEqual([]);
  });

  it('leaves other names, other groups and namespaces outside projects alone', () => {
    const other = {
      kind: 'RoleBinding',
      metadata: { name: 'my-team', namespace: 'payments-dev', ownerReferences: [FOREIGN_OWNER] },
    };
    expect(
      rules(verdictFor(ctx(), request('RoleBinding', 'rbac.authorization.k8s.io', 'payments-dev', other))),
    ).toEqual([]);
    const elsewhere = {
      kind: 'LimitRange',
      metadata: { name: 'tenantgate-limits', namespace: 'platform-tools', finalizers: ['x'] },
    };
    expect(rules(verdictFor(ctx(), request('LimitRange', '', 'platform-tools', elsewhere)))).toEqual([]);
    const crd = {
      kind: 'LimitRange',
      metadata: { name: 'tenantgate-limits', namespace: 'payments-dev', finalizers: ['x'] },
    };
    expect(rules(verdictFor(ctx(), request('LimitRange', 'example.com', 'payments-dev', crd)))).toEqual([]);
  });
});

describe('T7 on the spec.finalizers of a new namespace', () => {
  const fresh = (finalizers?: string[]): NamespaceObject => ({
    ...aNamespace('payments-new', {
      project: 'payments',
      uid: 'uid-payments',
      labels: {
        'pod-security.kubernetes.io/enforce': 'baseline',
        'pod-security.kubernetes.io/warn': 'restricted',
        'pod-security.kubernetes.io/audit': 'restricted',
      },
    }),
    ...(finalizers ? { spec: { finalizers } } : {}),
  });

  it('admits none or "kubernetes" (which the apiserver adds itself) and refuses any other entry, naming it', () => {
    expect(rules(reviewNamespace(ctx(), 'CREATE', fresh(), undefined))).toEqual([]);
    expect(rules(reviewNamespace(ctx(), 'CREATE', fresh(['kubernetes']), undefined))).toEqual([]);
    const v = reviewNamespace(ctx(), 'CREATE', fresh(['kubernetes', 'example.com/never']), undefined);
    expect(rules(v)).toEqual(['T7']);
    expect(messages(v)).toBe(
      'Namespace payments-new (project payments, tenant acme): user "alice" may not set spec.finalizers "example.com/never" (has ["kubernetes","example.com/never"]); allowed: none or "kubernetes", which the apiserver adds itself; only privileged subjects create namespaces with other finalizers',
    );
    expect(v.violations[0]!.path).toEqual(['spec', 'finalizers']);
    expect(rules(reviewNamespace(ctx(ADMIN), 'CREATE', fresh(['kubernetes', 'example.com/never']), undefined))).toEqual(
      [],
    );
  });
});

describe('generateName', () => {
  const asked = (labels?: Record<string, string>): NamespaceObject => ({
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { generateName: 'payments-', ...(labels ? { labels } : {}) },
  });
  const mutate = (user: typeof ALICE, ns: NamespaceObject): NamespaceObject => {
    const res = mutationFor(ctx(user), {
      uid: 'm',
      kind: { group: '', version: 'v1', kind: 'Namespace' },
      operation: 'CREATE',
      userInfo: user,
      object: ns as unknown as Record<string, unknown>,
    });
    if (!res.patch) return ns;
    return fastJsonPatch.applyPatch(structuredClone(ns), JSON.parse(Buffer.from(res.patch, 'base64').toString()))
      .newDocument;
  };
  /** What the apiserver hands the validating webhook: the generated name, and spec.finalizers. */
  const generated = (ns: NamespaceObject, name = 'payments-x7k2q'): NamespaceObject => ({
    ...ns,
    metadata: { ...ns.metadata, name, labels: { ...ns.metadata.labels, 'kubernetes.io/metadata.name': name } },
    spec: { finalizers: ['kubernetes'] },
  });

  it('the mutating webhook, seeing no name, labels and annotates as for a named namespace of the project', () => {
    const mutated = mutate(ALICE, asked({ team: 'x' }));
    expect(mutated.metadata.labels).toEqual({
      team: 'x',
      'tenantgate.io/project': 'payments',
      'tenantgate.io/tenant': 'acme',
      'pod-security.kubernetes.io/enforce': 'baseline',
      'pod-security.kubernetes.io/warn': 'restricted',
      'pod-security.kubernetes.io/audit': 'restricted',
    });
    expect(mutated.metadata.annotations).toEqual({ 'tenantgate.io/project-uid': 'uid-payments' });
    expect(mutated.metadata.name).toBeUndefined();
    // Exactly what a named create of the same project gets.
    const named = mutate(ALICE, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'payments-x7k2q', labels: { team: 'x' } },
    });
    expect(named.metadata.labels).toEqual(mutated.metadata.labels);
    expect(named.metadata.annotations).toEqual(mutated.metadata.annotations);
  });

  it('the validating webhook admits the generated name of an owner, with the quota rules as usual', () => {
    const v = reviewNamespace(ctx(), 'CREATE', generated(mutate(ALICE, asked())), undefined);
    expect(rules(v)).toEqual([]);
    expect(v.allocation).toMatchObject({ project: 'payments', namespace: 'payments-x7k2q', grows: true });
    const full = MemorySnapshot.of({
      projects: [aProject('payments', { ...payments.spec, maxNamespaces: 1 }, { uid: 'uid-payments' })],
      namespaces: [aNamespace('payments-dev', { project: 'payments', uid: 'uid-payments' })],
    });
    expect(
      rules(reviewNamespace(reviewContext(ALICE, full), 'CREATE', generated(mutate(ALICE, asked())), undefined)),
    ).toEqual(['Q1']);
  });

  it('Q5 reserves headroom under each generated name: a burst of generateName creates admits what fits, one process or on a ledger', async () => {
    for (const ledger of [undefined, new MemoryLedger()]) {
      const s = MemorySnapshot.of({
        projects: [
          aProject(
            'burst',
            {
              owners: [{ kind: 'Group', name: 'acme:payments-admins' }],
              quota: { hard: { 'requests.cpu': '2' } },
              namespaceDefaults: { quota: { hard: { 'requests.cpu': '1' } } },
            },
            { uid: 'uid-burst' },
          ),
        ],
      });
      const guard = new HeadroomGuard({ ttlMs: 60_000, ...(ledger ? { ledger } : {}) });
      // As the validating webhook gets them: the generated name in request.name and metadata.name, the labels the mutating webhook added.
      const create = (name: string): AdmissionRequest => ({
        uid: name,
        kind: { group: '', version: 'v1', kind: 'Namespace' },
        operation: 'CREATE',
        name,
        userInfo: ALICE,
        object: {
          metadata: {
            name,
            generateName: 'burst-',
            labels: {
              'tenantgate.io/project': 'burst',
              'tenantgate.io/tenant': 'acme',
              'kubernetes.io/metadata.name': name,
            },
          },
          spec: { finalizers: ['kubernetes'] },
        },
      });
      const verdicts = await Promise.all(
        ['burst-b4k9z', 'burst-x7k2q', 'burst-m2n5p'].map((n) => guard.decide(reviewContext(ALICE, s), create(n))),
      );
      expect(verdicts.map(rules), ledger ? 'on a ledger' : 'one process').toEqual([[], [], ['Q1']]);
      expect(messages(verdicts[2]!)).toMatch(
        /^Namespace burst-m2n5p asks requests\.cpu 1 \(namespaceDefaults\), project burst has 2 of which 2 are allocated/,
      );
    }
  });

  it("refuses a prefix the caller does not own with T4, naming the generateName and the caller's own projects", () => {
    const mutated = mutate(BOB, asked());
    expect(mutated.metadata.labels).toBeUndefined(); // not claimed for a project bob may not create namespaces in
    const v = reviewNamespace(ctx(BOB), 'CREATE', generated(mutated), undefined);
    expect(rules(v)).toEqual(['T4']);
    expect(messages(v)).toBe(
      'user "bob" may not create namespace payments-x7k2q (generateName "payments-"): it belongs to project payments (tenant acme), whose owners are Group acme:payments-admins; user "bob" owns project ml (namespaces starting with "ml-")',
    );
  });

  it('refuses a prefix of no project with T6, naming the generateName and the prefixes the caller may use', () => {
    const ns: NamespaceObject = { apiVersion: 'v1', kind: 'Namespace', metadata: { generateName: 'scratch-' } };
    expect(mutate(ALICE, ns)).toBe(ns);
    const v = reviewNamespace(ctx(), 'CREATE', generated(ns, 'scratch-b4k9z'), undefined);
    expect(rules(v)).toEqual(['T6']);
    expect(messages(v)).toBe(
      'Namespace scratch-b4k9z (generateName "scratch-") belongs to no project, and user "alice" may only create namespaces inside a project it owns (names starting with "payments-")',
    );
  });

  it('infers nothing from a generateName shorter than a prefix, and the validating webhook judges the generated name anyway', () => {
    expect(
      mutate(ALICE, { apiVersion: 'v1', kind: 'Namespace', metadata: { generateName: 'payments' } }).metadata.labels,
    ).toBeUndefined();
    // Labelled for payments by a forged request, but generated outside its prefix: N2.
    const forged = generated(
      {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: {
          generateName: 'pay',
          labels: { 'tenantgate.io/project': 'payments', 'tenantgate.io/tenant': 'acme' },
        },
      },
      'payx7k2q',
    );
    expect(rules(reviewNamespace(ctx(), 'CREATE', forged, undefined))).toContain('N2');
  });
});
