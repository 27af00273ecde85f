/** bench/lib/reviews.ts: split out of bench/targets/webhook.ts (see its header for what the webhook benchmark measures). */

import {
  NAMESPACES_PER_PROJECT,
  QUOTA_NAME,
  fixtureQuota,
  namespaceName,
  ownerGroup,
  ownerUser,
  projectName,
  projectUid,
  q5NamespaceName,
  q5Owner,
  q5ProjectName,
  tenantName,
} from './webhook-server.js';

let uidCounter = 0;
function uid(): string {
  uidCounter += 1;
  return `5b0d8a3e-0000-4000-8000-${uidCounter.toString(16).padStart(12, '0')}`;
}

function managedFields(manager: string, operation: string, fields: unknown): unknown[] {
  return [
    { manager, operation, apiVersion: 'v1', time: '2026-01-01T00:00:00Z', fieldsType: 'FieldsV1', fieldsV1: fields },
  ];
}

export interface ReviewInput {
  kind: 'Namespace' | 'ResourceQuota';
  operation: 'CREATE' | 'UPDATE';
  name: string;
  namespace?: string;
  user: { username: string; groups: string[] };
  object: unknown;
  oldObject?: unknown;
}

export function review(r: ReviewInput): Buffer {
  const resource = r.kind === 'Namespace' ? 'namespaces' : 'resourcequotas';
  const gvk = { group: '', version: 'v1', kind: r.kind };
  const gvr = { group: '', version: 'v1', resource };
  return Buffer.from(
    JSON.stringify({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: uid(),
        kind: gvk,
        resource: gvr,
        requestKind: gvk,
        requestResource: gvr,
        name: r.name,
        ...(r.namespace ? { namespace: r.namespace } : {}),
        operation: r.operation,
        userInfo: {
          username: r.user.username,
          uid: `u-${r.user.username}`,
          groups: [...r.user.groups, 'system:authenticated'],
          extra: { 'authentication.kubernetes.io/credential-id': ['JTI=7c3a1e2f-0000-4000-8000-000000000000'] },
        },
        object: r.object,
        oldObject: r.oldObject ?? null,
        dryRun: false,
        options: {
          apiVersion: 'meta.k8s.io/v1',
          kind: r.operation === 'CREATE' ? 'CreateOptions' : 'UpdateOptions',
          fieldManager: 'kubectl-client-side-apply',
          fieldValidation: 'Strict',
        },
      },
    }),
  );
}

/** P1: a new self-service namespace of project i (labels already set by the mutating webhook), by its owner. */
export function namespaceCreateBodies(count: number, projects: number): Buffer[] {
  const out: Buffer[] = [];
  for (let k = 0; k < count; k++) {
    const i = k % projects;
    const name = `${projectName(i)}-self${k}`;
    out.push(
      review({
        kind: 'Namespace',
        operation: 'CREATE',
        name,
        user: { username: ownerUser(i), groups: [ownerGroup(i)] },
        object: {
          apiVersion: 'v1',
          kind: 'Namespace',
          metadata: {
            name,
            creationTimestamp: '2026-01-01T00:00:00Z',
            labels: {
              'kubernetes.io/metadata.name': name,
              'tenantgate.io/project': projectName(i),
              'tenantgate.io/tenant': tenantName(i),
              team: 'payments',
            },
            annotations: {
              'tenantgate.io/project-uid': projectUid(i),
              'kubectl.kubernetes.io/last-applied-configuration': `{"apiVersion":"v1","kind":"Namespace","metadata":{"annotations":{},"labels":{"team":"payments"},"name":"${name}"}}\n`,
            },
            managedFields: managedFields('kubectl-client-side-apply', 'Update', {
              'f:metadata': {
                'f:annotations': { '.': {}, 'f:kubectl.kubernetes.io/last-applied-configuration': {} },
                'f:labels': { '.': {}, 'f:kubernetes.io/metadata.name': {}, 'f:team': {} },
              },
            }),
          },
          spec: { finalizers: ['kubernetes'] },
          status: { phase: 'Active' },
        },
      }),
    );
  }
  return out;
}

/** P1: the owner raises requests.cpu of a namespace's quota; pass v asks 5+v CPU so every request grows past what was admitted before. */
export function quotaUpdateBodies(projects: number, passes: number): Buffer[] {
  const out: Buffer[] = [];
  for (let v = 0; v < passes; v++) {
    for (let n = 0; n < NAMESPACES_PER_PROJECT; n++) {
      for (let i = 0; i < projects; i++) {
        const old = fixtureQuota(i, n);
        old.metadata.uid = `q-${i}-${n}`;
        old.metadata.resourceVersion = String(200000 + i * 10 + n);
        (old.metadata as Record<string, unknown>).managedFields = managedFields('argocd-controller', 'Apply', {
          'f:metadata': { 'f:labels': { 'f:tenantgate.io/project': {} } },
          'f:spec': { 'f:hard': { 'f:requests.cpu': {}, 'f:requests.memory': {}, 'f:limits.cpu': {}, 'f:pods': {} } },
        });
        old.status = {
          hard: { ...old.spec!.hard! },
          used: { 'requests.cpu': '1200m', 'requests.memory': '3Gi', 'limits.cpu': '2', pods: '7' },
        };
        const object = structuredClone(old);
        object.spec!.hard!['requests.cpu'] = String(5 + v);
        out.push(
          review({
            kind: 'ResourceQuota',
            operation: 'UPDATE',
            name: QUOTA_NAME,
            namespace: namespaceName(i, n),
            user: { username: ownerUser(i), groups: [ownerGroup(i)] },
            object,
            oldObject: old,
          }),
        );
      }
    }
  }
  return out;
}

/** Q5 growing: a first quota in namespace n of project i, by its owner (1 CPU of a 10,000 CPU budget). */
export function q5GrowingBody(i: number, n: number): Buffer {
  const namespace = q5NamespaceName(i, n);
  return review({
    kind: 'ResourceQuota',
    operation: 'CREATE',
    name: 'compute',
    namespace,
    user: { username: q5Owner(i), groups: [] },
    object: {
      apiVersion: 'v1',
      kind: 'ResourceQuota',
      metadata: { name: 'compute', namespace, labels: { 'tenantgate.io/project': q5ProjectName(i) } },
      spec: { hard: { 'requests.cpu': '1', pods: '10' } },
    },
  });
}

/** Q5 plain: the owner adds a label to one of its namespaces (project and tenant labels unchanged). */
export function q5PlainBody(i: number, n: number): Buffer {
  const name = q5NamespaceName(i, n);
  const labels = {
    'kubernetes.io/metadata.name': name,
    'tenantgate.io/project': q5ProjectName(i),
    'tenantgate.io/tenant': `q5t${i}`,
  };
  const old = {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name, uid: `q5-${i}-${n}`, labels },
    spec: { finalizers: ['kubernetes'] },
    status: { phase: 'Active' },
  };
  const object = structuredClone(old);
  (object.metadata.labels as Record<string, string>).team = 'x';
  return review({
    kind: 'Namespace',
    operation: 'UPDATE',
    name,
    user: { username: q5Owner(i), groups: [] },
    object,
    oldObject: old,
  });
}

// ---------------------------------------------------------------------------------------------
// Rule scenarios (timed in-process)
// ---------------------------------------------------------------------------------------------

/** The requests whose rule path P1's breakdown and bench/comparisons/rules-ab.ts time in-process, by scenario. */
export function ruleScenarios(
  projects: number,
): Array<{ scenario: 'Namespace CREATE' | 'ResourceQuota UPDATE'; bodies: Buffer[] }> {
  return [
    { scenario: 'Namespace CREATE', bodies: namespaceCreateBodies(20_000, projects) },
    { scenario: 'ResourceQuota UPDATE', bodies: quotaUpdateBodies(projects, 4) },
  ];
}
