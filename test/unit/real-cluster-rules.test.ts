/**
 * The rules as a real cluster exercises them: usage counts against the budget, Kubernetes' own
 * controllers finish deletions, namespace metadata that stalls deletions is protected, the status and
 * finalize subresources are for controllers, self-service namespaces are covered, Pod Security labels
 * are set, and the races between quota deletes and namespace creates are closed (one process and two
 * replicas sharing a ledger).
 */
import { TEST_NOW } from '../support/instant.js';
import fastJsonPatch, { type Operation } from 'fast-json-patch';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import {
  reviewNamespace,
  reviewProject,
  reviewResourceQuota,
  type ReviewContext,
} from '../../src/validate/admission.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import type { Project, ResourceQuotaObject } from '../../src/validate/types.js';
import { HeadroomGuard } from '../../src/webhook/headroom/guard.js';
import { mutationFor, verdictFor, type AdmissionRequest } from '../../src/webhook/review.js';
import { MemoryLedger } from '../support/memory-ledger.js';
import { aNamespace, aProject, aQuota, aUser } from '../support/fixtures.js';

const alice = aUser('alice', ['acme:payments-admins']);
const admin = aUser('admin', ['system:masters']);
const namespaceController = aUser('system:serviceaccount:kube-system:namespace-controller', [
  'system:serviceaccounts',
  'system:serviceaccounts:kube-system',
]);
const garbageCollector = aUser('system:serviceaccount:kube-system:generic-garbage-collector', [
  'system:serviceaccounts',
  'system:serviceaccounts:kube-system',
]);

const payments = (spec: Partial<Project['spec']> = {}): Project =>
  aProject(
    'payments',
    {
      owners: [{ kind: 'Group', name: 'acme:payments-admins' }],
      quota: { hard: { 'requests.cpu': '20', pods: '100' } },
      namespaceDefaults: { quota: { hard: { 'requests.cpu': '2', pods: '10' } } },
      ...spec,
    },
    { uid: 'uid-payments' },
  );

const ctx = (s: MemorySnapshot, user = alice): ReviewContext => ({
  at: TEST_NOW,
  config: DEFAULT_CONFIG,
  snapshot: s,
  user,
});
const { applyPatch } = fastJsonPatch;
const rules = (v: { violations: { rule: string }[] }) => v.violations.map((x) => x.rule);

/** A quota as the quota controller reports it: status.hard as enforced, status.used as counted. */
function observed(
  ns: string,
  hard: Record<string, string>,
  enforced: Record<string, string>,
  used: Record<string, string>,
  name = 'tenantgate-quota',
): ResourceQuotaObject {
  return { ...aQuota(ns, hard, { name }), status: { hard: enforced, used } };
}

describe('usage counts against the budget', () => {
  it('the shrink-and-shift cycle is refused: a lowered quota still holds what is in use', () => {
    const s = MemorySnapshot.of({
      projects: [payments()],
      namespaces: [
        aNamespace('payments-a', { project: 'payments' }),
        aNamespace('payments-b', { project: 'payments' }),
      ],
      quotas: [
        // A was raised to 18, filled with 18 CPUs of pods, then lowered to 1: nothing is evicted.
        observed(
          'payments-a',
          { 'requests.cpu': '1', pods: '50' },
          { 'requests.cpu': '1', pods: '50' },
          { 'requests.cpu': '18', pods: '18' },
        ),
        observed(
          'payments-b',
          { 'requests.cpu': '2', pods: '10' },
          { 'requests.cpu': '2', pods: '10' },
          { 'requests.cpu': '0', pods: '0' },
        ),
      ],
    });
    const raise = reviewResourceQuota(
      ctx(s),
      'UPDATE',
      'payments-b',
      aQuota('payments-b', { 'requests.cpu': '19', pods: '10' }),
      aQuota('payments-b', { 'requests.cpu': '2', pods: '10' }),
    );
    expect(rules(raise)).toEqual(['Q1']);
    expect(raise.violations[0]!.message).toBe(
      'ResourceQuota payments-b/tenantgate-quota asks requests.cpu 19, project payments has 20 of which 18 are allocated to other namespaces: at most 2 fits; counted by usage: payments-a holds requests.cpu 18 (its quota says 1; in use or still enforced)',
    );
    expect(
      rules(
        reviewResourceQuota(
          ctx(s),
          'UPDATE',
          'payments-b',
          aQuota('payments-b', { 'requests.cpu': '2', pods: '10' }),
          aQuota('payments-b', { 'requests.cpu': '1', pods: '10' }),
        ),
      ),
    ).toEqual([]);
  });

  it('a quota lowered in the spec but not yet in status.hard still holds the enforced limit', () => {
    const s = MemorySnapshot.of({
      projects: [payments()],
      namespaces: [
        aNamespace('payments-a', { project: 'payments' }),
        aNamespace('payments-b', { project: 'payments' }),
      ],
      quotas: [
        observed(
          'payments-a',
          { 'requests.cpu': '1', pods: '10' },
          { 'requests.cpu': '16', pods: '10' },
          { 'requests.cpu': '0', pods: '0' },
        ),
        aQuota('payments-b', { 'requests.cpu': '2', pods: '10' }),
      ],
    });
    const raise = reviewResourceQuota(
      ctx(s),
      'UPDATE',
      'payments-b',
      aQuota('payments-b', { 'requests.cpu': '5', pods: '10' }),
      aQuota('payments-b', { 'requests.cpu': '2', pods: '10' }),
    );
    expect(raise.violations[0]?.message).toMatch(/of which 16 are allocated to other namespaces: at most 4 fits/);
  });

  it('deleting the tighter of two quotas is a growth, judged by Q1 (privileged subjects too)', () => {
    const s = MemorySnapshot.of({
      projects: [payments()],
      namespaces: [
        aNamespace('payments-a', { project: 'payments' }),
        aNamespace('payments-b', { project: 'payments' }),
      ],
      quotas: [
        aQuota('payments-a', { 'requests.cpu': '15', pods: '10' }, { name: 'wide' }),
        aQuota('payments-a', { 'requests.cpu': '1', pods: '10' }, { name: 'tight' }),
        aQuota('payments-b', { 'requests.cpu': '18', pods: '10' }),
      ],
    });
    for (const user of [alice, admin]) {
      const v = reviewResourceQuota(
        ctx(s, user),
        'DELETE',
        'payments-a',
        undefined,
        aQuota('payments-a', { 'requests.cpu': '1', pods: '10' }, { name: 'tight' }),
      );
      expect(rules(v), user.username).toEqual(['Q1']);
      expect(v.violations[0]!.message).toMatch(
        /^ResourceQuota payments-a\/tight asks requests\.cpu 15, project payments has 20 of which 18 are allocated to other namespaces: at most 2 fits/,
      );
    }
    // The wider one may go: the namespace keeps the tighter limit.
    expect(
      rules(
        reviewResourceQuota(
          ctx(s),
          'DELETE',
          'payments-a',
          undefined,
          aQuota('payments-a', { 'requests.cpu': '15', pods: '10' }, { name: 'wide' }),
        ),
      ),
    ).toEqual([]);
  });
});

describe("Kubernetes' own controllers", () => {
  const terminating = () =>
    MemorySnapshot.of({
      projects: [payments()],
      namespaces: [
        aNamespace('payments-batch', { project: 'payments', terminating: true }),
        aNamespace('payments-api', { project: 'payments' }),
        aNamespace('platform-tools', { terminating: true }),
      ],
      quotas: [
        aQuota('payments-batch', { 'requests.cpu': '2', pods: '10' }),
        aQuota('payments-api', { 'requests.cpu': '2', pods: '10' }),
        aQuota('platform-tools', { pods: '5' }),
      ],
    });

  it('the namespace controller empties a terminating namespace: quota deletes are admitted, in and outside projects', () => {
    const s = terminating();
    const del = (ns: string, hard: Record<string, string>) =>
      reviewResourceQuota(ctx(s, namespaceController), 'DELETE', ns, undefined, aQuota(ns, hard));
    expect(rules(del('payments-batch', { 'requests.cpu': '2', pods: '10' }))).toEqual([]);
    expect(rules(del('platform-tools', { pods: '5' }))).toEqual([]);
    // A tenant in the same terminating namespace is still judged: T4 for a non-owner, Q3 for the owner.
    expect(
      rules(
        reviewResourceQuota(
          ctx(s, aUser('bob', ['globex:admins'])),
          'DELETE',
          'payments-batch',
          undefined,
          aQuota('payments-batch', { 'requests.cpu': '2', pods: '10' }),
        ),
      ),
    ).toEqual(['T4', 'Q3']);
    expect(
      rules(
        reviewResourceQuota(
          ctx(s),
          'DELETE',
          'payments-batch',
          undefined,
          aQuota('payments-batch', { 'requests.cpu': '2', pods: '10' }),
        ),
      ),
    ).toEqual(['Q3']);
  });

  it('in a live namespace a controller is not an owner, but coverage still holds (Q3)', () => {
    const s = terminating();
    const v = reviewResourceQuota(
      ctx(s, garbageCollector),
      'DELETE',
      'payments-api',
      undefined,
      aQuota('payments-api', { 'requests.cpu': '2', pods: '10' }),
    );
    expect(rules(v)).toEqual(['Q3']);
    expect(v.violations[0]!.message).toContain(
      'user "system:serviceaccount:kube-system:generic-garbage-collector" may replace it but not delete it',
    );
    // They never write quotas.
    expect(
      rules(
        reviewResourceQuota(
          ctx(s, garbageCollector),
          'UPDATE',
          'payments-api',
          aQuota('payments-api', { 'requests.cpu': '9', pods: '10' }),
          aQuota('payments-api', { 'requests.cpu': '2', pods: '10' }),
        ),
      ),
    ).toEqual(['T4']);
  });

  it('the namespace controller deletes a finalised namespace; the garbage collector removes a foregroundDeletion finalizer', () => {
    const s = terminating();
    const ns = aNamespace('payments-api', { project: 'payments' });
    expect(rules(reviewNamespace(ctx(s, namespaceController), 'DELETE', undefined, ns))).toEqual([]);
    const before = { ...ns, metadata: { ...ns.metadata, finalizers: ['foregroundDeletion'] } };
    expect(rules(reviewNamespace(ctx(s, garbageCollector), 'UPDATE', ns, before))).toEqual([]);
    // …but a controller changing a label is judged like anyone else.
    const relabelled = { ...ns, metadata: { ...ns.metadata, labels: { ...ns.metadata.labels, x: 'y' } } };
    expect(rules(reviewNamespace(ctx(s, garbageCollector), 'UPDATE', relabelled, ns))).toEqual(['T4']);
    // …and so is one adding a finalizer or an owner reference: controllers only ever remove them.
    const held = { ...ns, metadata: { ...ns.metadata, finalizers: ['example.com/hold'] } };
    expect(rules(reviewNamespace(ctx(s, garbageCollector), 'UPDATE', held, ns))).toContain('T7');
    const owned = {
      ...ns,
      metadata: {
        ...ns.metadata,
        ownerReferences: [
          {
            apiVersion: 'tenantgate.io/v1alpha1',
            kind: 'Project',
            name: 'shop',
            uid: 'u-shop',
            blockOwnerDeletion: true,
          },
        ],
      },
    };
    expect(rules(reviewNamespace(ctx(s, namespaceController), 'UPDATE', owned, ns))).toContain('T7');
  });

  it('the garbage collector removes foregroundDeletion from a Project deleted in the foreground (Argo CD prune), and may change nothing else', () => {
    const s = new MemorySnapshot();
    const project = payments();
    const deleting = {
      ...project,
      metadata: { ...project.metadata, deletionTimestamp: '2026-11-24T00:00:00Z', finalizers: ['foregroundDeletion'] },
    };
    const released = { ...deleting, metadata: { ...deleting.metadata, finalizers: [] } };
    expect(rules(reviewProject(ctx(s, garbageCollector), 'UPDATE', released, deleting))).toEqual([]);
    const widened = { ...released, spec: { ...released.spec, owners: [{ kind: 'User' as const, name: 'mallory' }] } };
    expect(rules(reviewProject(ctx(s, garbageCollector), 'UPDATE', widened, deleting))).toEqual(['T5']);
    expect(rules(reviewProject(ctx(s, alice), 'UPDATE', released, deleting))).toEqual(['T5']);
  });
});

describe('T7: finalizers and owner references on namespaces', () => {
  const s = () =>
    MemorySnapshot.of({ projects: [payments()], namespaces: [aNamespace('payments-api', { project: 'payments' })] });
  const ns = aNamespace('payments-api', { project: 'payments' });

  it('an owner may not add a finalizer or an ownerReference to its namespace; a privileged subject may', () => {
    const withFinalizer = { ...ns, metadata: { ...ns.metadata, finalizers: ['example.com/hold'] } };
    const v = reviewNamespace(ctx(s()), 'UPDATE', withFinalizer, ns);
    expect(rules(v)).toEqual(['T7']);
    expect(v.violations[0]!.message).toContain('metadata.finalizers ([] → ["example.com/hold"])');
    const owned = {
      ...ns,
      metadata: {
        ...ns.metadata,
        ownerReferences: [
          {
            apiVersion: 'tenantgate.io/v1alpha1',
            kind: 'Project',
            name: 'ml',
            uid: 'uid-ml',
            blockOwnerDeletion: true,
          },
        ],
      },
    };
    expect(rules(reviewNamespace(ctx(s()), 'UPDATE', owned, ns))).toEqual(['T7']);
    expect(
      rules(
        reviewNamespace(
          ctx(s()),
          'CREATE',
          { ...owned, metadata: { ...owned.metadata, name: 'payments-new' } },
          undefined,
        ),
      ),
    ).toContain('T7');
    expect(rules(reviewNamespace(ctx(s()), 'UPDATE', ns, withFinalizer))).toEqual(['T7']); // removing one too
    expect(rules(reviewNamespace(ctx(s(), admin), 'UPDATE', owned, ns))).toEqual([]);
  });
});

describe('T8: status and finalize subresources', () => {
  const request = (
    kind: 'Namespace' | 'ResourceQuota',
    subResource: string,
    username: string,
    groups: string[] = [],
  ): AdmissionRequest => ({
    uid: 'u',
    kind: { group: '', version: 'v1', kind },
    subResource,
    operation: 'UPDATE',
    name: kind === 'Namespace' ? 'payments-api' : 'tenantgate-quota',
    ...(kind === 'ResourceQuota' ? { namespace: 'payments-api' } : {}),
    userInfo: { username, groups },
    object: { metadata: { name: 'x' } },
    oldObject: { metadata: { name: 'x' } },
  });
  const s = MemorySnapshot.of({
    projects: [payments()],
    namespaces: [aNamespace('payments-api', { project: 'payments' })],
  });

  it('refuses tenants, admits the configured controllers and privileged subjects', () => {
    // The webhook reviews as the request's user (server.ts builds the context from request.userInfo).
    const judge = (kind: 'Namespace' | 'ResourceQuota', sub: string, username: string, groups: string[] = []) =>
      verdictFor(ctx(s, { username, groups }), request(kind, sub, username, groups));
    const v = judge('ResourceQuota', 'status', 'alice', ['acme:payments-admins']);
    expect(rules(v)).toEqual(['T8']);
    expect(v.violations[0]!.message).toMatch(
      /^user "alice" may not write resourcequotas\/status of ResourceQuota payments-api\/tenantgate-quota: only Kubernetes' controllers \(system:serviceaccount:kube-system:namespace-controller, /,
    );
    expect(rules(judge('Namespace', 'finalize', 'alice'))).toEqual(['T8']);
    expect(rules(judge('Namespace', 'status', 'alice'))).toEqual(['T8']);
    expect(rules(judge('Namespace', 'finalize', namespaceController.username!))).toEqual([]);
    expect(
      rules(judge('ResourceQuota', 'status', 'system:serviceaccount:kube-system:resourcequota-controller')),
    ).toEqual([]);
    expect(rules(judge('ResourceQuota', 'status', 'system:apiserver', ['system:masters']))).toEqual([]);
  });
});

describe('every project namespace is covered and gets its Pod Security labels', () => {
  /** As the validating webhook sees it after the mutating one: labelled for its project. */
  const create = (
    name: string,
    user = alice,
    labels: Record<string, string> = { 'tenantgate.io/project': 'payments', 'tenantgate.io/tenant': 'acme' },
  ): AdmissionRequest => ({
    uid: name,
    kind: { group: '', version: 'v1', kind: 'Namespace' },
    operation: 'CREATE',
    name,
    userInfo: user,
    object: { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } },
  });

  it('Q2: a tenant may not create a namespace the Project would leave without a quota for a budgeted resource', () => {
    const s = MemorySnapshot.of({
      projects: [payments({ namespaceDefaults: { quota: { hard: { 'requests.cpu': '1' } } } })],
    });
    const v = verdictFor(ctx(s), create('payments-new'));
    expect(rules(v)).toEqual(['Q2']);
    expect(v.violations[0]!.message).toBe(
      'Namespace payments-new would have no quota for pods: project payments budgets it, but spec.namespaceDefaults.quota does not cover it; the platform team must declare spec.namespaceDefaults.quota.hard with pods, requests.cpu in Project payments',
    );
    const none = MemorySnapshot.of({ projects: [payments({ namespaceDefaults: {} })] });
    expect(verdictFor(ctx(none), create('payments-new')).violations[0]?.message).toMatch(
      /would have no quota for pods, requests\.cpu/,
    );
    // A declared namespace is covered by its declared quota; a privileged subject may create one and add the quota itself.
    const declared = MemorySnapshot.of({
      projects: [
        payments({
          namespaceDefaults: {},
          namespaces: [{ name: 'payments-new', quota: { hard: { 'requests.cpu': '2', pods: '5' } } }],
        }),
      ],
    });
    expect(rules(verdictFor(ctx(declared), create('payments-new')))).toEqual([]);
    expect(rules(verdictFor(ctx(none, admin), create('payments-new', admin)))).toEqual([]);
  });

  it('the mutating webhook adds the levels; a tenant asking for another level is refused by T7', () => {
    const s = MemorySnapshot.of({ projects: [payments({ podSecurity: { enforce: 'restricted' } })] });
    const request = create('payments-new', alice, {});
    const response = mutationFor(ctx(s), request);
    const patch = JSON.parse(Buffer.from(response.patch ?? '', 'base64').toString()) as Operation[];
    const mutated = applyPatch(structuredClone(request.object), patch).newDocument as {
      metadata: { labels: Record<string, string> };
    };
    const labels = mutated.metadata.labels;
    expect(labels).toMatchObject({
      'pod-security.kubernetes.io/enforce': 'restricted',
      'pod-security.kubernetes.io/warn': 'restricted',
      'pod-security.kubernetes.io/audit': 'restricted',
    });
    // What the apiserver then hands the validating webhook passes T7.
    expect(rules(verdictFor(ctx(s), create('payments-new', alice, labels)))).toEqual([]);
    const weaker = { ...labels, 'pod-security.kubernetes.io/enforce': 'privileged' };
    const v = verdictFor(ctx(s), create('payments-new', alice, weaker));
    expect(rules(v)).toEqual(['T7']);
    expect(v.violations[0]!.message).toContain('pod-security.kubernetes.io/enforce (null → "privileged")');
  });
});

describe('races the project turn closes', () => {
  const twoCovering = () =>
    MemorySnapshot.of({
      projects: [payments()],
      namespaces: [aNamespace('payments-api', { project: 'payments' })],
      quotas: [
        aQuota('payments-api', { 'requests.cpu': '2', pods: '10' }, { name: 'one' }),
        aQuota('payments-api', { 'requests.cpu': '2', pods: '10' }, { name: 'two' }),
      ],
    });
  const deleteQuota = (name: string, dryRun = false): AdmissionRequest => ({
    uid: name,
    kind: { group: '', version: 'v1', kind: 'ResourceQuota' },
    operation: 'DELETE',
    namespace: 'payments-api',
    name,
    userInfo: alice,
    oldObject: aQuota('payments-api', { 'requests.cpu': '2', pods: '10' }, { name }) as unknown as Record<
      string,
      unknown
    >,
    ...(dryRun ? { dryRun } : {}),
  });

  it('of two concurrent deletes of the two covering quotas one is refused with Q3: one process, and two replicas sharing a ledger', async () => {
    const local = new HeadroomGuard({ ttlMs: 60_000 });
    const s = twoCovering();
    const one = await Promise.all([local.decide(ctx(s), deleteQuota('one')), local.decide(ctx(s), deleteQuota('two'))]);
    expect(one.map(rules)).toEqual([[], ['Q3']]);

    const ledger = new MemoryLedger();
    const replicas = [0, 1].map(() => ({ s: twoCovering(), guard: new HeadroomGuard({ ttlMs: 60_000, ledger }) }));
    const two = await Promise.all([
      replicas[0]!.guard.decide(ctx(replicas[0]!.s), deleteQuota('one')),
      replicas[1]!.guard.decide(ctx(replicas[1]!.s), deleteQuota('two')),
    ]);
    expect(two.map(rules).sort()).toEqual([[], ['Q3']]);
    expect((await ledger.read('payments')).entries.filter((e) => e.write === null)).toHaveLength(1);
  });

  it('a dry-run delete records nothing: the real one after it is still admitted', async () => {
    const guard = new HeadroomGuard({ ttlMs: 60_000 });
    const s = twoCovering();
    expect(rules(await guard.decide(ctx(s), deleteQuota('one', true)))).toEqual([]);
    expect(rules(await guard.decide(ctx(s), deleteQuota('two')))).toEqual([]);
  });

  it('30 parallel namespace creates never exceed maxNamespaces, across two replicas', async () => {
    const project = payments({ maxNamespaces: 3 });
    const ledger = new MemoryLedger();
    const replicas = [0, 1].map(() => ({
      s: MemorySnapshot.of({ projects: [project] }),
      guard: new HeadroomGuard({ ttlMs: 60_000, ledger }),
    }));
    const names = Array.from({ length: 30 }, (_, i) => `payments-n${i}`);
    const verdicts = await Promise.all(
      names.map((name, i) => {
        const r = replicas[i % 2]!;
        return r.guard.decide(ctx(r.s), {
          uid: name,
          kind: { group: '', version: 'v1', kind: 'Namespace' },
          operation: 'CREATE',
          name,
          userInfo: alice,
          object: {
            metadata: { name, labels: { 'tenantgate.io/project': 'payments', 'tenantgate.io/tenant': 'acme' } },
          },
        });
      }),
    );
    expect(verdicts.filter((v) => v.violations.length === 0)).toHaveLength(3);
    expect(
      verdicts.filter((v) => v.violations.some((x) => x.rule === 'Q1' && /whose maxNamespaces is 3/.test(x.message))),
    ).toHaveLength(27);
  });
});
