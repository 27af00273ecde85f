/**
 * AdmissionReview admission.k8s.io/v1 in and out. Pure: decoding, dispatch to
 * the rule engine and the mutators, and building the response.
 */
import { mutateNamespace, mutateProject, mutateQuota, type Incoming, type PatchOperation } from '../mutate/mutate.js';
import {
  reviewNamespace,
  reviewProject,
  reviewResourceQuota,
  reviewSubresource,
  type Operation,
  type ReviewContext,
  type Verdict,
} from '../validate/admission.js';
import { allowListKindOf, reviewAllowLists, type AllowListKind } from '../validate/allow-admission.js';
import {
  protectedKindOf,
  reviewProtectedObject,
  type NamespacedObject,
  type ProtectedKind,
} from '../validate/protected-objects.js';
import { checkVolumeClaimRef, type NamespaceProject } from '../validate/rules/volume-binding.js';
import { LABEL_PROJECT, type NamespaceObject, type Project, type ResourceQuotaObject } from '../validate/types.js';

interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

export interface AdmissionRequest {
  uid: string;
  kind: GroupVersionKind;
  resource?: { group: string; version: string; resource: string };
  subResource?: string;
  name?: string;
  namespace?: string;
  operation: Operation;
  userInfo: { username?: string; uid?: string; groups?: string[] };
  object?: Record<string, unknown> | null;
  oldObject?: Record<string, unknown> | null;
  dryRun?: boolean;
}

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: { code: number; message: string; reason?: string };
  warnings?: string[];
  patch?: string;
  patchType?: 'JSONPatch';
}

export interface AdmissionReviewOut {
  apiVersion: 'admission.k8s.io/v1';
  kind: 'AdmissionReview';
  response: AdmissionResponse;
}

export type Decoded = { ok: true; request: AdmissionRequest } | { ok: false; error: string };

const OPERATIONS = new Set(['CREATE', 'UPDATE', 'DELETE', 'CONNECT']);

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Checks the envelope; anything malformed is a 400, never an admission. */
export function decodeReview(body: unknown): Decoded {
  if (!isObject(body)) return { ok: false, error: 'body must be a JSON object (an AdmissionReview)' };
  if (body.apiVersion !== 'admission.k8s.io/v1')
    return {
      ok: false,
      error: `apiVersion is ${JSON.stringify(body.apiVersion ?? null)}; allowed: "admission.k8s.io/v1"`,
    };
  if (body.kind !== 'AdmissionReview')
    return { ok: false, error: `kind is ${JSON.stringify(body.kind ?? null)}; allowed: "AdmissionReview"` };
  const r = body.request;
  if (!isObject(r)) return { ok: false, error: 'request is missing or not an object' };
  if (typeof r.uid !== 'string' || r.uid === '') return { ok: false, error: 'request.uid must be a non-empty string' };
  if (
    !isObject(r.kind) ||
    typeof r.kind.kind !== 'string' ||
    typeof r.kind.version !== 'string' ||
    typeof r.kind.group !== 'string'
  ) {
    return { ok: false, error: 'request.kind must be {group, version, kind} strings' };
  }
  if (typeof r.operation !== 'string' || !OPERATIONS.has(r.operation))
    return {
      ok: false,
      error: `request.operation is ${JSON.stringify(r.operation ?? null)}; allowed: CREATE, UPDATE, DELETE, CONNECT`,
    };
  if (!isObject(r.userInfo)) return { ok: false, error: 'request.userInfo must be an object' };
  const groups = r.userInfo.groups;
  if (groups !== undefined && !(Array.isArray(groups) && groups.every((g) => typeof g === 'string')))
    return { ok: false, error: 'request.userInfo.groups must be a list of strings' };
  if (r.userInfo.username !== undefined && typeof r.userInfo.username !== 'string')
    return { ok: false, error: 'request.userInfo.username must be a string' };
  for (const field of ['object', 'oldObject'] as const) {
    const value = r[field];
    if (value !== undefined && value !== null && !isObject(value))
      return { ok: false, error: `request.${field} must be an object or null` };
    if (isObject(value) && value.metadata !== undefined && !isObject(value.metadata))
      return { ok: false, error: `request.${field}.metadata must be an object` };
  }
  if (r.dryRun !== undefined && typeof r.dryRun !== 'boolean')
    return { ok: false, error: 'request.dryRun must be a boolean' };
  if (r.namespace !== undefined && typeof r.namespace !== 'string')
    return { ok: false, error: 'request.namespace must be a string' };
  if ((r.operation === 'CREATE' || r.operation === 'UPDATE') && !isObject(r.object))
    return { ok: false, error: `request.object is required for ${r.operation}` };
  return { ok: true, request: r as unknown as AdmissionRequest };
}

type Handled = 'Namespace' | 'ResourceQuota' | 'Project' | 'PersistentVolume' | ProtectedKind | AllowListKind;

export function handledKind(request: AdmissionRequest): Handled | undefined {
  const { group, kind } = request.kind;
  if (request.subResource) return undefined;
  if (group === '' && (kind === 'Namespace' || kind === 'ResourceQuota' || kind === 'PersistentVolume')) return kind;
  if (group === 'tenantgate.io' && kind === 'Project') return 'Project';
  return protectedKindOf(group, kind) ?? allowListKindOf(group, kind);
}

function withMetadata<T>(obj: Record<string, unknown> | null | undefined): T | undefined {
  if (!obj) return undefined;
  return (isObject(obj.metadata) ? obj : { ...obj, metadata: {} }) as T;
}

/** The status or finalize subresource of a Namespace or ResourceQuota (T8), when the request writes one. */
function judgedSubresource(
  request: AdmissionRequest,
): { kind: 'Namespace' | 'ResourceQuota'; subresource: 'status' | 'finalize' } | undefined {
  const { group, kind } = request.kind;
  const sub = request.subResource;
  if (group !== '' || (sub !== 'status' && sub !== 'finalize')) return undefined;
  if (kind === 'Namespace') return { kind, subresource: sub };
  if (kind === 'ResourceQuota' && sub === 'status') return { kind, subresource: sub };
  return undefined;
}

/** X10 on a PersistentVolume's claimRef: the project of a claim's namespace, from the webhook's namespace cache. */
function namespaceProject(ctx: ReviewContext, namespace: string): NamespaceProject {
  const ns = ctx.snapshot.namespace(namespace);
  return ns ? { known: true, project: ns.metadata.labels?.[LABEL_PROJECT] } : { known: false };
}

export function verdictFor(ctx: ReviewContext, request: AdmissionRequest): Verdict {
  const object = request.object;
  const old = request.oldObject;
  if (request.subResource === 'ephemeralcontainers' && request.kind.group === '' && request.kind.kind === 'Pod') {
    // kubectl debug: the containers it adds are judged as the pod's (X9 registries), only what they add.
    return reviewAllowLists(
      ctx,
      request.operation,
      'Pod',
      request.namespace ?? '',
      object ?? undefined,
      old ?? undefined,
    );
  }
  if (request.subResource) {
    const judged = judgedSubresource(request);
    if (!judged || request.operation === 'CONNECT') return { violations: [], warnings: [] };
    const name = request.name || String((object?.metadata as { name?: string } | undefined)?.name ?? '');
    return reviewSubresource(ctx, judged.kind, judged.subresource, request.namespace, name);
  }
  const handled = handledKind(request);
  switch (handled) {
    case 'Namespace':
      return reviewNamespace(
        ctx,
        request.operation,
        withMetadata<NamespaceObject>(object),
        withMetadata<NamespaceObject>(old),
      );
    case 'ResourceQuota':
      return reviewResourceQuota(
        ctx,
        request.operation,
        request.namespace ?? '',
        withMetadata<ResourceQuotaObject>(object),
        withMetadata<ResourceQuotaObject>(old),
      );
    case 'Project':
      return reviewProject(ctx, request.operation, withMetadata<Project>(object), withMetadata<Project>(old));
    case 'LimitRange':
    case 'NetworkPolicy':
    case 'RoleBinding':
      return reviewProtectedObject(
        ctx,
        request.operation,
        request.kind.kind as ProtectedKind,
        request.namespace ?? '',
        withMetadata<NamespacedObject>(object),
        withMetadata<NamespacedObject>(old),
      );
    case 'PersistentVolume': {
      const violations = checkVolumeClaimRef(request.operation, object ?? undefined, old ?? undefined, (ns) =>
        namespaceProject(ctx, ns),
      );
      return { violations, warnings: [] };
    }
    case undefined:
      return { violations: [], warnings: [] };
    default:
      return reviewAllowLists(
        ctx,
        request.operation,
        handled,
        request.namespace ?? '',
        object ?? undefined,
        old ?? undefined,
      );
  }
}

export function responseFor(uid: string, verdict: Verdict): AdmissionResponse {
  if (verdict.violations.length === 0) {
    return { uid, allowed: true, ...(verdict.warnings.length ? { warnings: verdict.warnings } : {}) };
  }
  return {
    uid,
    allowed: false,
    status: {
      code: 403,
      reason: 'Forbidden',
      message: verdict.violations.map((v) => `[${v.rule}] ${v.message}`).join('\n'),
    },
  };
}

export function denied(uid: string, code: number, message: string): AdmissionResponse {
  return { uid, allowed: false, status: { code, message } };
}

export function mutationFor(ctx: ReviewContext, request: AdmissionRequest): AdmissionResponse {
  const object = request.object;
  const uid = request.uid;
  if (!object || request.operation === 'DELETE') return { uid, allowed: true };
  let patch: PatchOperation[];
  switch (handledKind(request)) {
    case 'Namespace':
      patch = mutateNamespace(ctx, request.operation, object as unknown as Incoming<NamespaceObject>);
      break;
    case 'Project':
      patch = mutateProject(ctx, request.operation, object as unknown as Incoming<Project>);
      break;
    case 'ResourceQuota':
      patch = mutateQuota(
        ctx,
        request.operation,
        request.namespace ?? '',
        object as unknown as Incoming<ResourceQuotaObject>,
      );
      break;
    default:
      return { uid, allowed: true };
  }
  if (patch.length === 0) return { uid, allowed: true };
  return { uid, allowed: true, patchType: 'JSONPatch', patch: Buffer.from(JSON.stringify(patch)).toString('base64') };
}

export function envelope(response: AdmissionResponse): AdmissionReviewOut {
  return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response };
}
