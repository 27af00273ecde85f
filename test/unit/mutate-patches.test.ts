/**
 * /mutate builds its JSON Patch operations directly (src/mutate/patch.ts). The way it worked before —
 * mutate a structuredClone of the object, then diff the whole object with fast-json-patch's compare — is
 * kept here as the oracle: on generated inputs (labels and annotations absent, empty, of another shape,
 * in either order; tenancy labels equal, different or empty; Pod Security labels partly set; keys with
 * `/` and `~`; metadata absent; finalizers absent, empty, with others; owners, privileged subjects and
 * strangers) both must give the same operations in the same order, and the patched objects must be equal.
 */
import { TEST_NOW } from '../support/instant.js';
import fastJsonPatch from 'fast-json-patch';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, isPrivileged } from '../../src/config/config.js';
import { projectOfNamespace, type Operation, type ReviewContext } from '../../src/validate/admission.js';
import { podSecurityLabels } from '../../src/validate/pod-security.js';
import { isOwner } from '../../src/validate/rules/tenancy.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import {
  ANNOTATION_PROJECT_UID,
  FINALIZER_CASCADE,
  LABEL_PROJECT,
  LABEL_TENANT,
  type NamespaceObject,
  type Project,
  type ResourceQuotaObject,
} from '../../src/validate/types.js';
import { mutationFor, type AdmissionRequest } from '../../src/webhook/review.js';
import { escapePointer, metadataPatch } from '../../src/mutate/patch.js';

// --- the oracle: src/mutate/mutate.ts before the patches were built directly ----------------------
const withMetadata = <T>(obj: Record<string, unknown>): T =>
  (typeof obj.metadata === 'object' && obj.metadata !== null ? obj : { ...obj, metadata: {} }) as T;

function oldNamespace(ctx: ReviewContext, operation: Operation, ns: NamespaceObject): NamespaceObject {
  if (operation !== 'CREATE') return ns;
  const name = ns.metadata.name ?? '';
  const { project, claimed } = projectOfNamespace(ctx, name, ns.metadata.labels, ns.metadata.generateName);
  if (!project) return ns;
  if (!claimed && !isPrivileged(ctx.config, ctx.user) && !isOwner(project, ctx.user)) return ns;
  const out = structuredClone(ns);
  out.metadata.labels = { ...out.metadata.labels, [LABEL_PROJECT]: project.metadata.name ?? '' };
  if (!out.metadata.labels[LABEL_TENANT]) out.metadata.labels[LABEL_TENANT] = project.spec.tenant;
  for (const [key, level] of Object.entries(podSecurityLabels(ctx.config.podSecurity, project))) {
    if (out.metadata.labels[key] === undefined) out.metadata.labels[key] = level;
  }
  if (project.metadata.uid)
    out.metadata.annotations = { ...out.metadata.annotations, [ANNOTATION_PROJECT_UID]: project.metadata.uid };
  return out;
}

function oldProject(operation: Operation, project: Project): Project {
  if (operation === 'DELETE' || project.metadata.deletionTimestamp) return project;
  if (project.metadata.finalizers?.includes(FINALIZER_CASCADE)) return project;
  const out = structuredClone(project);
  out.metadata.finalizers = [...(out.metadata.finalizers ?? []), FINALIZER_CASCADE];
  return out;
}

function oldQuota(
  ctx: ReviewContext,
  operation: Operation,
  namespace: string,
  quota: ResourceQuotaObject,
): ResourceQuotaObject {
  if (operation === 'DELETE') return quota;
  const nsObject = ctx.snapshot.namespace(namespace);
  const { project } = projectOfNamespace(ctx, namespace, nsObject?.metadata.labels);
  if (!project || quota.metadata.labels?.[LABEL_PROJECT] === project.metadata.name) return quota;
  const out = structuredClone(quota);
  out.metadata.labels = { ...out.metadata.labels, [LABEL_PROJECT]: project.metadata.name ?? '' };
  return out;
}

/** The old mutationFor's patch: the operations, or undefined for no patch. */
function oldPatch(ctx: ReviewContext, request: AdmissionRequest): unknown[] | undefined {
  const object = request.object;
  if (!object || request.operation === 'DELETE') return undefined;
  const typed = withMetadata<Record<string, unknown>>(object);
  let modified: unknown;
  if (request.kind.kind === 'Namespace')
    modified = oldNamespace(ctx, request.operation, typed as unknown as NamespaceObject);
  else if (request.kind.kind === 'Project') modified = oldProject(request.operation, typed as unknown as Project);
  else modified = oldQuota(ctx, request.operation, request.namespace ?? '', typed as unknown as ResourceQuotaObject);
  if (modified === typed) return undefined;
  const patch = fastJsonPatch.compare(object, modified as object);
  return patch.length === 0 ? undefined : patch;
}

// --- generated inputs ----------------------------------------------------------------------------
const snapshot = MemorySnapshot.of({
  projects: [
    {
      metadata: { name: 'payments', uid: 'uid-payments' },
      spec: { tenant: 'acme', owners: [{ kind: 'Group', name: 'acme:payments-admins' }] },
    },
    {
      metadata: { name: 'web' },
      spec: { tenant: 'acme', owners: [{ kind: 'User', name: 'carol' }], podSecurity: { enforce: 'restricted' } },
    },
    {
      metadata: { name: 'ml', uid: 'uid-ml' },
      spec: {
        tenant: 'globex',
        owners: [{ kind: 'Group', name: 'globex:admins' }],
        podSecurity: { enforce: 'privileged', warn: 'baseline', audit: 'baseline' },
      },
    },
  ],
  namespaces: [
    { metadata: { name: 'payments-api', labels: { [LABEL_PROJECT]: 'payments', [LABEL_TENANT]: 'acme' } } },
    { metadata: { name: 'web-site', labels: { [LABEL_PROJECT]: 'web', [LABEL_TENANT]: 'acme' } } },
    { metadata: { name: 'platform' } },
  ],
});
const USERS = [
  { username: 'alice', groups: ['acme:payments-admins'] },
  { username: 'carol', groups: [] },
  { username: 'bob', groups: ['globex:admins'] },
  { username: 'admin', groups: ['system:masters'] },
  { username: 'dave', groups: ['tenants'] },
];

/** A small deterministic generator (mulberry32). */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function generate(rand: () => number) {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const maybe = (p = 0.5) => rand() < p;
  const labelMap = (): unknown => {
    const shape = rand();
    if (shape < 0.15) return undefined;
    if (shape < 0.2) return pick([null, [], 'oops', ['a']]);
    const out: Record<string, string> = {};
    const keys = [
      LABEL_PROJECT,
      LABEL_TENANT,
      'pod-security.kubernetes.io/enforce',
      'pod-security.kubernetes.io/warn',
      'pod-security.kubernetes.io/audit',
      'team',
      'a~b/c',
      'kubernetes.io/metadata.name',
    ];
    for (const key of keys) {
      if (!maybe(0.35)) continue;
      out[key] =
        key === LABEL_PROJECT
          ? pick(['payments', 'web', 'ml', 'ghost', ''])
          : key === LABEL_TENANT
            ? pick(['acme', 'globex', ''])
            : key.startsWith('pod-security')
              ? pick(['baseline', 'restricted', 'privileged'])
              : pick(['x', 'y']);
    }
    // Keys in another order now and then: the patch's order follows the object's.
    return maybe(0.3) ? Object.fromEntries(Object.entries(out).reverse()) : out;
  };
  const annotationMap = (): unknown => {
    const shape = rand();
    if (shape < 0.4) return undefined;
    if (shape < 0.45) return pick([null, 'oops']);
    const out: Record<string, string> = {};
    if (maybe()) out['note/x~y'] = 'n';
    if (maybe()) out[ANNOTATION_PROJECT_UID] = pick(['uid-payments', 'uid-ml', 'forged']);
    if (maybe()) out.other = 'o';
    return out;
  };
  const metadata = (extra: Record<string, unknown>): Record<string, unknown> | undefined => {
    if (rand() < 0.05) return undefined;
    const fields: Array<[string, unknown]> = [
      ['labels', labelMap()],
      ['annotations', annotationMap()],
      ...Object.entries(extra),
    ];
    // Either order of labels and annotations, each sometimes absent.
    if (maybe()) fields.reverse();
    const out: Record<string, unknown> = {};
    for (const [k, v] of fields) if (v !== undefined) out[k] = v;
    return out;
  };
  const kind = pick(['Namespace', 'Namespace', 'ResourceQuota', 'Project'] as const);
  const operation = pick(['CREATE', 'CREATE', 'UPDATE', 'DELETE'] as const);
  const userInfo = pick(USERS);
  let object: Record<string, unknown>;
  let namespace: string | undefined;
  if (kind === 'Namespace') {
    const name = pick(['payments-dev', 'web-x', 'ml-train', 'other', 'payments-api', '']);
    const meta = metadata(name === '' ? { generateName: pick(['payments-', 'web-', 'zzz-']) } : { name });
    object = {
      apiVersion: 'v1',
      kind: 'Namespace',
      ...(meta ? { metadata: meta } : {}),
      spec: { finalizers: ['kubernetes'] },
      status: { phase: 'Active' },
    };
  } else if (kind === 'ResourceQuota') {
    namespace = pick(['payments-api', 'web-site', 'platform', 'missing']);
    const meta = metadata({ name: 'q', namespace });
    object = {
      apiVersion: 'v1',
      kind: 'ResourceQuota',
      ...(meta ? { metadata: meta } : {}),
      spec: { hard: { pods: '3', 'requests.cpu': '2' } },
    };
  } else {
    const finalizers = pick([undefined, [], ['other'], [FINALIZER_CASCADE], ['a', FINALIZER_CASCADE, 'b'], ['x', 'y']]);
    const meta = metadata({
      name: 'p',
      ...(finalizers ? { finalizers } : {}),
      ...(maybe(0.15) ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
    });
    object = {
      apiVersion: 'tenantgate.io/v1alpha1',
      kind: 'Project',
      ...(meta ? { metadata: meta } : {}),
      spec: { tenant: 'acme' },
    };
  }
  const request: AdmissionRequest = {
    uid: 'u',
    kind: { group: kind === 'Project' ? 'tenantgate.io' : '', version: kind === 'Project' ? 'v1alpha1' : 'v1', kind },
    operation,
    userInfo,
    object,
    ...(namespace ? { namespace } : {}),
  };
  return request;
}

const ctxOf = (request: AdmissionRequest): ReviewContext => ({
  at: TEST_NOW,
  config: DEFAULT_CONFIG,
  snapshot,
  user: request.userInfo,
});
const decoded = (patch: string | undefined) =>
  patch ? (JSON.parse(Buffer.from(patch, 'base64').toString()) as fastJsonPatch.Operation[]) : undefined;

describe('/mutate builds the same patches as a clone-and-diff of the whole object', () => {
  it('on 5,000 generated requests: the same operations in the same order, and the same patched object', () => {
    const rand = random(20261127);
    const seen = { patched: 0, ops: new Set<string>() };
    for (let i = 0; i < 5000; i++) {
      const request = generate(rand);
      let expected: unknown[] | undefined;
      let expectedError: string | undefined;
      try {
        expected = oldPatch(ctxOf(request), request);
      } catch (err) {
        expectedError = (err as Error).constructor.name;
      }
      const label = `#${i}: ${JSON.stringify(request)}`;
      if (expectedError) {
        expect(() => mutationFor(ctxOf(request), request), label).toThrow();
        continue;
      }
      const response = mutationFor(ctxOf(request), request);
      const actual = decoded(response.patch);
      expect(actual, label).toEqual(expected);
      expect(response.patchType, label).toBe(actual ? 'JSONPatch' : undefined);
      if (!actual) continue;
      seen.patched++;
      for (const op of actual) seen.ops.add(`${op.op} ${op.path.split('/').slice(0, 3).join('/')}`);
      const a = fastJsonPatch.applyPatch(structuredClone(request.object), actual).newDocument;
      const b = fastJsonPatch.applyPatch(
        structuredClone(request.object),
        expected as fastJsonPatch.Operation[],
      ).newDocument;
      expect(a, label).toEqual(b);
    }
    // The generator reached every kind of operation the mutations make.
    expect(seen.patched).toBeGreaterThan(1000);
    for (const op of [
      'add /metadata',
      'add /metadata/labels',
      'replace /metadata/labels',
      'add /metadata/annotations',
      'replace /metadata/annotations',
      'add /metadata/finalizers',
    ]) {
      expect(
        [...seen.ops].some((o) => o === op || o.startsWith(`${op}/`)),
        `${op} generated (${[...seen.ops].join(', ')})`,
      ).toBe(true);
    }
  });
});

describe('patch.ts', () => {
  it('escapes ~ and / in pointer tokens', () => {
    expect(escapePointer('tenantgate.io/project')).toBe('tenantgate.io~1project');
    expect(escapePointer('a~b/c')).toBe('a~0b~1c');
    expect(escapePointer('plain')).toBe('plain');
  });

  it('replaces changed keys in reverse key order, then adds new ones in the order set; absent fields are added whole after', () => {
    const metadata = { name: 'n', annotations: { k: 'v' }, labels: { a: '1', b: '2', c: '3' } };
    expect(
      metadataPatch(metadata, [
        ['labels', { kind: 'map', value: { a: 'x', b: '2', c: 'y', d: '4', e: '5' } }],
        ['finalizers', { kind: 'list', value: ['f'] }],
      ]),
    ).toEqual([
      { op: 'replace', path: '/metadata/labels/c', value: 'y' },
      { op: 'replace', path: '/metadata/labels/a', value: 'x' },
      { op: 'add', path: '/metadata/labels/d', value: '4' },
      { op: 'add', path: '/metadata/labels/e', value: '5' },
      { op: 'add', path: '/metadata/finalizers', value: ['f'] },
    ]);
    expect(metadataPatch(undefined, [['finalizers', { kind: 'list', value: ['f'] }]])).toEqual([
      { op: 'add', path: '/metadata', value: { finalizers: ['f'] } },
    ]);
    expect(metadataPatch({ finalizers: ['a'] }, [['finalizers', { kind: 'list', value: ['a', 'f'] }]])).toEqual([
      { op: 'add', path: '/metadata/finalizers/1', value: 'f' },
    ]);
    expect(metadataPatch({ labels: { a: '1' } }, [['labels', { kind: 'map', value: { a: '1' } }]])).toEqual([]);
  });
});
