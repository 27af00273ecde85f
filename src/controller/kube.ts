/**
 * The controller's I/O edge: every API call it makes, through client-node, with every write counted
 * in the metrics (the idle test reads them). Objects come back as plain JSON (what watches deliver),
 * not client-node's class instances with Date fields.
 */
import * as k8s from '@kubernetes/client-node';
import { API_GROUP, FINALIZER_CASCADE, type NamespaceObject, type Project, type ResourceQuotaObject } from '../validate/types.js';
import type { ControllerMetrics, WriteVerb } from './metrics.js';
import { isConflict, isNotFound, statusCode } from '../kube/errors.js';
import { ClusterLists, listInPages, plain, PROJECT_PLURAL, PROJECT_VERSION } from '../kube/lists.js';
import type { RoleBindingObject } from '../render/owner-binding.js';
import { OWNER_BINDING_SELECTOR } from './owner-bindings.js';


export interface LeaseRecord {
  metadata: { name: string; namespace: string; resourceVersion?: string };
  spec: { holderIdentity?: string; leaseDurationSeconds?: number; acquireTime?: string; renewTime?: string; leaseTransitions?: number };
}

export class ControllerApi extends ClusterLists {
  readonly coordination: k8s.CoordinationV1Api;
  readonly rbac: k8s.RbacAuthorizationV1Api;

  constructor(
    kubeConfig: k8s.KubeConfig,
    private readonly metrics: ControllerMetrics,
  ) {
    super(kubeConfig);
    this.coordination = kubeConfig.makeApiClient(k8s.CoordinationV1Api);
    this.rbac = kubeConfig.makeApiClient(k8s.RbacAuthorizationV1Api);
  }

  private async write<T>(verb: WriteVerb, resource: string, fn: () => Promise<T>): Promise<T> {
    this.metrics.countWrite(verb, resource);
    try {
      return await fn();
    } catch (err) {
      this.metrics.apiWriteErrors.inc({ verb, resource, code: String(statusCode(err) ?? 'transport') });
      throw err;
    }
  }

  // --- projects ------------------------------------------------------------------------------

  /** Adds the cascade finalizer; the resourceVersion in the merge patch makes it a compare-and-swap (409 when stale). */
  async addFinalizer(project: Project): Promise<Project> {
    const finalizers = [...(project.metadata.finalizers ?? []), FINALIZER_CASCADE];
    return this.write('patch', 'projects', async () =>
      (await this.custom.patchClusterCustomObject(
        {
          group: API_GROUP,
          version: PROJECT_VERSION,
          plural: PROJECT_PLURAL,
          name: project.metadata.name ?? '',
          body: { metadata: { finalizers, resourceVersion: project.metadata.resourceVersion } },
        },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      )) as Project,
    );
  }

  /**
   * Removes the cascade finalizer with a JSON patch that first tests the entry it removes (and the
   * resourceVersion it was read at), so a concurrent change makes it fail instead of removing the wrong one.
   */
  async removeFinalizer(project: Project): Promise<Project> {
    const index = (project.metadata.finalizers ?? []).indexOf(FINALIZER_CASCADE);
    if (index < 0) return project;
    const ops: unknown[] = [];
    if (project.metadata.resourceVersion) ops.push({ op: 'test', path: '/metadata/resourceVersion', value: project.metadata.resourceVersion });
    ops.push({ op: 'test', path: `/metadata/finalizers/${index}`, value: FINALIZER_CASCADE }, { op: 'remove', path: `/metadata/finalizers/${index}` });
    return this.write('patch', 'projects', async () =>
      (await this.custom.patchClusterCustomObject(
        { group: API_GROUP, version: PROJECT_VERSION, plural: PROJECT_PLURAL, name: project.metadata.name ?? '', body: ops },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch),
      )) as Project,
    );
  }


  /** PUT on the status subresource with the object's resourceVersion (409 when stale). */
  async replaceStatus(project: Project, status: Project['status']): Promise<Project> {
    const body = { ...project, status };
    return this.write('update', 'projects/status', async () =>
      (await this.custom.replaceClusterCustomObjectStatus({ group: API_GROUP, version: PROJECT_VERSION, plural: PROJECT_PLURAL, name: project.metadata.name ?? '', body })) as Project,
    );
  }

  // --- namespaces and quotas -----------------------------------------------------------------

  /** A live (uncached) list of the namespaces labelled for a project: the cascade decides on it. */
  async namespacesLabelled(labelSelector: string): Promise<NamespaceObject[]> {
    return (await this.listNamespaces(labelSelector)).items as unknown as NamespaceObject[];
  }

  /** Deletes a namespace in the background, only if it is still the object with this uid. Gone already counts as done. */
  async deleteNamespace(name: string, uid: string | undefined): Promise<'deleted' | 'gone' | 'conflict'> {
    try {
      await this.write('delete', 'namespaces', () =>
        this.core.deleteNamespace({ name, body: { propagationPolicy: 'Background', ...(uid ? { preconditions: { uid } } : {}) } }),
      );
      return 'deleted';
    } catch (err) {
      if (isNotFound(err)) return 'gone';
      if (isConflict(err)) return 'conflict';
      throw err;
    }
  }

  async createQuota(quota: ResourceQuotaObject): Promise<ResourceQuotaObject | 'exists'> {
    try {
      return plain(await this.write('create', 'resourcequotas', () => this.core.createNamespacedResourceQuota({ namespace: quota.metadata.namespace ?? '', body: quota as k8s.V1ResourceQuota })));
    } catch (err) {
      if (isConflict(err)) return 'exists';
      throw err;
    }
  }

  // --- the owners' RoleBindings ---------------------------------------------------------------

  /** Every RoleBinding tenantgate manages (the owner-binding cache's list). */
  async listOwnerBindings(): Promise<k8s.KubernetesListObject<k8s.KubernetesObject>> {
    return listInPages('rbac.authorization.k8s.io/v1', 'RoleBindingList', (page) => this.rbac.listRoleBindingForAllNamespaces({ ...page, labelSelector: OWNER_BINDING_SELECTOR }));
  }

  /**
   * Creates the binding, or replaces the one that is there under that name (it may have lost its
   * labels, and with them its place in the cache): one write when the cache was right.
   */
  async putOwnerBinding(binding: RoleBindingObject, cachedResourceVersion: string | undefined): Promise<RoleBindingObject> {
    const { namespace, name } = binding.metadata;
    const replace = async (resourceVersion: string | undefined): Promise<RoleBindingObject> =>
      plain(await this.write('update', 'rolebindings', () => this.rbac.replaceNamespacedRoleBinding({ namespace, name, body: { ...binding, metadata: { ...binding.metadata, ...(resourceVersion ? { resourceVersion } : {}) } } as k8s.V1RoleBinding })));
    if (cachedResourceVersion) return replace(cachedResourceVersion);
    try {
      return plain(await this.write('create', 'rolebindings', () => this.rbac.createNamespacedRoleBinding({ namespace, body: binding as k8s.V1RoleBinding })));
    } catch (err) {
      if (!isConflict(err)) throw err;
      const existing = await this.rbac.readNamespacedRoleBinding({ namespace, name });
      return replace(existing.metadata?.resourceVersion);
    }
  }

  /** The headroom ledger of a Project that is gone (the webhook writes it; nobody else reads it). */
  async deleteLedger(namespace: string, name: string): Promise<void> {
    try {
      await this.write('delete', 'configmaps', () => this.core.deleteNamespacedConfigMap({ namespace, name }));
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  // --- leases (leader election) ---------------------------------------------------------------

  async getLease(namespace: string, name: string): Promise<LeaseRecord | undefined> {
    try {
      return plain(await this.coordination.readNamespacedLease({ namespace, name }));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async createLease(lease: LeaseRecord): Promise<LeaseRecord> {
    return plain(await this.write('create', 'leases', () => this.coordination.createNamespacedLease({ namespace: lease.metadata.namespace, body: toV1Lease(lease) })));
  }

  async replaceLease(lease: LeaseRecord): Promise<LeaseRecord> {
    return plain(await this.write('update', 'leases', () => this.coordination.replaceNamespacedLease({ namespace: lease.metadata.namespace, name: lease.metadata.name, body: toV1Lease(lease) })));
  }
}

/** MicroTime must go out with six fractional digits; client-node's V1MicroTime prints them. */
function toV1Lease(lease: LeaseRecord): k8s.V1Lease {
  const micro = (t: string | undefined) => (t ? new k8s.V1MicroTime(t) : undefined);
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: lease.metadata,
    spec: {
      ...(lease.spec.holderIdentity !== undefined ? { holderIdentity: lease.spec.holderIdentity } : {}),
      ...(lease.spec.leaseDurationSeconds !== undefined ? { leaseDurationSeconds: lease.spec.leaseDurationSeconds } : {}),
      ...(lease.spec.leaseTransitions !== undefined ? { leaseTransitions: lease.spec.leaseTransitions } : {}),
      ...(lease.spec.acquireTime ? { acquireTime: micro(lease.spec.acquireTime) } : {}),
      ...(lease.spec.renewTime ? { renewTime: micro(lease.spec.renewTime) } : {}),
    },
  };
}
