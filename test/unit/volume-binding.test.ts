/**
 * What the webhook still judges of the allow-lists (docs/adr/0095-allow-lists-in-the-api-server.md), and the
 * holes it closes: X10 on a PersistentVolume's new claimRef (the binder's first write), X10 failing closed
 * while the cache lacks a claim's namespace, no exempt subject, and `sameTenant` trusting only namespaces
 * of projects (the isolation policy's peer, T3 on a tenant label outside projects).
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { describeIsolationPolicy, isolationPolicyFor } from '../../src/render/namespace-policies.js';
import { checkVolumeClaimRef, newClaimRef, type NamespaceProject } from '../../src/validate/rules/volume-binding.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import { verdictFor, type AdmissionRequest } from '../../src/webhook/review.js';
import { aNamespace, aProject, aUser, reviewContext } from '../support/fixtures.js';

const snapshot = new MemorySnapshot();
snapshot.upsertProject(aProject('payments', {}));
snapshot.upsertProject(aProject('shop', {}));
snapshot.upsertNamespace(aNamespace('payments-batch', { project: 'payments' }));
snapshot.upsertNamespace(aNamespace('payments-web', { project: 'payments' }));
snapshot.upsertNamespace(aNamespace('shop-db', { project: 'shop' }));
snapshot.upsertNamespace(aNamespace('scratch'));
const fromCache = (ns: string): NamespaceProject => {
  const found = snapshot.namespace(ns);
  return found ? { known: true, project: found.metadata.labels?.['tenantgate.io/project'] } : { known: false };
};

type Ref = { namespace: string; name: string; uid?: string };
const volume = (labels: Record<string, string>, claimRef?: Ref) => ({
  metadata: { name: 'pv-shop', labels },
  spec: {
    capacity: { storage: '1Gi' },
    ...(claimRef ? { claimRef: { kind: 'PersistentVolumeClaim', ...claimRef } } : {}),
  },
});
const shop = { 'tenantgate.io/project': 'shop' };
const payments = { 'tenantgate.io/project': 'payments' };
const data = { namespace: 'payments-batch', name: 'data', uid: 'u-1' };
const messages = (op: string, object: Record<string, unknown>, old?: Record<string, unknown>) =>
  checkVolumeClaimRef(op, object, old, fromCache).map((v) => `[${v.rule}] ${v.message}`);

describe('X10 on a PersistentVolume write that sets a new claimRef', () => {
  it("refuses a volume labelled for another project, naming volume, project, claim and what's allowed", () => {
    expect(messages('UPDATE', volume(shop, data), volume(shop))).toEqual([
      '[X10] PersistentVolume pv-shop: claimRef payments-batch/data (a claim of project payments) is not allowed for' +
        ' project shop (label tenantgate.io/project=shop); allowed: claims in the namespaces of project shop',
    ]);
    expect(messages('CREATE', volume(shop, data))).toHaveLength(1);
  });

  it('refuses a labelled volume for a claim in a namespace of no project', () => {
    expect(messages('UPDATE', volume(shop, { namespace: 'scratch', name: 'c' }), volume(shop))).toEqual([
      '[X10] PersistentVolume pv-shop: claimRef scratch/c (a namespace of no project) is not allowed for project shop' +
        ' (label tenantgate.io/project=shop); allowed: claims in the namespaces of project shop',
    ]);
  });

  it("refuses an unlabelled volume whose previous claimRef named another project's namespace", () => {
    const released = volume({}, { namespace: 'shop-db', name: 'orders', uid: 'u-0' });
    expect(messages('UPDATE', volume({}, data), released)).toEqual([
      '[X10] PersistentVolume pv-shop: claimRef payments-batch/data (a claim of project payments) is not allowed for' +
        ' project shop (its previous claimRef shop-db/orders); allowed: claims in the namespaces of project shop',
    ]);
    // Of the same project (another namespace of it), or the previous claim's namespace in no project: admitted.
    expect(messages('UPDATE', volume({}, data), volume({}, { namespace: 'payments-web', name: 'old' }))).toEqual([]);
    expect(messages('UPDATE', volume({}, data), volume({}, { namespace: 'scratch', name: 'old' }))).toEqual([]);
  });

  it("admits its own project's volume, and an unlabelled one without a previous claimRef (owned by claimRef)", () => {
    expect(messages('UPDATE', volume(payments, data), volume(payments))).toEqual([]);
    expect(messages('CREATE', volume(payments, data))).toEqual([]);
    expect(messages('UPDATE', volume({}, data), volume({}))).toEqual([]);
    expect(messages('CREATE', volume({}, { namespace: 'scratch', name: 'c' }))).toEqual([]);
  });

  it('judges only a claimRef that is new: same namespace, name and uid is not; a uid filled in is', () => {
    expect(newClaimRef('UPDATE', volume(shop, data), volume(shop, data))).toBeUndefined();
    expect(messages('UPDATE', { ...volume(shop, data), status: { phase: 'Bound' } }, volume(shop, data))).toEqual([]);
    // An administrator pre-bound it without a uid; the binder filling the uid in is judged like any binding.
    const preBound = volume(shop, { namespace: 'payments-batch', name: 'data' });
    expect(newClaimRef('UPDATE', volume(shop, data), preBound)).toEqual(data);
    expect(messages('UPDATE', volume(shop, data), preBound)).toHaveLength(1);
    expect(messages('UPDATE', volume(shop), volume(shop, data))).toEqual([]);
    expect(messages('DELETE', volume(shop, data))).toEqual([]);
  });

  it("fails closed while the cache has not seen the claim's namespace (the binder retries)", () => {
    expect(messages('UPDATE', volume(shop, { namespace: 'brand-new', name: 'c' }), volume(shop))).toEqual([
      '[X10] PersistentVolume pv-shop: claimRef brand-new/c (namespace brand-new is not known to the webhook yet,' +
        ' so neither is its project; a retry passes once it is) is not allowed for project shop' +
        ' (label tenantgate.io/project=shop); allowed: claims in the namespaces of project shop',
    ]);
    const gone = volume({}, { namespace: 'deleted-ns', name: 'old' });
    expect(messages('UPDATE', volume({}, data), gone)[0]).toMatch(
      /^\[X10\] PersistentVolume pv-shop: claimRef payments-batch\/data \(whose volume it is is unknown/,
    );
  });
});

describe('the webhook dispatches a PersistentVolume review to X10, and judges every subject', () => {
  type Json = Record<string, unknown>;
  const review = (user: string, groups: string[], object: Json, oldObject?: Json): AdmissionRequest => ({
    uid: 'u',
    kind: { group: '', version: 'v1', kind: 'PersistentVolume' },
    name: 'pv-shop',
    operation: oldObject ? 'UPDATE' : 'CREATE',
    userInfo: { username: user, groups },
    object,
    ...(oldObject ? { oldObject } : {}),
  });
  const rules = (r: AdmissionRequest) => {
    const ctx = reviewContext(aUser(r.userInfo.username ?? '', r.userInfo.groups), snapshot);
    return verdictFor(ctx, r).violations.map((v) => v.rule);
  };
  const binder = 'system:serviceaccount:kube-system:persistent-volume-binder';

  it("refuses the binder's claimRef write and a privileged subject's alike; admits its own project's", () => {
    expect(rules(review(binder, [], volume(shop, data), volume(shop)))).toEqual(['X10']);
    expect(rules(review('root', ['system:masters'], volume(shop, data), volume(shop)))).toEqual(['X10']);
    expect(rules(review(binder, [], volume(payments, data), volume(payments)))).toEqual([]);
  });
});

describe('X10 on a claim naming a volume: no exempt subject, and an unseen namespace fails closed', () => {
  const claim = (namespace: string, user = aUser('alice')): [ReturnType<typeof reviewContext>, AdmissionRequest] => [
    reviewContext(user, snapshot),
    {
      uid: 'u',
      kind: { group: '', version: 'v1', kind: 'PersistentVolumeClaim' },
      namespace,
      name: 'data',
      operation: 'CREATE',
      userInfo: { username: user.username ?? '', groups: user.groups ?? [] },
      object: { metadata: { name: 'data' }, spec: { volumeName: 'pv-shop', accessModes: ['ReadWriteOnce'] } },
    },
  ];
  const read = new Map([['pv-shop', volume(shop)]]);
  const withVolume = ([ctx, r]: ReturnType<typeof claim>) => verdictFor({ ...ctx, persistentVolumes: read }, r);

  it('refuses a claim in a namespace the cache has not seen, saying so, instead of admitting it', () => {
    expect(withVolume(claim('payments-new')).violations.map((v) => `[${v.rule}] ${v.message}`)).toEqual([
      '[X10] PersistentVolumeClaim payments-new/data: volumeName "pv-shop" (namespace payments-new is not known to' +
        ' the webhook yet, so neither is whose claim this is) is not allowed yet; allowed: the same write in a few' +
        ' seconds, once it is',
    ]);
    // A claim naming no volume is not the webhook's to judge.
    const [ctx, request] = claim('payments-new');
    expect(verdictFor(ctx, { ...request, object: { metadata: { name: 'data' }, spec: {} } }).violations).toEqual([]);
  });

  it('refuses one whose namespace names a project the cache has not seen yet', () => {
    const lagging = new MemorySnapshot();
    lagging.upsertNamespace(aNamespace('ml-train', { project: 'ml' }));
    const [ctx, request] = claim('ml-train');
    const verdict = verdictFor({ ...ctx, snapshot: lagging, persistentVolumes: read }, request);
    const unknown = expect.stringContaining('(project ml is not known to the webhook yet');
    expect(verdict.violations.map((v) => v.message)).toEqual([unknown]);
  });

  it("judges a privileged subject's claim like a tenant's", () => {
    const root = aUser('root', ['system:masters']);
    expect(withVolume(claim('payments-batch', root)).violations.map((v) => v.rule)).toEqual(['X10']);
    expect(withVolume(claim('shop-db', root)).violations).toEqual([]);
  });
});

describe('sameTenant trusts namespaces of projects only', () => {
  const project = aProject('payments', { networkIsolation: true, network: { allowFrom: { sameTenant: true } } });

  it('the peer requires the tenant label and a project label (a namespace outside projects never matches)', () => {
    const policy = isolationPolicyFor(project, 'payments-batch')!;
    expect(policy.spec.ingress[0].from[1]).toEqual({
      namespaceSelector: {
        matchLabels: { 'tenantgate.io/tenant': 'acme' },
        matchExpressions: [{ key: 'tenantgate.io/project', operator: 'Exists' }],
      },
    });
    const from =
      'ingress only from namespaces tenantgate.io/project=payments' +
      ' | tenantgate.io/tenant=acme,tenantgate.io/project;';
    expect(describeIsolationPolicy(policy)).toContain(from);
  });

  const create = (user: ReturnType<typeof aUser>, labels: Record<string, string>): AdmissionRequest => ({
    uid: 'u',
    kind: { group: '', version: 'v1', kind: 'Namespace' },
    operation: 'CREATE',
    name: 'lab',
    userInfo: user,
    object: { metadata: { name: 'lab', labels } },
  });
  const relaxed = { ...DEFAULT_CONFIG, requireProjectForUsers: false };
  const judged = (user: ReturnType<typeof aUser>, labels: Record<string, string>) => {
    const verdict = verdictFor(reviewContext(user, snapshot, relaxed), create(user, labels));
    return verdict.violations.map((v) => `[${v.rule}] ${v.message}`);
  };

  it('T3: requireProjectForUsers false lets a tenant create a namespace outside projects, not with a tenant', () => {
    expect(judged(aUser('dave', ['tenants']), { team: 'x' })).toEqual([]);
    expect(judged(aUser('dave', ['tenants']), { 'tenantgate.io/tenant': 'acme' })).toEqual([
      '[T3] Namespace lab belongs to no project: the label tenantgate.io/tenant=acme is not allowed for user "dave";' +
        ' only privileged subjects label a namespace outside projects with a tenant',
    ]);
    expect(judged(aUser('root', ['system:masters']), { 'tenantgate.io/tenant': 'acme' })).toEqual([]);
  });
});
