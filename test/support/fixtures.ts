/** Builders of the objects tests reason about (one place; each test file keeps only its own defaults). */
import { processNow } from '../../src/clock.js';
import { DEFAULT_CONFIG, type TenantgateConfig } from '../../src/config/config.js';
import type { ReviewContext } from '../../src/validate/admission.js';
import type { UserInfo } from '../../src/validate/rules/tenancy.js';
import type { MemorySnapshot } from '../../src/validate/snapshot.js';
import type { AdmissionRequest } from '../../src/webhook/review.js';
import {
  ANNOTATION_PROJECT_UID,
  LABEL_PROJECT,
  LABEL_TENANT,
  type NamespaceObject,
  type Project,
  type ProjectSpec,
  type ResourceList,
  type ResourceQuotaObject,
} from '../../src/validate/types.js';

/** A Project: tenant acme unless the spec says otherwise; no uid unless given in `metadata`. */
export function aProject(
  name: string,
  spec: Partial<ProjectSpec> = {},
  metadata: Partial<Project['metadata']> = {},
): Project {
  return {
    apiVersion: 'tenantgate.io/v1alpha1',
    kind: 'Project',
    metadata: { name, ...metadata },
    spec: { tenant: 'acme', ...spec },
  };
}

/**
 * The e2e tests' Project of tenant acme owned by the group acme:web-admins, with room for exactly two
 * self-service namespaces (each gets 2 of its 4 CPUs): a third is refused with [Q1].
 */
export function twoNamespaceProject(name: string): Project {
  return aProject(name, {
    owners: [{ kind: 'Group', name: 'acme:web-admins' }],
    quota: { hard: { 'requests.cpu': '4', pods: '20' } },
    namespaceDefaults: { quota: { hard: { 'requests.cpu': '2', pods: '5' } } },
  });
}

export interface NamespaceOptions {
  /** The project label ('' or undefined: none). */
  project?: string;
  tenant?: string;
  /** The project-uid annotation. */
  uid?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  terminating?: boolean;
  conditions?: NonNullable<NamespaceObject['status']>['conditions'];
}

/** A Namespace, labelled for `project` (and `tenant`, default acme) when one is given. */
export function aNamespace(name: string, o: NamespaceOptions = {}): NamespaceObject {
  const labels: Record<string, string> = { ...o.labels };
  if (o.project) labels[LABEL_PROJECT] = o.project;
  if (o.project && o.tenant !== '') labels[LABEL_TENANT] = o.tenant ?? 'acme';
  const annotations: Record<string, string> = { ...o.annotations };
  if (o.uid) annotations[ANNOTATION_PROJECT_UID] = o.uid;
  return {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: {
      name,
      labels,
      ...(Object.keys(annotations).length ? { annotations } : {}),
      ...(o.terminating ? { deletionTimestamp: '2025-01-01T00:00:00Z' } : {}),
    },
    ...(o.terminating || o.conditions
      ? {
          status: {
            phase: o.terminating ? 'Terminating' : 'Active',
            ...(o.conditions ? { conditions: o.conditions } : {}),
          },
        }
      : {}),
  };
}

export interface QuotaOptions {
  name?: string;
  used?: ResourceList;
  scopes?: string[];
  spec?: Partial<NonNullable<ResourceQuotaObject['spec']>>;
}

/** A ResourceQuota (default name tenantgate-quota); `used` adds a status as the quota controller reports it. */
export function aQuota(namespace: string, hard: ResourceList, o: QuotaOptions = {}): ResourceQuotaObject {
  return {
    apiVersion: 'v1',
    kind: 'ResourceQuota',
    metadata: { name: o.name ?? 'tenantgate-quota', namespace },
    spec: { hard, ...(o.scopes ? { scopes: o.scopes } : {}), ...o.spec },
    ...(o.used ? { status: { hard, used: o.used } } : {}),
  };
}

/** `request.userInfo` of an AdmissionReview. */
export const aUser = (username: string, groups: string[] = []): UserInfo => ({ username, groups });

/** What the webhook hands the rules. */
export function reviewContext(
  user: UserInfo,
  snapshot: MemorySnapshot,
  config: TenantgateConfig = DEFAULT_CONFIG,
): ReviewContext {
  return { at: processNow(), config, snapshot, user };
}

/** An AdmissionReview request: `user` creates ResourceQuota `name` in `namespace` asking `requests.cpu`. */
export function aQuotaCreateRequest(
  namespace: string,
  o: { cpu?: string; dryRun?: boolean; name?: string; user?: string } = {},
): AdmissionRequest {
  const name = o.name ?? 'q';
  const username = o.user ?? 'alice';
  return {
    uid: namespace,
    kind: { group: '', version: 'v1', kind: 'ResourceQuota' },
    operation: 'CREATE',
    namespace,
    name,
    userInfo: { username, groups: [] },
    object: { metadata: { name, namespace }, spec: { hard: { 'requests.cpu': o.cpu ?? '1' } } },
    ...(o.dryRun ? { dryRun: true } : {}),
  };
}

/** An AdmissionReview request: `user` (alice) creates Namespace `name` labelled for `project` of tenant acme, as the mutating webhook leaves it. */
export function aNamespaceCreateRequest(
  name: string,
  project: string,
  user: UserInfo = aUser('alice'),
): AdmissionRequest {
  return {
    uid: name,
    kind: { group: '', version: 'v1', kind: 'Namespace' },
    operation: 'CREATE',
    name,
    userInfo: user,
    object: { metadata: { name, labels: { [LABEL_PROJECT]: project, [LABEL_TENANT]: 'acme' } } },
  };
}
