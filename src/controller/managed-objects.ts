/**
 * Watch caches of the objects tenantgate writes (label app.kubernetes.io/managed-by=tenantgate), for
 * the reconcile steps that create and repair them: here the owners' RoleBinding, the LimitRange, the
 * isolation NetworkPolicy and the AllowList (the allow-list policies' parameters) of every project
 * namespace, each by namespace (only the one name
 * tenantgate uses per kind is kept); project-access.ts files the per-project ClusterRoles with the
 * same ObjectCache. A step compares with the cache and writes only what differs, so an idle cluster
 * sees no writes.
 */
import type * as k8s from '@kubernetes/client-node';
import { InformerGroup, ResilientInformer, type InformerMetrics, type WatchedKind } from '../kube/informers.js';
import { slim } from '../kube/lists.js';
import { LIMITRANGE_NAME, NETWORK_POLICY_NAME } from '../render/namespace-policies.js';
import { OWNERS_BINDING_NAME } from '../render/owner-binding.js';
import { ALLOW_LIST_NAME, ALLOW_LIST_PLURAL } from '../validate/allow-list-params.js';
import { API_VERSION, LABEL_MANAGED_BY, MANAGED_BY } from '../validate/types.js';

export const MANAGED_SELECTOR = `${LABEL_MANAGED_BY}=${MANAGED_BY}`;

export type ManagedKind = 'RoleBinding' | 'LimitRange' | 'NetworkPolicy' | 'AllowList';

/** Where each kind is watched, filed by namespace for the one name tenantgate gives it in a project namespace. */
const MANAGED_KINDS: Record<ManagedKind, WatchedAt> = {
  RoleBinding: { path: '/apis/rbac.authorization.k8s.io/v1/rolebindings', keys: byNamespace(OWNERS_BINDING_NAME) },
  LimitRange: { path: '/api/v1/limitranges', keys: byNamespace(LIMITRANGE_NAME) },
  NetworkPolicy: { path: '/apis/networking.k8s.io/v1/networkpolicies', keys: byNamespace(NETWORK_POLICY_NAME) },
  AllowList: { path: `/apis/${API_VERSION}/${ALLOW_LIST_PLURAL}`, keys: byNamespace(ALLOW_LIST_NAME) },
};

/** An object named `name` is filed under its namespace, and a change of it reported as its namespace. */
function byNamespace(name: string): CacheKeys {
  const namespaceOf = (o: k8s.KubernetesObject) =>
    o.metadata?.name === name ? (o.metadata.namespace ?? '') : undefined;
  return { keyOf: namespaceOf, changeOf: namespaceOf };
}

/** What the cache keeps of an object: its (slimmed) metadata and the rest as stored. */
export interface CachedObject {
  metadata: {
    name?: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    finalizers?: string[];
    deletionTimestamp?: unknown;
    resourceVersion?: string;
  };
  [field: string]: unknown;
}

/**
 * How a cache files what it watches: `keyOf` names an object's slot (undefined: not one of ours, e.g.
 * another name under the same label), `changeOf` what a change is reported as to the listeners.
 */
export interface CacheKeys {
  keyOf(o: k8s.KubernetesObject): string | undefined;
  changeOf(o: k8s.KubernetesObject): string | undefined;
}

/** One watched kind, one object per key (the informer slims what it stores). */
export class ObjectCache<K extends WatchedKind> {
  readonly informer: ResilientInformer<K>;
  private readonly byKey = new Map<string, CachedObject>();
  private readonly listeners: Array<(change: string) => void> = [];

  constructor(
    readonly kind: K,
    kc: k8s.KubeConfig,
    path: string,
    list: () => Promise<k8s.KubernetesListObject<k8s.KubernetesObject>>,
    options: { log: (m: string) => void; metrics: InformerMetrics },
    private readonly keys: CacheKeys,
  ) {
    this.informer = new ResilientInformer(kind, kc, path, list, { ...options, labelSelector: MANAGED_SELECTOR });
    this.informer.informer.on('add', (o) => this.changed(o, false));
    this.informer.informer.on('update', (o) => this.changed(o, false));
    this.informer.informer.on('delete', (o) => this.changed(o, true));
  }

  get(key: string): CachedObject | undefined {
    return this.byKey.get(key);
  }

  /** Every object cached. */
  list(): CachedObject[] {
    return [...this.byKey.values()];
  }

  /** Called with what changed (`changeOf`) for every object that changed (its project is reconciled again). */
  onChange(listener: (change: string) => void): void {
    this.listeners.push(listener);
  }

  /** The API server's response to our own write, so the next pass does not write again. */
  applyWritten(object: CachedObject): void {
    const key = this.keys.keyOf(object as k8s.KubernetesObject);
    if (key === undefined) return;
    const current = this.byKey.get(key);
    if (current && Number(current.metadata.resourceVersion) >= Number(object.metadata.resourceVersion)) return;
    this.byKey.set(key, slim(object));
  }

  /** Our own delete went through (its watch event follows). */
  applyDeleted(key: string): void {
    this.byKey.delete(key);
  }

  start(): void {
    this.informer.start();
  }

  waitSynced(): Promise<void> {
    return this.informer.waitSynced();
  }

  get synced(): boolean {
    return this.informer.synced;
  }

  /** Synced, and its watch connected (false while it re-lists, reconnects or is broken). */
  get upToDate(): boolean {
    return this.informer.upToDate;
  }

  stop(): Promise<void> {
    return this.informer.stop();
  }

  private changed(o: k8s.KubernetesObject, deleted: boolean): void {
    const key = this.keys.keyOf(o);
    if (key === undefined) return;
    if (deleted) this.byKey.delete(key);
    else this.byKey.set(key, o as unknown as CachedObject);
    const change = this.keys.changeOf(o);
    if (change !== undefined) for (const l of this.listeners) l(change);
  }
}

/** Caches of several kinds, started, synced and stopped together. */
export class ObjectCaches<K extends WatchedKind> extends InformerGroup {
  constructor(readonly caches: Readonly<Record<K, ObjectCache<K>>>) {
    super();
  }

  protected get members(): ObjectCache<K>[] {
    return Object.values(this.caches);
  }

  onChange(listener: (change: string) => void): void {
    for (const c of this.members) c.onChange(listener);
  }
}

/**
 * The four namespaced kinds, each by namespace (only the one name tenantgate uses); a change is
 * reported as its namespace.
 */
export type ManagedObjects = ObjectCaches<ManagedKind>;

export const managedObjects = cachesOf(MANAGED_KINDS);

/** Where a kind is watched, and how its cache files it. */
interface WatchedAt {
  path: string;
  keys: CacheKeys;
}

/** The factory of the caches of the kinds of `table` (started in its order), each listed through `list`. */
export function cachesOf<K extends WatchedKind>(table: Readonly<Record<K, WatchedAt>>) {
  return (
    kc: k8s.KubeConfig,
    list: (kind: K) => Promise<k8s.KubernetesListObject<k8s.KubernetesObject>>,
    options: { log: (m: string) => void; metrics: InformerMetrics },
  ): ObjectCaches<K> => {
    const caches = {} as Record<K, ObjectCache<K>>;
    for (const kind of Object.keys(table) as K[]) {
      const { path, keys } = table[kind];
      caches[kind] = new ObjectCache(kind, kc, path, () => list(kind), options, keys);
    }
    return new ObjectCaches(caches);
  };
}
