/**
 * Generated AdmissionReview bodies, valid and broken, over real HTTPS to the app wired as in
 * production (the HeadroomGuard's decide and pending, with an in-memory ledger). A broken envelope gets
 * 400, a well-formed one 200, nothing crashes — and every well-formed case is judged by an oracle of
 * this file's own: a small model of docs/rules.md over the snapshot below gives the expected verdict,
 * the set of rule ids of a denial and the [Q4] warnings of an admission; a model of the mutation gives
 * the object /mutate must turn the request's object into (its JSON patch applied with fast-json-patch).
 * The apiserver's order is replayed too: an object /mutate changed is validated again, as mutated, and
 * a second /mutate of it changes nothing. CPU is generated as integer millicores and written "1500m";
 * the oracle compares integers and never parses a quantity. The model is written from docs/rules.md
 * and calls none of the product's rule functions. The seed is printed and can be pinned with
 * FUZZ_SEED; FUZZ_RUNS scales the run (`npm run fuzz`: 100,000 cases).
 *
 * Each request is decided by a fresh HeadroomGuard and ledger: an admitted case must not make a later
 * one stricter through Q5's pending allocations (the guard's own tests cover that state), so every
 * case's verdict depends on the snapshot and the request alone.
 */
import fc from 'fast-check';
import fastJsonPatch from 'fast-json-patch';
import { mkdtemp, readFile } from 'node:fs/promises';
import { Agent as HttpsAgent, request, type Agent, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateWebhookCerts } from '../../src/certs/files.js';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { GRANTING_NAMESPACE_METADATA } from '../../src/validate/granting-metadata.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import type { NamespaceObject, Project, ResourceQuotaObject } from '../../src/validate/types.js';
import { HeadroomGuard } from '../../src/webhook/headroom/guard.js';
import { WebhookMetrics } from '../../src/webhook/metrics.js';
import { createApp, MAX_BODY_BYTES } from '../../src/webhook/server.js';
import { serveHttps } from '../../src/webhook/tls.js';
import { MemoryLedger } from '../support/memory-ledger.js';

const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const RUNS = Number(process.env.FUZZ_RUNS ?? 10_000);

// ---------------------------------------------------------------------------------------------
// The model: resources as integers, objects as plain data (turned into Kubernetes JSON below)
// ---------------------------------------------------------------------------------------------

const CPU = 'requests.cpu';
const PODS = 'pods';
type Resource = typeof CPU | typeof PODS;
const RESOURCES: readonly Resource[] = [CPU, PODS];
/** A resource list: requests.cpu in millicores, pods as a count. */
type Res = Partial<Record<Resource, number>>;

const L_PROJECT = 'tenantgate.io/project';
const L_TENANT = 'tenantgate.io/tenant';
/** A protected label tenantgate never sets itself. */
const L_TIER = 'tenantgate.io/tier';
const A_UID = 'tenantgate.io/project-uid';
const A_NODE_SELECTOR = 'scheduler.alpha.kubernetes.io/node-selector';
const CASCADE = 'tenantgate.io/cascade-delete';
const PS_MODES = ['enforce', 'warn', 'audit'] as const;
type PsMode = (typeof PS_MODES)[number];
const ps = (mode: PsMode) => `pod-security.kubernetes.io/${mode}`;

type Labels = Record<string, string>;
interface Subject {
  kind: string;
  name: string;
}
interface ProjectModel {
  name: string;
  uid?: string | undefined;
  labels?: Labels | undefined;
  finalizers?: string[] | undefined;
  deleting?: boolean | undefined;
  tenant: string;
  owners: Subject[];
  budget?: Res | undefined;
  defaults?: Res | undefined;
  maxNamespaces?: number | undefined;
  podSecurity?: Partial<Record<PsMode, string>> | undefined;
}
interface NamespaceModel {
  name?: string | undefined;
  labels?: Labels | undefined;
  annotations?: Labels | undefined;
  finalizers?: string[] | undefined;
  ownerReferences?: Array<Record<string, unknown>> | undefined;
}
interface QuotaModel {
  name: string;
  labels?: Labels | undefined;
  finalizers?: string[] | undefined;
  hard: Res;
  scoped?: boolean | undefined;
  status?: { hard?: Res; used?: Res } | undefined;
}
interface CachedNamespace {
  meta: NamespaceModel & { name: string };
  terminating?: boolean;
  quotas: QuotaModel[];
}

// ---------------------------------------------------------------------------------------------
// The world the webhook's snapshot holds
// ---------------------------------------------------------------------------------------------

const ACME_ADMINS: Subject = { kind: 'Group', name: 'acme:payments-admins' };
const PROJECTS: readonly ProjectModel[] = [
  // 6 CPU; its namespaces hold 2.5 + 1.2 + 0.5 = 4.2 (see CACHED), a new one counts with 1.
  {
    name: 'payments',
    uid: 'uid-payments',
    tenant: 'acme',
    owners: [ACME_ADMINS],
    budget: { [CPU]: 6000 },
    defaults: { [CPU]: 1000 },
  },
  // Budgets pods, but its defaults do not cover them; full at one namespace.
  {
    name: 'lab',
    uid: 'uid-lab',
    tenant: 'acme',
    owners: [ACME_ADMINS],
    budget: { [CPU]: 2000, [PODS]: 10 },
    defaults: { [CPU]: 1000 },
    maxNamespaces: 1,
  },
  // No budget; its own Pod Security level; owned by a user.
  {
    name: 'shop',
    uid: 'uid-shop',
    tenant: 'globex',
    owners: [{ kind: 'User', name: 'dave' }],
    podSecurity: { enforce: 'restricted' },
  },
];
const member = (project: string, tenant: string): Labels => ({ [L_PROJECT]: project, [L_TENANT]: tenant });
const CACHED: readonly CachedNamespace[] = [
  // Holds 2.5 (in use above its tightest quota); deleting q lets it grow to wide's 5.
  {
    meta: { name: 'payments-api', labels: member('payments', 'acme') },
    quotas: [
      { name: 'q', hard: { [CPU]: 2000 }, status: { used: { [CPU]: 2500 } } },
      { name: 'wide', hard: { [CPU]: 5000 } },
    ],
  },
  // Holds 1.2 (the apiserver still enforces main's old limit); deleting main lets it grow to mid's 2.8; be is scoped.
  {
    meta: { name: 'payments-web', labels: member('payments', 'acme') },
    quotas: [
      { name: 'main', hard: { [CPU]: 1000 }, status: { hard: { [CPU]: 1200 } } },
      { name: 'mid', hard: { [CPU]: 2800 } },
      { name: 'be', hard: { [CPU]: 500 }, scoped: true },
    ],
  },
  {
    meta: { name: 'payments-gone', labels: member('payments', 'acme') },
    terminating: true,
    quotas: [{ name: 'q', hard: { [CPU]: 500 } }],
  },
  // Carries the prefix but no label: made by an administrator, in no project.
  { meta: { name: 'payments-stray' }, quotas: [{ name: 'q', hard: { [CPU]: 1000 } }] },
  {
    meta: { name: 'lab-one', labels: member('lab', 'acme') },
    quotas: [{ name: 'tenantgate-quota', hard: { [CPU]: 1000, [PODS]: 10 } }],
  },
  { meta: { name: 'shop-front', labels: member('shop', 'globex') }, quotas: [{ name: 'q', hard: { [CPU]: 2000 } }] },
  { meta: { name: 'legacy' }, quotas: [{ name: 'q', hard: { [CPU]: 1000 } }] },
  { meta: { name: 'default' }, quotas: [] },
];

interface Identity {
  who: string;
  username?: string;
  groups: string[];
}
const IDENTITIES: readonly Identity[] = [
  { who: 'cluster admin', username: 'admin', groups: ['system:masters', 'system:authenticated'] },
  {
    who: "tenantgate's controller",
    username: 'system:serviceaccount:tenantgate-system:tenantgate-controller',
    groups: ['system:serviceaccounts', 'system:authenticated'],
  },
  { who: 'owner of payments and lab', username: 'alice', groups: ['acme:payments-admins', 'system:authenticated'] },
  { who: 'owner of shop', username: 'dave', groups: ['system:authenticated'] },
  { who: 'tenant owning nothing', username: 'bob', groups: ['tenants', 'system:authenticated'] },
  { who: 'anonymous', groups: [] },
  {
    who: 'namespace controller',
    username: 'system:serviceaccount:kube-system:namespace-controller',
    groups: ['system:serviceaccounts', 'system:authenticated'],
  },
  { who: 'kube-controller-manager', username: 'system:kube-controller-manager', groups: ['system:authenticated'] },
];

// The configuration the app runs with, as the oracle reads it (checked against DEFAULT_CONFIG below).
const PRIVILEGED_GROUPS = ['system:masters'];
const PRIVILEGED_USERS = ['system:serviceaccount:tenantgate-system:tenantgate-controller'];
const SYSTEM_CONTROLLERS = [
  'system:serviceaccount:kube-system:namespace-controller',
  'system:serviceaccount:kube-system:generic-garbage-collector',
  'system:serviceaccount:kube-system:resourcequota-controller',
  'system:kube-controller-manager',
];
const RESERVED_NAMES = ['default'];
const RESERVED_PREFIXES = ['kube-', 'openshift-', 'tenantgate-'];
/** tenantgate.yaml's protectedNamespaceMetadata by default: tenantgate's own keys. */
const CONFIGURED_PREFIXES = ['tenantgate.io/'];
/** The keys that grant power, protected whatever tenantgate.yaml lists (docs/rules.md T7). */
const GRANTING_LABEL_PREFIXES = ['pod-security.kubernetes.io/'];
const GRANTING_LABELS = [
  'resource.kubernetes.io/admin-access',
  'openshift.io/run-level',
  'openshift.io/cluster-monitoring',
  'control-plane',
  'kubernetes.azure.com/managedby',
];
const GRANTING_ANNOTATIONS = [
  A_NODE_SELECTOR,
  'scheduler.alpha.kubernetes.io/defaultTolerations',
  'scheduler.alpha.kubernetes.io/tolerationsWhitelist',
  'openshift.io/node-selector',
  'openshift.io/sa.scc.uid-range',
  'openshift.io/sa.scc.supplemental-groups',
  'openshift.io/sa.scc.mcs',
];
/** tenantgate.yaml's podSecurity by default (docs/rules.md T7): a project without its own levels gets these. */
const POD_SECURITY: Record<PsMode, string> = { enforce: 'baseline', warn: 'restricted', audit: 'restricted' };

// ---------------------------------------------------------------------------------------------
// Kubernetes JSON of the model
// ---------------------------------------------------------------------------------------------

function hardList(res: Res): Record<string, string> {
  const out: Record<string, string> = {};
  for (const r of RESOURCES) {
    const v = res[r];
    if (v !== undefined) out[r] = r === CPU ? `${v}m` : String(v);
  }
  return out;
}

/** Only the fields that are set, so the JSON has no undefined holes. */
function defined<T extends Record<string, unknown>>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

function namespaceJson(m: NamespaceModel, terminating = false): Record<string, unknown> {
  return defined({
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: defined({
      name: m.name,
      labels: m.labels,
      annotations: m.annotations,
      finalizers: m.finalizers,
      ownerReferences: m.ownerReferences,
      deletionTimestamp: terminating ? '2026-01-01T00:00:00Z' : undefined,
    }),
    status: terminating ? { phase: 'Terminating' } : undefined,
  });
}

function quotaJson(q: QuotaModel, namespace: string | undefined): Record<string, unknown> {
  return defined({
    apiVersion: 'v1',
    kind: 'ResourceQuota',
    metadata: defined({ name: q.name, namespace, labels: q.labels, finalizers: q.finalizers }),
    spec: defined({ hard: hardList(q.hard), scopes: q.scoped ? ['BestEffort'] : undefined }),
    status: q.status
      ? defined({ hard: q.status.hard && hardList(q.status.hard), used: q.status.used && hardList(q.status.used) })
      : undefined,
  });
}

function projectJson(p: ProjectModel): Record<string, unknown> {
  return {
    apiVersion: 'tenantgate.io/v1alpha1',
    kind: 'Project',
    metadata: defined({
      name: p.name,
      uid: p.uid,
      labels: p.labels,
      finalizers: p.finalizers,
      deletionTimestamp: p.deleting ? '2026-01-01T00:00:00Z' : undefined,
    }),
    spec: defined({
      tenant: p.tenant,
      owners: p.owners,
      quota: p.budget && { hard: hardList(p.budget) },
      namespaceDefaults: p.defaults && { quota: { hard: hardList(p.defaults) } },
      maxNamespaces: p.maxNamespaces,
      podSecurity: p.podSecurity,
    }),
  };
}

const snapshot = MemorySnapshot.of({
  projects: PROJECTS.map((p) => projectJson(p) as unknown as Project),
  namespaces: CACHED.map((n) => namespaceJson(n.meta, n.terminating) as unknown as NamespaceObject),
  quotas: CACHED.flatMap((n) => n.quotas.map((q) => quotaJson(q, n.meta.name) as unknown as ResourceQuotaObject)),
});

// ---------------------------------------------------------------------------------------------
// The cases
// ---------------------------------------------------------------------------------------------

type Operation = 'CREATE' | 'UPDATE' | 'DELETE';
type Target =
  | { kind: 'Namespace'; object?: NamespaceModel | null; oldObject?: NamespaceModel }
  | { kind: 'ResourceQuota'; namespace: string; object?: QuotaModel | null; oldObject?: QuotaModel }
  | { kind: 'Project'; object?: ProjectModel | null; oldObject?: ProjectModel }
  | {
      kind: 'Deployment';
      namespace: string;
      object?: Record<string, unknown> | null;
      oldObject?: Record<string, unknown>;
    };
type Case = Target & {
  uid: string;
  user: Identity;
  operation: Operation;
  subResource?: 'status' | 'finalize';
  dryRun: boolean;
};

const GVK = {
  Namespace: { group: '', version: 'v1', kind: 'Namespace' },
  ResourceQuota: { group: '', version: 'v1', kind: 'ResourceQuota' },
  Project: { group: 'tenantgate.io', version: 'v1alpha1', kind: 'Project' },
  Deployment: { group: 'apps', version: 'v1', kind: 'Deployment' },
} as const;

function objectJson(c: Case, which: 'object' | 'oldObject'): Record<string, unknown> | null | undefined {
  switch (c.kind) {
    case 'Namespace': {
      const m = c[which];
      return m && namespaceJson(m);
    }
    case 'ResourceQuota': {
      const m = c[which];
      return m && quotaJson(m, c.namespace);
    }
    case 'Project': {
      const m = c[which];
      return m && projectJson(m);
    }
    case 'Deployment':
      return c[which];
  }
}

function reviewOf(c: Case): Record<string, unknown> {
  const object = objectJson(c, 'object');
  const oldObject = objectJson(c, 'oldObject');
  const name = c.kind === 'Deployment' ? undefined : (c.object ?? c.oldObject)?.name;
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: defined({
      uid: c.uid,
      kind: GVK[c.kind],
      subResource: c.subResource,
      name,
      namespace: c.kind === 'ResourceQuota' || c.kind === 'Deployment' ? c.namespace : undefined,
      operation: c.operation,
      userInfo: defined({ username: c.user.username, groups: c.user.groups }),
      object,
      oldObject,
      dryRun: c.dryRun,
    }),
  };
}

const rare = <T>(arb: fc.Arbitrary<T>, absent = 3): fc.Arbitrary<T | undefined> =>
  fc.oneof({ arbitrary: fc.constant(undefined), weight: absent }, { arbitrary: arb, weight: 1 });
/**
 * Integer millicores: mostly an edge of the world above and the millicore past it — where a quota
 * makes its namespace grow, where it stops fitting the budget (Q1), where it leaves less than 10 % (Q4):
 * payments-new (others hold 4.2 of 6: Q4 past 1.2, Q1 past 1.8), payments-api (others 1.7, holds 2.5:
 * Q4 past 3.7, Q1 past 4.3), payments-web (others 3, holds 1.2: Q4 past 2.4), payments-gone (others
 * 3.7, holds 0.5: Q4 past 1.7, Q1 past 2.3), lab-one (2 CPU: Q4 past 1.8) and lab-two (others 1: Q4
 * past 0.8, Q1 past 1) — and else anything.
 */
const EDGES = [0, 500, 800, 1000, 1200, 1700, 1800, 2000, 2300, 2400, 2500, 2800, 3700, 4300, 5000, 6000];
const millicores = fc.oneof(
  { arbitrary: fc.constantFrom(...EDGES).chain((m) => fc.constantFrom(m, m + 1)), weight: 3 },
  { arbitrary: fc.integer({ min: 0, max: 8000 }), weight: 1 },
);
/** Which fields of an UPDATE's object differ from its oldObject: each one with probability 1/4. */
const changeMask = fc.array(fc.nat(3), { minLength: 12, maxLength: 12 });

function merged<T extends object>(old: T, next: T, keys: ReadonlyArray<keyof T>, mask: number[]): T {
  const out: Partial<T> = {};
  keys.forEach((k, i) => {
    const v = mask[i] === 0 ? next[k] : old[k];
    if (v !== undefined) out[k] = v;
  });
  return out as T;
}

/** A map of the slots that are set, in slot order. */
function slots(keys: readonly string[], values: ReadonlyArray<string | undefined>): Labels | undefined {
  const out: Labels = {};
  keys.forEach((k, i) => {
    if (values[i] !== undefined) out[k] = values[i];
  });
  return Object.keys(out).length > 0 ? out : undefined;
}

const NS_LABEL_KEYS = [L_PROJECT, L_TENANT, ps('enforce'), ps('warn'), L_TIER, 'team'];
const NS_ANNOTATION_KEYS = [A_UID, A_NODE_SELECTOR, 'note'];
const OWNER_REFERENCE = {
  apiVersion: 'tenantgate.io/v1alpha1',
  kind: 'Project',
  name: 'shop',
  uid: 'uid-shop',
  blockOwnerDeletion: true,
};
const namespaceFields = fc.record({
  labels: fc.tuple(
    rare(fc.constantFrom('payments', 'lab', 'shop', 'ghost'), 1),
    rare(fc.constantFrom('acme', 'globex'), 1),
    rare(fc.constantFrom('baseline', 'restricted', 'privileged')),
    rare(fc.constantFrom('restricted', 'baseline')),
    rare(fc.constant('gold'), 6),
    rare(fc.constant('web'), 2),
  ),
  annotations: fc.tuple(
    rare(fc.constantFrom('uid-payments', 'uid-shop', 'uid-bogus')),
    rare(fc.constant('zone=a'), 6),
    rare(fc.constant('hi'), 2),
  ),
  finalizers: rare(fc.constantFrom<string[]>([], ['example.com/hold']), 4),
  ownerReferences: rare(fc.constant<Array<Record<string, unknown>>>([OWNER_REFERENCE]), 6),
});
type NamespaceFields = typeof namespaceFields extends fc.Arbitrary<infer F> ? F : never;
const namespaceModel = (name: string, v: NamespaceFields): NamespaceModel =>
  defined({
    name: name || undefined,
    labels: slots(NS_LABEL_KEYS, v.labels),
    annotations: slots(NS_ANNOTATION_KEYS, v.annotations),
    finalizers: v.finalizers,
    ownerReferences: v.ownerReferences,
  });
/** UPDATE: an old object and a new one that differs in a few labels, annotations or lists. */
function mergedNamespace(old: NamespaceModel, next: NamespaceModel, mask: number[]): NamespaceModel {
  const pick = (keys: readonly string[], a: Labels | undefined, b: Labels | undefined, offset: number) =>
    slots(
      keys,
      keys.map((k, i) => (mask[offset + i] === 0 ? b?.[k] : a?.[k])),
    );
  return defined({
    name: old.name,
    labels: pick(NS_LABEL_KEYS, old.labels, next.labels, 0),
    annotations: pick(NS_ANNOTATION_KEYS, old.annotations, next.annotations, NS_LABEL_KEYS.length),
    finalizers: mask[9] === 0 ? next.finalizers : old.finalizers,
    ownerReferences: mask[10] === 0 ? next.ownerReferences : old.ownerReferences,
  });
}

const NS_NAMES = [
  'payments-api',
  'payments-web',
  'payments-gone',
  'payments-stray',
  'payments-new',
  'payments-',
  'payments-Bad',
  'lab-one',
  'lab-two',
  'shop-front',
  'shop-new',
  'legacy',
  'foo',
  'kube-tools',
  'default',
  '',
];
const namespaceTarget = fc
  .record({
    name: fc.constantFrom(...NS_NAMES),
    sub: rare(fc.constantFrom('status' as const, 'finalize' as const), 12),
    operation: fc.constantFrom<Operation>('CREATE', 'UPDATE', 'DELETE'),
    cachedOld: fc.boolean(),
    a: namespaceFields,
    b: namespaceFields,
    mask: changeMask,
    drop: fc.nat(9),
  })
  .map(({ name, sub, operation, cachedOld, a, b, mask, drop }) => {
    const first = namespaceModel(name, a);
    const cached = CACHED.find((n) => n.meta.name === name)?.meta;
    const old = cachedOld && cached ? cached : first;
    const next = mergedNamespace(old, namespaceModel(name, b), mask);
    if (sub)
      return {
        kind: 'Namespace' as const,
        subResource: sub,
        operation: 'UPDATE' as const,
        object: next,
        oldObject: old,
      };
    if (operation === 'CREATE') return { kind: 'Namespace' as const, operation, object: first };
    if (operation === 'UPDATE')
      return { kind: 'Namespace' as const, operation, object: next, ...(drop === 0 ? {} : { oldObject: old }) };
    return {
      kind: 'Namespace' as const,
      operation,
      ...(drop % 2 ? { object: null } : {}),
      ...(drop === 0 ? {} : { oldObject: old }),
    };
  });

const QUOTA_FIELDS = ['name', 'labels', 'finalizers', 'hard', 'scoped', 'status'] as const;
const quotaModel = (name: string) =>
  fc
    .record({
      cpu: fc.oneof({ arbitrary: millicores, weight: 6 }, { arbitrary: fc.constant(undefined), weight: 1 }),
      pods: rare(fc.constantFrom<number>(5, 10, 20), 1),
      scoped: fc.oneof(
        { arbitrary: fc.constant(undefined), weight: 5 },
        { arbitrary: fc.constant<boolean>(true), weight: 1 },
      ),
      status: rare(
        fc.oneof(
          millicores.map((m) => ({ used: { [CPU]: m } })),
          millicores.map((m) => ({ hard: { [CPU]: m } })),
        ),
        4,
      ),
      label: rare(fc.constantFrom('payments', 'shop'), 3),
      finalizers: rare(fc.constant<string[]>(['example.com/hold']), 4),
    })
    .map((v): QuotaModel =>
      defined({
        name,
        labels: v.label ? { [L_PROJECT]: v.label } : undefined,
        finalizers: v.finalizers,
        hard: defined({ [CPU]: v.cpu, [PODS]: v.pods }),
        scoped: v.scoped,
        status: v.status,
      }),
    );
const QUOTA_NAMESPACES = [
  'payments-api',
  'payments-web',
  'payments-gone',
  'payments-stray',
  'payments-new',
  'lab-one',
  'lab-two',
  'shop-front',
  'legacy',
  'foo',
  '',
];
const QUOTA_NAMES = ['q', 'wide', 'main', 'mid', 'be', 'tenantgate-quota', 'extra'];
const quotaTarget = fc
  .record({
    namespace: fc.constantFrom(...QUOTA_NAMESPACES),
    sub: rare(fc.constantFrom('status' as const, 'finalize' as const), 12),
  })
  .chain(({ namespace, sub }) => {
    // Mostly one of the namespace's own quotas (replacing, deleting), else any name (adding).
    const own = CACHED.find((n) => n.meta.name === namespace)?.quotas.map((q) => q.name) ?? [];
    const name = own.length
      ? fc.oneof(fc.constantFrom(...own), fc.constantFrom(...QUOTA_NAMES))
      : fc.constantFrom(...QUOTA_NAMES);
    return name.map((n) => ({ namespace, name: n, sub }));
  })
  .chain(({ namespace, name, sub }) =>
    fc
      .record({
        operation: fc.constantFrom<Operation>('CREATE', 'UPDATE', 'DELETE'),
        first: quotaModel(name),
        second: quotaModel(name),
        mask: changeMask,
        cachedOld: fc.boolean(),
        drop: fc.nat(9),
      })
      .map(({ operation, first, second, mask, cachedOld, drop }) => {
        const cached = CACHED.find((n) => n.meta.name === namespace)?.quotas.find((q) => q.name === name);
        const old = cachedOld && cached ? cached : first;
        const next = merged(old, second, QUOTA_FIELDS, mask);
        const base = { kind: 'ResourceQuota' as const, namespace };
        if (sub) return { ...base, subResource: sub, operation: 'UPDATE' as const, object: next, oldObject: old };
        if (operation === 'CREATE') return { ...base, operation, object: first };
        if (operation === 'UPDATE')
          return { ...base, operation, object: next, ...(drop === 0 ? {} : { oldObject: old }) };
        return { ...base, operation, ...(drop % 2 ? { object: null } : {}), ...(drop === 0 ? {} : { oldObject: old }) };
      }),
  );

const PROJECT_FIELDS = [
  'name',
  'uid',
  'labels',
  'finalizers',
  'deleting',
  'tenant',
  'owners',
  'budget',
  'defaults',
  'maxNamespaces',
  'podSecurity',
] as const;
const PROJECT_NAMES = ['payments', 'lab', 'shop', 'web', 'payments-eu', 'shop-eu', 'pay', 'Bad_Name', 'x'.repeat(41)];
const projectModel = (name: string) =>
  fc
    .record({
      labels: rare(fc.constant<Labels>({ team: 'x' })),
      finalizers: rare(fc.constantFrom<string[]>([CASCADE], ['example.com/x'], [CASCADE, 'example.com/x']), 1),
      deleting: rare(fc.constant(true), 8),
      tenant: fc.oneof(
        { arbitrary: fc.constant('acme'), weight: 4 },
        { arbitrary: fc.constant('globex'), weight: 2 },
        { arbitrary: fc.constant('Acme'), weight: 1 },
      ),
      owners: fc.oneof(
        { arbitrary: fc.constant<Subject[]>([ACME_ADMINS]), weight: 6 },
        { arbitrary: fc.constant<Subject[]>([{ kind: 'User', name: 'dave' }]), weight: 2 },
        { arbitrary: fc.constant<Subject[]>([{ kind: 'Robot', name: 'r2d2' }]), weight: 1 },
      ),
      budget: rare(
        millicores.map((m) => ({ [CPU]: m })),
        1,
      ),
      defaults: rare(
        millicores.map((m) => ({ [CPU]: m })),
        1,
      ),
    })
    .map((v): ProjectModel => defined({ name, ...v }));
const projectTarget = fc.constantFrom(...PROJECT_NAMES).chain((name) =>
  fc
    .record({
      operation: fc.constantFrom<Operation>('CREATE', 'UPDATE', 'DELETE'),
      first: projectModel(name),
      second: projectModel(name),
      mask: changeMask,
      cachedOld: fc.boolean(),
      drop: fc.nat(9),
    })
    .map(({ operation, first, second, mask, cachedOld, drop }) => {
      const cached = PROJECTS.find((p) => p.name === name);
      const old = cachedOld && cached ? cached : first;
      const next = merged(old, second, PROJECT_FIELDS, mask);
      if (operation === 'CREATE') return { kind: 'Project' as const, operation, object: first };
      if (operation === 'UPDATE')
        return { kind: 'Project' as const, operation, object: next, ...(drop === 0 ? {} : { oldObject: old }) };
      return {
        kind: 'Project' as const,
        operation,
        ...(drop % 2 ? { object: null } : {}),
        ...(drop === 0 ? {} : { oldObject: old }),
      };
    }),
);

/** Kinds tenantgate does not judge: any object at all. */
const otherTarget = fc.record({
  kind: fc.constant('Deployment' as const),
  namespace: fc.constantFrom('payments-api', 'legacy'),
  operation: fc.constantFrom<Operation>('CREATE', 'UPDATE'),
  subResource: rare(fc.constant('status' as const)),
  object: fc
    .anything({ maxDepth: 3 })
    .filter((a): a is Record<string, unknown> => typeof a === 'object' && a !== null && !Array.isArray(a)),
});

const validCase: fc.Arbitrary<Case> = fc
  .record({
    uid: fc.uuid(),
    user: fc.constantFrom(...IDENTITIES),
    dryRun: fc.boolean(),
    target: fc.oneof(
      { arbitrary: namespaceTarget, weight: 4 },
      { arbitrary: quotaTarget, weight: 4 },
      { arbitrary: projectTarget, weight: 2 },
      { arbitrary: otherTarget, weight: 1 },
    ),
  })
  .map(({ uid, user, dryRun, target }) => defined({ uid, user, dryRun, ...target }) as Case);
const validReview = validCase.map(reviewOf);

/** Broken envelopes: the webhook must answer 400 and never an AdmissionReview that admits. */
const anything = fc.anything({ maxDepth: 3 });
const brokenReview = fc.oneof(
  anything.map((a) => JSON.stringify(a)),
  validReview.map((r) => JSON.stringify({ ...r, apiVersion: 'admission.k8s.io/v1beta1' })),
  validReview.map((r) => JSON.stringify({ ...r, kind: 'Pod' })),
  validReview.map((r) => JSON.stringify({ apiVersion: r.apiVersion, kind: r.kind })),
  validReview.map((r) => JSON.stringify({ ...r, request: { ...(r.request as object), uid: 42 } })),
  validReview.map((r) => JSON.stringify({ ...r, request: { ...(r.request as object), operation: 'EXPLODE' } })),
  validReview.map((r) =>
    JSON.stringify({ ...r, request: { ...(r.request as object), userInfo: { groups: 'system:masters' } } }),
  ),
  validReview.map((r) => JSON.stringify({ ...r, request: { ...(r.request as object), object: [1, 2, 3] } })),
  validReview.map((r) => JSON.stringify(r).slice(0, Math.max(1, JSON.stringify(r).length - 7))),
  fc.string().map((s) => `{${s}`),
);

// ---------------------------------------------------------------------------------------------
// The oracle: docs/rules.md over the world above
// ---------------------------------------------------------------------------------------------

interface Expected {
  allowed: boolean;
  /** A denial's rule ids, sorted. */
  rules: string[];
  /** An admission's warning rule ids (Q4), sorted. */
  warnings: string[];
}

function expected(rules: Iterable<string>, warnings: Iterable<string> = []): Expected {
  const r = [...new Set(rules)].sort();
  return { allowed: r.length === 0, rules: r, warnings: r.length > 0 ? [] : [...new Set(warnings)].sort() };
}
const ADMIT = expected([]);

const privileged = (u: Identity) =>
  u.groups.some((g) => PRIVILEGED_GROUPS.includes(g)) ||
  (u.username !== undefined && PRIVILEGED_USERS.includes(u.username));
const systemController = (u: Identity) => u.username !== undefined && SYSTEM_CONTROLLERS.includes(u.username);
const owns = (p: ProjectModel, u: Identity) =>
  p.owners.some(
    (s) => (s.kind === 'Group' && u.groups.includes(s.name)) || (s.kind === 'User' && u.username === s.name),
  );
const projectNamed = (name: string | undefined) => PROJECTS.find((p) => p.name === name);
const prefixOf = (project: string) => `${project}-`;
const dnsLabel = (s: string) => s.length <= 63 && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(s);
const reserved = (name: string) => RESERVED_NAMES.includes(name) || RESERVED_PREFIXES.some((p) => name.startsWith(p));
/** N2: `<project>-<non-empty suffix>`, a DNS label, not reserved. */
const fitsProject = (p: ProjectModel, name: string) =>
  dnsLabel(name) && name.startsWith(prefixOf(p.name)) && name.length > prefixOf(p.name).length && !reserved(name);

/** The project whose prefix the name carries (with a non-empty suffix). */
function projectByPrefix(name: string): ProjectModel | undefined {
  return PROJECTS.filter((p) => name.startsWith(prefixOf(p.name)) && name.length > prefixOf(p.name).length).sort(
    (a, b) => b.name.length - a.name.length,
  )[0];
}
/** An existing namespace's project: by its label only. */
const labelledProject = (m: NamespaceModel | undefined) =>
  m?.labels?.[L_PROJECT] ? projectNamed(m.labels[L_PROJECT]) : undefined;
const cachedNamespace = (name: string) => CACHED.find((n) => n.meta.name === name);
/** The namespaces labelled for the project in the snapshot. */
const members = (project: string) => CACHED.filter((n) => n.meta.labels?.[L_PROJECT] === project);

const budgetKeys = (p: ProjectModel) => RESOURCES.filter((r) => p.budget?.[r] !== undefined);

/** The effective quota: per resource, the smallest spec.hard over the unscoped quotas. */
function effective(quotas: readonly QuotaModel[]): Res {
  const out: Res = {};
  for (const q of quotas) {
    if (q.scoped) continue;
    for (const r of RESOURCES) {
      const v = q.hard[r];
      if (v !== undefined) out[r] = Math.min(out[r] ?? Infinity, v);
    }
  }
  return out;
}

/** What a namespace holds: per resource the largest of its effective quota, the tightest status.hard and the largest status.used. */
function holds(quotas: readonly QuotaModel[]): Res {
  const unscoped = quotas.filter((q) => !q.scoped);
  const out = effective(quotas);
  for (const r of RESOURCES) {
    const enforced = unscoped.map((q) => q.status?.hard?.[r]).filter((v): v is number => v !== undefined);
    const used = unscoped.map((q) => q.status?.used?.[r]).filter((v): v is number => v !== undefined);
    const all = [
      out[r],
      enforced.length ? Math.min(...enforced) : undefined,
      used.length ? Math.max(...used) : undefined,
    ].filter((v): v is number => v !== undefined);
    if (all.length) out[r] = Math.max(...all);
  }
  return out;
}

/** What a namespace counts against the budget: what it holds, namespaceDefaults where it holds nothing. */
function share(held: Res, p: ProjectModel): Res {
  const out: Res = {};
  for (const r of budgetKeys(p)) {
    const v = held[r] ?? p.defaults?.[r];
    if (v !== undefined) out[r] = v;
  }
  return out;
}

/** Σ of the shares of the project's namespaces but one (`budgetOf`: the Project whose budget and defaults count). */
function othersTotal(project: string, except: string, budgetOf: ProjectModel): Res {
  const out: Res = {};
  for (const n of members(project)) {
    if (n.meta.name === except) continue;
    const s = share(holds(n.quotas), budgetOf);
    for (const r of RESOURCES) if (s[r] !== undefined) out[r] = (out[r] ?? 0) + s[r];
  }
  return out;
}

const grows = (before: Res, after: Res) =>
  RESOURCES.some((r) => after[r] !== undefined && (before[r] === undefined || after[r] > before[r]));
/** Q1: the namespace's share and the others' together exceed the budget for some resource it asks. */
const overBudget = (p: ProjectModel, self: Res, others: Res) =>
  budgetKeys(p).some((r) => self[r] !== undefined && self[r] + (others[r] ?? 0) > p.budget![r]!);
/** Q4: within the budget, but less than 10 % of it left. */
const lowHeadroom = (p: ProjectModel, self: Res, others: Res) =>
  budgetKeys(p).some((r) => {
    const total = (others[r] ?? 0) + (self[r] ?? 0);
    const limit = p.budget![r]!;
    return total <= limit && 10 * (limit - total) < limit;
  });

const sameList = (a: unknown[] | undefined, b: unknown[] | undefined) => isDeepStrictEqual(a ?? [], b ?? []);
const sameMap = (a: Labels | undefined, b: Labels | undefined) => isDeepStrictEqual(a ?? {}, b ?? {});
/** Every entry of `after` was already in `before`: something was removed, nothing added. */
const dropsOnly = (after: unknown[] | undefined, before: unknown[] | undefined) =>
  (after ?? []).every((a) => (before ?? []).some((b) => isDeepStrictEqual(a, b)));

/** T7: a non-privileged subject adds, changes or removes protected namespace metadata (other than the values tenantgate sets). */
function protectedChange(
  before: NamespaceModel,
  after: NamespaceModel,
  ours: { labels?: Labels; annotations?: Labels } = {},
): boolean {
  const isLabel = (k: string) =>
    ([...GRANTING_LABEL_PREFIXES, ...CONFIGURED_PREFIXES].some((p) => k.startsWith(p)) ||
      GRANTING_LABELS.includes(k)) &&
    k !== L_PROJECT &&
    k !== L_TENANT;
  const isAnnotation = (k: string) =>
    CONFIGURED_PREFIXES.some((p) => k.startsWith(p)) || GRANTING_ANNOTATIONS.includes(k);
  const changed = (b: Labels = {}, a: Labels = {}, isProtected: (k: string) => boolean, mine: Labels = {}) =>
    [...new Set([...Object.keys(b), ...Object.keys(a)])].some(
      (k) => isProtected(k) && b[k] !== a[k] && !(a[k] !== undefined && mine[k] === a[k]),
    );
  return (
    changed(before.labels, after.labels, isLabel, ours.labels) ||
    changed(before.annotations, after.annotations, isAnnotation, ours.annotations) ||
    !sameList(before.finalizers, after.finalizers) ||
    !sameList(before.ownerReferences, after.ownerReferences)
  );
}

/** The Pod Security labels of the project's namespaces: its own levels over tenantgate.yaml's. */
function podSecurityLabels(p: ProjectModel): Labels {
  return Object.fromEntries(PS_MODES.map((mode) => [ps(mode), p.podSecurity?.[mode] ?? POD_SECURITY[mode]]));
}

function namespaceCreate(u: Identity, ns: NamespaceModel): Expected {
  const name = ns.name ?? '';
  const labels = ns.labels ?? {};
  const claimed = labels[L_PROJECT];
  const p = claimed ? projectNamed(claimed) : projectByPrefix(name);
  if (claimed && !p) return expected(['T2']);
  // Outside projects only privileged subjects set a tenant label (T3).
  if (!p)
    return privileged(u)
      ? ADMIT
      : expected([...(reserved(name) ? ['N2'] : []), ...(L_TENANT in labels ? ['T3'] : []), 'T6']);
  const rules: string[] = [];
  if (!fitsProject(p, name)) rules.push('N2');
  // Unlabelled, claimed by its prefix only: for anyone but owners and privileged subjects T4 says it.
  if ((claimed || privileged(u) || owns(p, u)) && (labels[L_PROJECT] !== p.name || labels[L_TENANT] !== p.tenant))
    rules.push('T2');
  if (!privileged(u)) {
    if (!owns(p, u)) rules.push('T4');
    if (protectedChange({}, ns, { labels: podSecurityLabels(p), annotations: p.uid ? { [A_UID]: p.uid } : {} }))
      rules.push('T7');
  }
  if (p.deleting) rules.push('T4');
  if (p.maxNamespaces !== undefined && members(p.name).filter((n) => n.meta.name !== name).length + 1 > p.maxNamespaces)
    rules.push('Q1');
  if (!privileged(u) && budgetKeys(p).some((r) => p.defaults?.[r] === undefined)) rules.push('Q2');
  const self = share({}, p);
  const others = othersTotal(p.name, name, p);
  if (overBudget(p, self, others)) rules.push('Q1');
  return expected(rules, lowHeadroom(p, self, others) ? ['Q4'] : []);
}

function namespaceUpdate(u: Identity, ns: NamespaceModel, old: NamespaceModel | undefined): Expected {
  if (!old) return ADMIT;
  // Kubernetes' controllers may drop finalizers and owner references, nothing else (docs/rules.md T7).
  if (
    systemController(u) &&
    sameMap(ns.labels, old.labels) &&
    sameMap(ns.annotations, old.annotations) &&
    dropsOnly(ns.finalizers, old.finalizers) &&
    dropsOnly(ns.ownerReferences, old.ownerReferences)
  )
    return ADMIT;
  const name = ns.name ?? '';
  const tenancyMoved =
    old.labels?.[L_PROJECT] !== ns.labels?.[L_PROJECT] || old.labels?.[L_TENANT] !== ns.labels?.[L_TENANT];
  if (!privileged(u)) {
    const p = labelledProject(old);
    if (!p) return expected(['T6']);
    const rules: string[] = [];
    if (!owns(p, u)) rules.push('T4');
    if (tenancyMoved) rules.push('T3');
    if (protectedChange(old, ns)) rules.push('T7');
    return expected(rules);
  }
  const claimed = ns.labels?.[L_PROJECT];
  if (!tenancyMoved || !claimed) return ADMIT;
  const p = projectNamed(claimed);
  if (!p) return expected(['T2']);
  const rules: string[] = [];
  if (!fitsProject(p, name)) rules.push('N2');
  if (ns.labels?.[L_TENANT] !== p.tenant) rules.push('T2');
  return expected(rules);
}

function namespaceDelete(u: Identity, old: NamespaceModel | undefined): Expected {
  if (!old || privileged(u) || systemController(u)) return ADMIT;
  const p = labelledProject(old);
  if (!p) return expected(['T6']);
  return expected(owns(p, u) ? [] : ['T4']);
}

function quotaReview(
  u: Identity,
  operation: Operation,
  namespace: string,
  object: QuotaModel | null | undefined,
  old: QuotaModel | undefined,
): Expected {
  const priv = privileged(u);
  const deletingController = operation === 'DELETE' && systemController(u);
  if (
    operation === 'UPDATE' &&
    object &&
    old &&
    systemController(u) &&
    sameMap(object.labels, old.labels) &&
    isDeepStrictEqual(quotaJson(object, '').spec, quotaJson(old, '').spec) &&
    dropsOnly(object.finalizers, old.finalizers)
  )
    return ADMIT;
  const cached = cachedNamespace(namespace);
  // Finishing a terminating (or already gone) namespace.
  if ((priv || deletingController) && operation === 'DELETE' && (!cached || cached.terminating)) return ADMIT;
  const p = cached ? labelledProject(cached.meta) : projectByPrefix(namespace);
  if (!p) return priv || deletingController ? ADMIT : expected(['T6']);
  const rules: string[] = [];
  if (!priv && !deletingController && !owns(p, u)) rules.push('T4');
  // T7: finalizers (and owner references) of a quota in a project namespace are for privileged subjects.
  if (!priv && !deletingController && object && !sameList(old?.finalizers, object.finalizers)) rules.push('T7');
  if (budgetKeys(p).length === 0) return expected(rules);
  const current = cached?.quotas ?? [];
  const others = othersTotal(p.name, namespace, p);
  const before = share(holds(current), p);
  if (operation === 'DELETE') {
    if (!old) return expected(rules);
    const name = (object ?? old).name;
    const after = current.filter((q) => q.name !== name);
    // Q3: tenants (and controllers, in a live namespace) may not take away the only coverage.
    const had = effective(current);
    const left = effective(after);
    if (!priv && budgetKeys(p).some((r) => had[r] !== undefined && left[r] === undefined)) rules.push('Q3');
    const self = share(holds(after), p);
    if (grows(before, self) && overBudget(p, self, others)) rules.push('Q1');
    // Q4: an admitted delete warns like any admitted quota write (deleting the tighter quota can grow the
    // share into the last 10 %). Q2 judges creates and updates only: a privileged delete of the only
    // coverage is admitted (docs/rules.md Q2).
    return expected(rules, lowHeadroom(p, self, others) ? ['Q4'] : []);
  }
  if (!object) return expected(rules);
  const after = [...current.filter((q) => q.name !== object.name), object];
  if (!object.scoped || (old && !old.scoped)) {
    // Q2: tenants leave every budgeted resource covered; privileged subjects keep what was covered.
    const had = effective(current);
    const covered = effective(after);
    if (budgetKeys(p).some((r) => (!priv || had[r] !== undefined) && covered[r] === undefined)) rules.push('Q2');
  }
  const self = share(holds(after), p);
  if (grows(before, self) && overBudget(p, self, others)) rules.push('Q1');
  return expected(rules, lowHeadroom(p, self, others) ? ['Q4'] : []);
}

function projectReview(
  u: Identity,
  operation: Operation,
  object: ProjectModel | null | undefined,
  old: ProjectModel | undefined,
): Expected {
  const sameButFinalizers = (a: ProjectModel, b: ProjectModel) =>
    sameMap(a.labels, b.labels) && isDeepStrictEqual(projectJson(a).spec, projectJson(b).spec);
  if (
    operation === 'UPDATE' &&
    object &&
    old &&
    systemController(u) &&
    sameButFinalizers(object, old) &&
    dropsOnly(object.finalizers, old.finalizers)
  )
    return ADMIT;
  if (!privileged(u)) return expected(['T5']);
  if (operation === 'DELETE' || !object || object.deleting) return ADMIT;
  const rules: string[] = [];
  const schemaBroken =
    object.owners.some((o) => !['User', 'Group', 'ServiceAccount'].includes(o.kind)) || !dnsLabel(object.tenant);
  if (schemaBroken) rules.push('S1');
  if (!dnsLabel(object.name) || object.name.length > 40) rules.push('N1');
  if (old && old.tenant !== object.tenant) rules.push('T1');
  // What the cluster says (overlaps, allocations) is judged for a Project that matches its schema.
  if (schemaBroken) return expected(rules);
  const mine = prefixOf(object.name);
  if (
    PROJECTS.some(
      (p) => p.name !== object.name && (mine.startsWith(prefixOf(p.name)) || prefixOf(p.name).startsWith(mine)),
    )
  )
    rules.push('N4');
  const allocated = othersTotal(object.name, '', object);
  // On UPDATE only the budgets the update lowers (or newly sets) are judged: a project already over a
  // budget it keeps (a burst ended while its pods still run) may still be edited.
  const lowers = (r: Resource) => !old?.budget || old.budget[r] === undefined || object.budget![r]! < old.budget[r]!;
  if (budgetKeys(object).some((r) => lowers(r) && (allocated[r] ?? 0) > object.budget![r]!)) rules.push('Q1');
  return expected(rules);
}

/** The verdict /validate must give. */
function oracle(c: Case): Expected {
  if (c.subResource) {
    // T8: status and finalize of Namespaces, status of ResourceQuotas.
    const judged =
      (c.kind === 'Namespace' || (c.kind === 'ResourceQuota' && c.subResource === 'status')) &&
      GVK[c.kind].group === '';
    return judged && !privileged(c.user) && !systemController(c.user) ? expected(['T8']) : ADMIT;
  }
  switch (c.kind) {
    case 'Namespace':
      if (c.operation === 'CREATE') return c.object ? namespaceCreate(c.user, c.object) : ADMIT;
      if (c.operation === 'UPDATE') return namespaceUpdate(c.user, c.object!, c.oldObject);
      return namespaceDelete(c.user, c.oldObject);
    case 'ResourceQuota':
      return quotaReview(c.user, c.operation, c.namespace, c.object, c.oldObject);
    case 'Project':
      return projectReview(c.user, c.operation, c.object, c.oldObject);
    case 'Deployment':
      return ADMIT;
  }
}

/** What /mutate turns the object into; undefined when it must answer without a patch. */
function mutation(c: Case): Case | undefined {
  if (c.subResource || !c.object || c.operation === 'DELETE') return undefined;
  switch (c.kind) {
    case 'Namespace': {
      // CREATE: the project and tenant labels, the project-uid annotation, the Pod Security labels the request lacks.
      if (c.operation !== 'CREATE') return undefined;
      const ns = c.object;
      const claimed = ns.labels?.[L_PROJECT];
      const p = claimed ? projectNamed(claimed) : projectByPrefix(ns.name ?? '');
      if (!p || (!claimed && !privileged(c.user) && !owns(p, c.user))) return undefined;
      const labels: Labels = { ...ns.labels, [L_PROJECT]: p.name };
      if (!labels[L_TENANT]) labels[L_TENANT] = p.tenant;
      for (const [key, level] of Object.entries(podSecurityLabels(p))) labels[key] ??= level;
      const out: NamespaceModel = {
        ...ns,
        labels,
        ...(p.uid ? { annotations: { ...ns.annotations, [A_UID]: p.uid } } : {}),
      };
      return isDeepStrictEqual(namespaceJson(out), namespaceJson(ns)) ? undefined : { ...c, object: out };
    }
    case 'ResourceQuota': {
      // The project label on quotas in a project's namespace: a cached namespace's by its label, else by
      // its prefix — also for a cached namespace without the label, which validation holds to be in no project.
      const cached = cachedNamespace(c.namespace);
      const claimed = cached?.meta.labels?.[L_PROJECT];
      const p = claimed ? projectNamed(claimed) : projectByPrefix(c.namespace);
      if (!p || c.object.labels?.[L_PROJECT] === p.name) return undefined;
      return { ...c, object: { ...c.object, labels: { ...c.object.labels, [L_PROJECT]: p.name } } };
    }
    case 'Project':
      // The cascade-delete finalizer on a live Project.
      if (c.object.deleting || c.object.finalizers?.includes(CASCADE)) return undefined;
      return { ...c, object: { ...c.object, finalizers: [...(c.object.finalizers ?? []), CASCADE] } };
    case 'Deployment':
      return undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// The webhook under test
// ---------------------------------------------------------------------------------------------

let server: Server;
let port: number;
let agent: Agent;
/** Replaced before every decision (see the header). */
let guard = freshGuard();

function freshGuard(): HeadroomGuard {
  return new HeadroomGuard({ ttlMs: 30_000, ledger: new MemoryLedger() });
}

const stats = {
  cases: 0,
  crashes: 0,
  judged: 0,
  admitted: 0,
  denied: 0,
  warned: 0,
  mutated: 0,
  revalidated: 0,
  rules: {} as Record<string, number>,
};

beforeAll(async () => {
  const certs = await generateWebhookCerts(await mkdtemp(join(tmpdir(), 'tg-fuzz-')));
  const ca = await readFile(certs.caCert);
  const app = createApp({
    config: DEFAULT_CONFIG,
    snapshot,
    ready: () => true,
    metrics: new WebhookMetrics(),
    decide: (ctx, req, signal) => guard.decide(ctx, req, signal),
    pending: {
      allocation: (namespace) => guard.pending.allocation(namespace),
      namespaces: (project) => guard.pending.namespaces(project),
      quotaOverlay: (namespace) => guard.pending.quotaOverlay?.(namespace),
    },
  });
  console.log(`[webhook-fuzz] seed ${SEED} (FUZZ_SEED=${SEED} reproduces), ${RUNS} cases`);
  server = serveHttps({ cert: certs.cert, key: certs.key }, app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  port = (server.address() as { port: number }).port;
  agent = new HttpsAgent({ keepAlive: true, maxSockets: 16, ca });
});

afterAll(async () => {
  console.log(`[webhook-fuzz] ${JSON.stringify(stats)}`);
  agent.destroy();
  await new Promise<void>((r) => server.close(() => r()));
});

interface Answer {
  status: number;
  body: string;
  contentType: string;
}

function post(path: string, body: string | Buffer): Promise<Answer> {
  guard = freshGuard();
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, method: 'POST', agent, headers: { 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: text, contentType: String(res.headers['content-type'] ?? '') }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: { code: number; message: string };
  warnings?: string[];
  patch?: string;
  patchType?: string;
}

/** A well-formed envelope: 200 and an AdmissionReview answering this uid. */
function admissionOf(res: Answer, uid: string): AdmissionResponse {
  stats.cases++;
  if (res.status >= 500) stats.crashes++;
  expect(res.contentType).toContain('application/json');
  expect(res.status, res.body).toBe(200);
  const parsed = JSON.parse(res.body) as { apiVersion: string; kind: string; response: AdmissionResponse };
  expect(parsed.apiVersion).toBe('admission.k8s.io/v1');
  expect(parsed.kind).toBe('AdmissionReview');
  expect(parsed.response.uid).toBe(uid);
  return parsed.response;
}

/** Rule ids of a denial's lines or of warnings; a line without one shows as itself (and fails). */
const ruleIds = (lines: readonly string[]) =>
  [...new Set(lines.map((l) => /^\[([A-Z]\d+)\] /.exec(l)?.[1] ?? `no rule id: ${l}`))].sort();

async function validateAs(c: Case): Promise<void> {
  const body = JSON.stringify(reviewOf(c));
  const answer = admissionOf(await post('/validate', body), c.uid);
  const want = oracle(c);
  const got: Expected = answer.allowed
    ? { allowed: true, rules: [], warnings: ruleIds(answer.warnings ?? []) }
    : {
        allowed: false,
        rules: ruleIds(String(answer.status?.message ?? '').split('\n')),
        warnings: ruleIds(answer.warnings ?? []),
      };
  expect(got, `${c.user.who} — ${answer.status?.message ?? 'admitted'}\n${body}`).toEqual(want);
  if (!answer.allowed) expect(answer.status?.code).toBe(403);
  expect(answer.patch).toBeUndefined();
  stats.judged++;
  if (want.allowed) stats.admitted++;
  else stats.denied++;
  if (want.warnings.length) stats.warned++;
  for (const r of [...want.rules, ...want.warnings]) stats.rules[r] = (stats.rules[r] ?? 0) + 1;
}

/** /mutate: no patch where the model changes nothing, else the patch turns the object into the model's. */
async function mutateAs(c: Case): Promise<Case | undefined> {
  const review = reviewOf(c);
  const answer = admissionOf(await post('/mutate', JSON.stringify(review)), c.uid);
  expect(answer.allowed).toBe(true);
  const want = mutation(c);
  if (!want) {
    expect(answer.patch, `no patch expected\n${JSON.stringify(review)}`).toBeUndefined();
    return undefined;
  }
  expect(answer.patchType).toBe('JSONPatch');
  const patch = JSON.parse(Buffer.from(answer.patch ?? '', 'base64').toString('utf8')) as fastJsonPatch.Operation[];
  const original = (review.request as { object: Record<string, unknown> }).object;
  const patched = fastJsonPatch.applyPatch(structuredClone(original), patch, true, false).newDocument;
  expect(patched, `${JSON.stringify(patch)}\n${JSON.stringify(review)}`).toEqual(objectJson(want, 'object'));
  stats.mutated++;
  return want;
}

describe('webhook fuzz', () => {
  it('models the configuration the app runs with', () => {
    const c = DEFAULT_CONFIG;
    expect(c.privileged).toEqual({ users: PRIVILEGED_USERS, groups: PRIVILEGED_GROUPS });
    expect(c.systemControllers).toEqual(SYSTEM_CONTROLLERS);
    expect(c.reserved).toEqual({ names: RESERVED_NAMES, prefixes: RESERVED_PREFIXES });
    expect(c.protectedNamespaceMetadata).toEqual({
      labels: CONFIGURED_PREFIXES.map((p) => `${p}*`),
      annotations: CONFIGURED_PREFIXES.map((p) => `${p}*`),
    });
    expect(
      GRANTING_NAMESPACE_METADATA.map((g) => (g.field === 'labels' ? 'label ' : 'annotation ') + g.key).sort(),
    ).toEqual(
      [
        ...GRANTING_LABEL_PREFIXES.map((p) => `label ${p}*`),
        ...GRANTING_LABELS.map((k) => `label ${k}`),
        ...GRANTING_ANNOTATIONS.map((k) => `annotation ${k}`),
      ].sort(),
    );
    expect(c.podSecurity).toEqual(POD_SECURITY);
    expect([c.namespacePrefix, c.requireProjectForUsers, c.headroomWarningThreshold, c.clusterName]).toEqual([
      '{project}-',
      true,
      0.1,
      '',
    ]);
  });

  it(`answers ${RUNS} generated bodies as the oracle says: the verdict and rule ids of /validate, the object /mutate makes, 400 for every broken envelope`, async () => {
    let total = 0;
    await fc.assert(
      fc.asyncProperty(validCase, async (c) => {
        total++;
        await validateAs(c);
        const mutated = await mutateAs(c);
        if (mutated) {
          // As the apiserver calls them: the mutated object is what validation sees; mutating it again changes nothing.
          stats.revalidated++;
          await validateAs(mutated);
          expect(await mutateAs(mutated)).toBeUndefined();
        }
      }),
      { numRuns: Math.ceil(RUNS / 2), seed: SEED },
    );
    await fc.assert(
      fc.asyncProperty(brokenReview, async (body) => {
        total++;
        for (const path of ['/validate', '/mutate']) {
          const res = await post(path, body);
          stats.cases++;
          if (res.status >= 500) stats.crashes++;
          expect(res.contentType).toContain('application/json');
          expect(res.status, res.body).toBe(400);
          const parsed = JSON.parse(res.body) as { error?: unknown; response?: unknown };
          expect(typeof parsed.error).toBe('string');
          expect(parsed.response).toBeUndefined();
        }
      }),
      { numRuns: Math.ceil(RUNS / 2), seed: SEED },
    );
    expect(total).toBeGreaterThanOrEqual(RUNS);
    expect(stats.crashes).toBe(0);
    // The generators reach every rule the model judges, and both verdicts in numbers.
    if (RUNS >= 2_000) {
      for (const rule of [
        'S1',
        'N1',
        'N2',
        'N4',
        'T1',
        'T2',
        'T3',
        'T4',
        'T5',
        'T6',
        'T7',
        'T8',
        'Q1',
        'Q2',
        'Q3',
        'Q4',
      ])
        expect(stats.rules[rule] ?? 0, rule).toBeGreaterThan(0);
      expect(stats.admitted).toBeGreaterThan(stats.judged / 10);
      expect(stats.denied).toBeGreaterThan(stats.judged / 10);
      expect(stats.mutated).toBeGreaterThan(stats.judged / 50);
    }
  }, 3_600_000);

  it('refuses oversized bodies with 413 and unknown paths with 404, and still serves afterwards', async () => {
    const big = Buffer.alloc(MAX_BODY_BYTES + 1024, 'a');
    expect((await post('/validate', big)).status).toBe(413);
    expect((await post('/nope', '{}')).status).toBe(404);
    const ok = await post(
      '/validate',
      JSON.stringify({
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        request: {
          uid: 'u',
          kind: { group: '', version: 'v1', kind: 'Namespace' },
          operation: 'CREATE',
          userInfo: { username: 'bob', groups: [] },
          object: { metadata: { name: 'payments-x' } },
        },
      }),
    );
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body).response).toMatchObject({
      uid: 'u',
      allowed: false,
      status: { code: 403, message: expect.stringMatching(/^\[T4\] /) },
    });
  });

  it('fails closed before the caches synced', async () => {
    const app = createApp({ config: DEFAULT_CONFIG, snapshot, ready: () => false, metrics: new WebhookMetrics() });
    const { default: supertestless } = await import('node:http');
    const plain = supertestless.createServer(app);
    await new Promise<void>((r) => plain.listen(0, '127.0.0.1', () => r()));
    const p = (plain.address() as { port: number }).port;
    const body = JSON.stringify({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: 'x',
        kind: { group: '', version: 'v1', kind: 'Namespace' },
        operation: 'CREATE',
        userInfo: { username: 'admin', groups: ['system:masters'] },
        object: { metadata: { name: 'anything' } },
      },
    });
    const res = await fetch(`http://127.0.0.1:${p}/validate`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json' },
    });
    const json = (await res.json()) as { response: { allowed: boolean; status: { code: number; message: string } } };
    expect(json.response.allowed).toBe(false);
    expect(json.response.status.code).toBe(503);
    expect((await fetch(`http://127.0.0.1:${p}/readyz`)).status).toBe(503);
    plain.close();
  });
});
