/**
 * Watch caches of the namespaced objects tenantgate puts in every project namespace (label
 * app.kubernetes.io/managed-by=tenantgate): the owners' RoleBinding, the LimitRange and the isolation
 * NetworkPolicy, each by namespace, for the reconcile steps that create and repair them. A step
 * compares with the cache and writes only what differs, so an idle cluster sees no writes. Only the
 * one name tenantgate uses per kind is kept.
 */
import type * as k8s from '@kubernetes/client-node';
import { ResilientInformer, type InformerMetrics } from '../kube/informers.js';
import { slim } from '../kube/lists.js';
import { LIMITRANGE_NAME, NETWORK_POLICY_NAME } from '../render/namespace-policies.js';
import { OWNERS_BINDING_NAME } from '../render/owner-binding.js';
import { LABEL_MANAGED_BY, MANAGED_BY } from '../validate/types.js';

export const MANAGED_SELECTOR = `${LABEL_MANAGED_BY}=${MANAGED_BY}`;

export type ManagedKind = 'RoleBinding' | 'LimitRange' | 'NetworkPolicy';

/** Where each kind is watched, and the one name tenantgate gives it in a project namespace. */
export const MANAGED_KINDS: Record<ManagedKind, { path: string; name: string }> = {
  RoleBinding: { path: '/apis/rbac.authorization.k8s.io/v1/rolebindings', name: OWNERS_BINDING_NAME },
  LimitRange: { path: '/api/v1/limitranges', name: LIMITRANGE_NAME },
  NetworkPolicy: { path: '/apis/networking.k8s.io/v1/networkpolicies', name: NETWORK_POLICY_NAME },
};

/** What the cache keeps of an object: its (slimmed) metadata and the rest as stored. */
export interface CachedObject {
  metadata: { name?: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string>; resourceVersion?: string };
  [field: string]: unknown;
}

export class ManagedObjectCache {
  readonly informer: ResilientInformer<ManagedKind>;
  private readonly byNamespace = new Map<string, CachedObject>();
  private readonly listeners: Array<(namespace: string) => void> = [];
  private readonly name: string;

  constructor(
    readonly kind: ManagedKind,
    kc: k8s.KubeConfig,
    list: () => Promise<k8s.KubernetesListObject<k8s.KubernetesObject>>,
    options: { log: (m: string) => void; metrics: InformerMetrics },
  ) {
    const { path, name } = MANAGED_KINDS[kind];
    this.name = name;
    this.informer = new ResilientInformer(kind, kc, path, list, { ...options, labelSelector: MANAGED_SELECTOR });
    this.informer.informer.on('add', (o) => this.put(o));
    this.informer.informer.on('update', (o) => this.put(o));
    this.informer.informer.on('delete', (o) => this.drop(o));
  }

  get(namespace: string): CachedObject | undefined {
    return this.byNamespace.get(namespace);
  }

  /** Called with the namespace of every object that changed (its project is reconciled again). */
  onChange(listener: (namespace: string) => void): void {
    this.listeners.push(listener);
  }

  /** The API server's response to our own write, so the next pass does not write again. */
  applyWritten(object: CachedObject): void {
    const namespace = object.metadata.namespace ?? '';
    const current = this.byNamespace.get(namespace);
    if (current && Number(current.metadata.resourceVersion) >= Number(object.metadata.resourceVersion)) return;
    this.byNamespace.set(namespace, slim(object));
  }

  /** Our own delete went through (its watch event follows). */
  applyDeleted(namespace: string): void {
    this.byNamespace.delete(namespace);
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

  stop(): Promise<void> {
    return this.informer.stop();
  }

  private put(o: k8s.KubernetesObject): void {
    if (o.metadata?.name !== this.name) return;
    const namespace = o.metadata.namespace ?? '';
    this.byNamespace.set(namespace, o as unknown as CachedObject);
    this.notify(namespace);
  }

  private drop(o: k8s.KubernetesObject): void {
    if (o.metadata?.name !== this.name) return;
    const namespace = o.metadata.namespace ?? '';
    this.byNamespace.delete(namespace);
    this.notify(namespace);
  }

  private notify(namespace: string): void {
    for (const l of this.listeners) l(namespace);
  }
}

/** The three caches, one per kind, started and stopped together. */
export class ManagedObjects {
  readonly caches: Record<ManagedKind, ManagedObjectCache>;

  constructor(kc: k8s.KubeConfig, list: (kind: ManagedKind) => Promise<k8s.KubernetesListObject<k8s.KubernetesObject>>, options: { log: (m: string) => void; metrics: InformerMetrics }) {
    const make = (kind: ManagedKind) => new ManagedObjectCache(kind, kc, () => list(kind), options);
    this.caches = { RoleBinding: make('RoleBinding'), LimitRange: make('LimitRange'), NetworkPolicy: make('NetworkPolicy') };
  }

  private get all(): ManagedObjectCache[] {
    return Object.values(this.caches);
  }

  onChange(listener: (namespace: string) => void): void {
    for (const c of this.all) c.onChange(listener);
  }

  start(): void {
    for (const c of this.all) c.start();
  }

  get synced(): boolean {
    return this.all.every((c) => c.synced);
  }

  async waitSynced(): Promise<void> {
    await Promise.all(this.all.map((c) => c.waitSynced()));
  }

  async stop(): Promise<void> {
    await Promise.all(this.all.map((c) => c.stop()));
  }
}
