/**
 * The controller's I/O edge: every API call it makes, through client-node, with every write counted
 * in the metrics (the idle test reads them). Objects come back as plain JSON (what watches deliver),
 * not client-node's class instances with Date fields.
 */
import * as k8s from '@kubernetes/client-node';
import {
  API_GROUP,
  API_VERSION,
  FINALIZER_CASCADE,
  type NamespaceObject,
  type Project,
  type ResourceQuotaObject,
} from '../validate/types.js';
import type { ControllerMetrics, WriteVerb } from './metrics.js';
import { isConflict, isNotFound, statusCode } from '../kube/errors.js';
import { ClusterLists, listInPages, plain, PROJECT_PLURAL, PROJECT_VERSION } from '../kube/lists.js';
import { MANAGED_SELECTOR, type CachedObject, type ManagedKind } from './managed-objects.js';
import { ALLOW_LIST_PLURAL, FINALIZER_ALLOW_LIST } from '../validate/allow-list-params.js';
import type { AccessKind, AccessObject } from './project-access.js';

export interface LeaseRecord {
  metadata: { name: string; namespace: string; resourceVersion?: string };
  spec: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
}

/** Where Events about cluster-scoped Projects go (as client-go's recorder does). */
const EVENTS_NAMESPACE = 'default';

export interface ProjectEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

export class ControllerApi extends ClusterLists {
  /** This replica, as Events name it. */
  identity = 'tenantgate-controller';
  readonly coordination: k8s.CoordinationV1Api;
  readonly rbac: k8s.RbacAuthorizationV1Api;
  readonly networking: k8s.NetworkingV1Api;
  readonly apiextensions: k8s.ApiextensionsV1Api;

  constructor(
    kubeConfig: k8s.KubeConfig,
    private readonly metrics: ControllerMetrics,
  ) {
    super(kubeConfig);
    this.coordination = kubeConfig.makeApiClient(k8s.CoordinationV1Api);
    this.rbac = kubeConfig.makeApiClient(k8s.RbacAuthorizationV1Api);
    this.networking = kubeConfig.makeApiClient(k8s.NetworkingV1Api);
    this.apiextensions = kubeConfig.makeApiClient(k8s.ApiextensionsV1Api);
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

  /**
   * Adds the cascade finalizer; the resourceVersion in the merge patch makes it a compare-and-swap (409 when stale).
   */
  async addFinalizer(project: Project): Promise<Project> {
    const finalizers = [...(project.metadata.finalizers ?? []), FINALIZER_CASCADE];
    const body = { metadata: { finalizers, resourceVersion: project.metadata.resourceVersion } };
    return this.patchProject(project, body, k8s.PatchStrategy.MergePatch);
  }

  /**
   * Removes the cascade finalizer with a JSON patch that first tests the entry it removes (and the
   * resourceVersion it was read at), so a concurrent change makes it fail instead of removing the wrong one.
   */
  async removeFinalizer(project: Project): Promise<Project> {
    const ops = finalizerRemoval(project.metadata, FINALIZER_CASCADE);
    if (!ops) return project;
    return this.patchProject(project, ops, k8s.PatchStrategy.JsonPatch);
  }

  /** A merge patch or a JSON patch of a Project (counted as a patch of projects). */
  private async patchProject(project: Project, body: object, strategy: k8s.PatchStrategy): Promise<Project> {
    return this.write(
      'patch',
      'projects',
      async () =>
        (await this.custom.patchClusterCustomObject(
          {
            group: API_GROUP,
            version: PROJECT_VERSION,
            plural: PROJECT_PLURAL,
            name: project.metadata.name ?? '',
            body,
          },
          k8s.setHeaderOptions('Content-Type', strategy),
        )) as Project,
    );
  }

  /** PUT on the status subresource with the object's resourceVersion (409 when stale). */
  async replaceStatus(project: Project, status: Project['status']): Promise<Project> {
    const body = { ...project, status };
    return this.write(
      'update',
      'projects/status',
      async () =>
        (await this.custom.replaceClusterCustomObjectStatus({
          group: API_GROUP,
          version: PROJECT_VERSION,
          plural: PROJECT_PLURAL,
          name: project.metadata.name ?? '',
          body,
        })) as Project,
    );
  }

  // --- namespaces and quotas -----------------------------------------------------------------

  /** A live (uncached) list of the namespaces labelled for a project: the cascade decides on it. */
  async namespacesLabelled(labelSelector: string): Promise<NamespaceObject[]> {
    return (await this.listNamespaces(labelSelector)).items as unknown as NamespaceObject[];
  }

  /**
   * Deletes a namespace in the background, only if it is still the object with this uid. Gone already counts as done.
   */
  async deleteNamespace(name: string, uid: string | undefined): Promise<'deleted' | 'gone' | 'conflict'> {
    try {
      await this.write('delete', 'namespaces', () =>
        this.core.deleteNamespace({
          name,
          body: { propagationPolicy: 'Background', ...(uid ? { preconditions: { uid } } : {}) },
        }),
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
      return plain(
        await this.write('create', 'resourcequotas', () =>
          this.core.createNamespacedResourceQuota({
            namespace: quota.metadata.namespace ?? '',
            body: quota as k8s.V1ResourceQuota,
          }),
        ),
      );
    } catch (err) {
      if (isConflict(err)) return 'exists';
      throw err;
    }
  }

  /**
   * Replaces a quota (a burst's raise or lower, src/controller/burst-quotas.ts) under the field manager
   * `fieldManager`, conditional on the cached resourceVersion (409 when stale: the next pass decides again).
   */
  async replaceQuota(quota: ResourceQuotaObject, fieldManager: string): Promise<ResourceQuotaObject> {
    return plain(
      await this.write('update', 'resourcequotas', () =>
        this.core.replaceNamespacedResourceQuota({
          name: quota.metadata.name ?? '',
          namespace: quota.metadata.namespace ?? '',
          body: quota as k8s.V1ResourceQuota,
          fieldManager,
        }),
      ),
    );
  }

  /**
   * A namespace's metadata changed by a merge patch at the resourceVersion read (409 when it changed
   * meanwhile): the release of an orphaned Project's namespace (ADR 0096).
   */
  async patchNamespaceMetadata(name: string, patch: { metadata: Record<string, unknown> }): Promise<NamespaceObject> {
    return plain(
      await this.write('patch', 'namespaces', () =>
        this.core.patchNamespace(
          { name, body: patch },
          k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
        ),
      ),
    ) as NamespaceObject;
  }

  // --- the deletion breaker (ADR 0096) --------------------------------------------------------

  /** A ConfigMap's data and resourceVersion; undefined when there is none. */
  async readConfigMap(
    namespace: string,
    name: string,
  ): Promise<{ data: Record<string, string>; resourceVersion?: string } | undefined> {
    try {
      const cm = await this.core.readNamespacedConfigMap({ namespace, name });
      return {
        data: cm.data ?? {},
        ...(cm.metadata?.resourceVersion ? { resourceVersion: cm.metadata.resourceVersion } : {}),
      };
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /**
   * Writes a ConfigMap's data as a compare-and-swap: a create when `resourceVersion` is undefined (409
   * when one exists), else a replace at that resourceVersion (409 when it changed meanwhile).
   */
  async writeConfigMap(
    namespace: string,
    name: string,
    data: Record<string, string>,
    resourceVersion: string | undefined,
  ): Promise<void> {
    const body = {
      metadata: {
        name,
        namespace,
        labels: { 'app.kubernetes.io/name': 'tenantgate' },
        ...(resourceVersion ? { resourceVersion } : {}),
      },
      data,
    };
    if (resourceVersion === undefined)
      await this.write('create', 'configmaps', () => this.core.createNamespacedConfigMap({ namespace, body }));
    else
      await this.write('update', 'configmaps', () => this.core.replaceNamespacedConfigMap({ namespace, name, body }));
  }

  /** The deletionTimestamp of a CustomResourceDefinition (undefined: not being deleted, or not there). */
  async crdDeletionTimestamp(name: string): Promise<string | undefined> {
    try {
      const crd = plain<{ metadata?: { deletionTimestamp?: string } }>(
        await this.apiextensions.readCustomResourceDefinition({ name }),
      );
      return crd.metadata?.deletionTimestamp ?? undefined;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  // --- events -------------------------------------------------------------------------------

  /**
   * A core/v1 Event about a Project (cluster-scoped objects' events live in `default`), so
   * `kubectl describe project` tells what the controller did.
   */
  async recordEvent(project: Project, event: ProjectEvent): Promise<void> {
    // When the Event happened, as the API server's other Events say it: the system clock.
    const now = new Date();
    await this.write('create', 'events', () =>
      this.core.createNamespacedEvent({
        namespace: EVENTS_NAMESPACE,
        body: {
          metadata: { generateName: `${project.metadata.name ?? 'project'}.`, namespace: EVENTS_NAMESPACE },
          involvedObject: {
            apiVersion: `${API_GROUP}/${PROJECT_VERSION}`,
            kind: 'Project',
            name: project.metadata.name ?? '',
            ...(project.metadata.uid ? { uid: project.metadata.uid } : {}),
          },
          type: event.type,
          reason: event.reason,
          message: event.message,
          source: { component: 'tenantgate-controller' },
          reportingComponent: 'tenantgate.io/controller',
          reportingInstance: this.identity,
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
        },
      }),
    );
  }

  /**
   * Takes the AllowList's finalizer off (src/controller/allow-list-finalizer.ts) with a JSON patch that first
   * tests the resourceVersion read and the entry it removes: a concurrent change makes it fail (409/422).
   */
  async releaseAllowList(allowList: CachedObject): Promise<void> {
    const ops = finalizerRemoval(allowList.metadata, FINALIZER_ALLOW_LIST);
    if (!ops) return;
    await this.write('patch', ALLOW_LIST_PLURAL, () =>
      this.custom.patchNamespacedCustomObject(
        {
          group: API_GROUP,
          version: PROJECT_VERSION,
          plural: ALLOW_LIST_PLURAL,
          namespace: allowList.metadata.namespace ?? '',
          name: allowList.metadata.name ?? '',
          body: ops,
        },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch),
      ),
    );
  }

  // --- what tenantgate puts in every project namespace (owners' RoleBinding, LimitRange, NetworkPolicy, AllowList)

  /** The client-node calls for one managed kind (all namespaced, all by name). */
  private managedCalls(kind: ManagedKind): ManagedCalls {
    type Body = never;
    switch (kind) {
      case 'RoleBinding':
        return {
          resource: 'rolebindings',
          list: (page: { limit: number; _continue?: string }) =>
            this.rbac.listRoleBindingForAllNamespaces({ ...page, labelSelector: MANAGED_SELECTOR }),
          create: (namespace: string, body: object) =>
            this.rbac.createNamespacedRoleBinding({ namespace, body: body as Body }),
          replace: (namespace: string, name: string, body: object) =>
            this.rbac.replaceNamespacedRoleBinding({ namespace, name, body: body as Body }),
          read: (namespace: string, name: string) => this.rbac.readNamespacedRoleBinding({ namespace, name }),
          remove: (namespace: string, name: string, body: k8s.V1DeleteOptions) =>
            this.rbac.deleteNamespacedRoleBinding({ namespace, name, body }),
        };
      case 'LimitRange':
        return {
          resource: 'limitranges',
          list: async (page: { limit: number; _continue?: string }) => {
            const list = await this.core.listLimitRangeForAllNamespaces({ ...page, labelSelector: MANAGED_SELECTOR });
            return { ...list, items: list.items.map((i) => onTheWire(i)) };
          },
          create: async (namespace: string, body: object) =>
            onTheWire(await this.core.createNamespacedLimitRange({ namespace, body: forClient(body) })),
          replace: async (namespace: string, name: string, body: object) =>
            onTheWire(await this.core.replaceNamespacedLimitRange({ namespace, name, body: forClient(body) })),
          read: async (namespace: string, name: string) =>
            onTheWire(await this.core.readNamespacedLimitRange({ namespace, name })),
          remove: (namespace: string, name: string, body: k8s.V1DeleteOptions) =>
            this.core.deleteNamespacedLimitRange({ namespace, name, body }),
        };
      case 'NetworkPolicy':
        return {
          resource: 'networkpolicies',
          list: async (page: { limit: number; _continue?: string }) => {
            const list = await this.networking.listNetworkPolicyForAllNamespaces({
              ...page,
              labelSelector: MANAGED_SELECTOR,
            });
            return { ...list, items: list.items.map((i) => onTheWire(i)) };
          },
          create: async (namespace: string, body: object) =>
            onTheWire(await this.networking.createNamespacedNetworkPolicy({ namespace, body: forClient(body) })),
          replace: async (namespace: string, name: string, body: object) =>
            onTheWire(await this.networking.replaceNamespacedNetworkPolicy({ namespace, name, body: forClient(body) })),
          read: async (namespace: string, name: string) =>
            onTheWire(await this.networking.readNamespacedNetworkPolicy({ namespace, name })),
          remove: (namespace: string, name: string, body: k8s.V1DeleteOptions) =>
            this.networking.deleteNamespacedNetworkPolicy({ namespace, name, body }),
        };
      case 'AllowList': {
        const at = { group: API_GROUP, version: PROJECT_VERSION, plural: ALLOW_LIST_PLURAL };
        return {
          resource: ALLOW_LIST_PLURAL,
          list: (page: { limit: number; _continue?: string }) =>
            this.custom.listCustomObjectForAllNamespaces({
              group: at.group,
              version: at.version,
              resourcePlural: at.plural,
              ...page,
              labelSelector: MANAGED_SELECTOR,
            }),
          // Without managedFields: the API server converts the parameters on every request a policy judges,
          // and managedFields would double what it converts (docs/allow-lists.md, "What it costs").
          create: async (namespace: string, body: object) => {
            const created = (await this.custom.createNamespacedCustomObject({
              ...at,
              namespace,
              body,
            })) as CachedObject;
            const name = created.metadata.name ?? '';
            try {
              return await this.custom.replaceNamespacedCustomObject({
                ...at,
                namespace,
                name,
                body: unmanaged(created),
              });
            } catch {
              return created; // what it says is right; it only stays heavier until its next write
            }
          },
          replace: (namespace: string, name: string, body: object) =>
            this.custom.replaceNamespacedCustomObject({ ...at, namespace, name, body: unmanaged(body) }),
          read: (namespace: string, name: string) => this.custom.getNamespacedCustomObject({ ...at, namespace, name }),
          remove: (namespace: string, name: string, body: k8s.V1DeleteOptions) =>
            this.custom.deleteNamespacedCustomObject({ ...at, namespace, name, body }),
        };
      }
    }
  }

  /** Every object of the kind tenantgate manages (the managed-object cache's list). */
  async listManaged(kind: ManagedKind): Promise<k8s.KubernetesListObject<k8s.KubernetesObject>> {
    const calls = this.managedCalls(kind);
    const groups: Record<ManagedKind, string> = {
      RoleBinding: 'rbac.authorization.k8s.io/v1',
      NetworkPolicy: 'networking.k8s.io/v1',
      LimitRange: 'v1',
      AllowList: API_VERSION,
    };
    const group = groups[kind];
    return listInPages(group, `${kind}List`, (page) => calls.list(page) as never);
  }

  /**
   * Creates the object, or replaces the one that is there under that name (it may have lost its
   * labels, and with them its place in the cache): one write when the cache was right. A replace keeps
   * the stored object's other labels and annotations (Argo CD's tracking, for instance) and sets ours.
   */
  private async put(
    calls: ObjectCalls,
    desired: { metadata: DesiredMetadata },
    cached: CachedObject | undefined,
  ): Promise<CachedObject> {
    const replace = async (stored: CachedObject['metadata']): Promise<CachedObject> => {
      const annotations = { ...stored.annotations, ...desired.metadata.annotations };
      const metadata = {
        ...desired.metadata,
        labels: { ...stored.labels, ...desired.metadata.labels },
        ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
        ...(stored.resourceVersion ? { resourceVersion: stored.resourceVersion } : {}),
      };
      return plain(await this.write('update', calls.resource, () => calls.replace({ ...desired, metadata })));
    };
    if (cached) return replace(cached.metadata);
    try {
      return plain(await this.write('create', calls.resource, () => calls.create(desired)));
    } catch (err) {
      if (!isConflict(err)) throw err;
      const existing = plain(await calls.read()) as CachedObject;
      return replace(existing.metadata);
    }
  }

  /** A managed object in a project namespace (put). */
  async putManaged<T extends { kind: ManagedKind; metadata: DesiredMetadata & { namespace: string } }>(
    desired: T,
    cached: CachedObject | undefined,
  ): Promise<CachedObject> {
    const calls = this.managedCalls(desired.kind);
    const { namespace, name } = desired.metadata;
    return this.put(
      {
        resource: calls.resource,
        create: (body) => calls.create(namespace, body),
        replace: (body) => calls.replace(namespace, name, body),
        read: () => calls.read(namespace, name),
      },
      desired,
      cached,
    );
  }

  /**
   * Deletes a managed object no longer declared, only if it is still the version the cache saw. Gone counts as done.
   */
  async deleteManaged(
    kind: ManagedKind,
    namespace: string,
    name: string,
    resourceVersion: string | undefined,
  ): Promise<void> {
    const calls = this.managedCalls(kind);
    try {
      await this.write('delete', calls.resource, () =>
        calls.remove(namespace, name, { ...(resourceVersion ? { preconditions: { resourceVersion } } : {}) }),
      );
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  // --- the per-project ClusterRoles and ClusterRoleBindings (visibility: own, project-access.ts)

  async listAccess(kind: AccessKind): Promise<k8s.KubernetesListObject<k8s.KubernetesObject>> {
    if (kind === 'ClusterRole')
      return listInPages(
        'rbac.authorization.k8s.io/v1',
        'ClusterRoleList',
        (page) => this.rbac.listClusterRole({ ...page, labelSelector: MANAGED_SELECTOR }) as never,
      );
    return listInPages(
      'rbac.authorization.k8s.io/v1',
      'ClusterRoleBindingList',
      (page) => this.rbac.listClusterRoleBinding({ ...page, labelSelector: MANAGED_SELECTOR }) as never,
    );
  }

  /** A project's ClusterRole or ClusterRoleBinding (put). */
  async putAccess(desired: AccessObject, cached: CachedObject | undefined): Promise<CachedObject> {
    const name = desired.metadata.name;
    type Body = never;
    const calls: ObjectCalls =
      desired.kind === 'ClusterRole'
        ? {
            resource: 'clusterroles',
            create: (body) => this.rbac.createClusterRole({ body: body as Body }),
            replace: (body) => this.rbac.replaceClusterRole({ name, body: body as Body }),
            read: () => this.rbac.readClusterRole({ name }),
          }
        : {
            resource: 'clusterrolebindings',
            create: (body) => this.rbac.createClusterRoleBinding({ body: body as Body }),
            replace: (body) => this.rbac.replaceClusterRoleBinding({ name, body: body as Body }),
            read: () => this.rbac.readClusterRoleBinding({ name }),
          };
    return this.put(calls, desired, cached);
  }

  /** Sets labels on a namespace (merge patch at the resourceVersion read: a 409 when it changed meanwhile). */
  async setNamespaceLabels(namespace: NamespaceObject, labels: Record<string, string>): Promise<NamespaceObject> {
    return plain(
      await this.write('patch', 'namespaces', () =>
        this.core.patchNamespace(
          {
            name: namespace.metadata.name ?? '',
            body: { metadata: { labels, resourceVersion: namespace.metadata.resourceVersion } },
          },
          k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
        ),
      ),
    ) as NamespaceObject;
  }

  /**
   * The headroom ledger of a Project that is gone (the webhook writes it; nobody else reads it). Its
   * finalizer (src/ledger/ledger.ts) goes first: every namespace of the project is deleted by now, so
   * none of its reservations can be needed.
   */
  async deleteLedger(namespace: string, name: string): Promise<void> {
    try {
      await this.write('patch', 'configmaps', () =>
        this.core.patchNamespacedConfigMap(
          { namespace, name, body: { metadata: { finalizers: null } } },
          k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
        ),
      );
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
    return plain(
      await this.write('create', 'leases', () =>
        this.coordination.createNamespacedLease({ namespace: lease.metadata.namespace, body: toV1Lease(lease) }),
      ),
    );
  }

  async replaceLease(lease: LeaseRecord): Promise<LeaseRecord> {
    return plain(
      await this.write('update', 'leases', () =>
        this.coordination.replaceNamespacedLease({
          namespace: lease.metadata.namespace,
          name: lease.metadata.name,
          body: toV1Lease(lease),
        }),
      ),
    );
  }
}

/**
 * client-node's models rename the fields its generator cannot use as names: a LimitRange limit's
 * `default` is `_default`, a NetworkPolicy ingress rule's `from` is `_from`. Objects are converted both
 * ways at this edge, so the cache, the comparison and the API all see them as they are on the wire.
 */
type Spec = { spec?: { limits?: Array<Record<string, unknown>>; ingress?: Array<Record<string, unknown>> } };

function renameIn(items: Array<Record<string, unknown>> | undefined, from: string, to: string): void {
  for (const item of items ?? []) {
    if (!(from in item)) continue;
    item[to] = item[from];
    delete item[from];
  }
}

function onTheWire<T>(object: unknown): T {
  const json = plain<Spec>(object);
  renameIn(json.spec?.limits, '_default', 'default');
  renameIn(json.spec?.ingress, '_from', 'from');
  return json as T;
}

function forClient<T>(body: object): T {
  const json = plain<Spec>(body);
  renameIn(json.spec?.limits, 'default', '_default');
  renameIn(json.spec?.ingress, 'from', '_from');
  return json as T;
}

/**
 * The JSON patch that takes `finalizer` off an object (undefined: it has none): it first tests the
 * resourceVersion read (when it has one) and the entry it removes, so a concurrent change makes it fail
 * (409/422) instead of removing the wrong one.
 */
function finalizerRemoval(
  metadata: { finalizers?: string[]; resourceVersion?: string },
  finalizer: string,
): object[] | undefined {
  const index = (metadata.finalizers ?? []).indexOf(finalizer);
  if (index < 0) return undefined;
  const versionTest = metadata.resourceVersion
    ? [{ op: 'test', path: '/metadata/resourceVersion', value: metadata.resourceVersion }]
    : [];
  return [
    ...versionTest,
    { op: 'test', path: `/metadata/finalizers/${index}`, value: finalizer },
    { op: 'remove', path: `/metadata/finalizers/${index}` },
  ];
}

/** The client-node calls for one managed kind. */
interface ManagedCalls {
  resource: string;
  list(page: { limit: number; _continue?: string }): Promise<unknown>;
  create(namespace: string, body: object): Promise<unknown>;
  replace(namespace: string, name: string, body: object): Promise<unknown>;
  read(namespace: string, name: string): Promise<unknown>;
  remove(namespace: string, name: string, body: k8s.V1DeleteOptions): Promise<unknown>;
}

/** The calls `put` makes for one object: create it, replace it, read what is stored under its name. */
interface ObjectCalls {
  resource: string;
  create(body: object): Promise<unknown>;
  replace(body: object): Promise<unknown>;
  read(): Promise<unknown>;
}

/** What `put` writes of the desired metadata: ours, merged over what is stored. */
interface DesiredMetadata {
  name: string;
  labels: Record<string, string>;
  annotations?: Record<string, string>;
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
      ...(lease.spec.leaseDurationSeconds !== undefined
        ? { leaseDurationSeconds: lease.spec.leaseDurationSeconds }
        : {}),
      ...(lease.spec.leaseTransitions !== undefined ? { leaseTransitions: lease.spec.leaseTransitions } : {}),
      ...(lease.spec.acquireTime ? { acquireTime: micro(lease.spec.acquireTime) } : {}),
      ...(lease.spec.renewTime ? { renewTime: micro(lease.spec.renewTime) } : {}),
    },
  };
}

/**
 * The object with `metadata.managedFields: [{}]`: an update carrying it makes the API server drop the
 * object's managedFields (a create cannot), and later updates add none back.
 */
function unmanaged<T extends object>(body: T): T {
  const metadata = (body as { metadata?: object }).metadata ?? {};
  return { ...body, metadata: { ...metadata, managedFields: [{}] } };
}
