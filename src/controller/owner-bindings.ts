/**
 * A watch cache of the RoleBindings tenantgate manages (label app.kubernetes.io/managed-by=tenantgate),
 * by namespace, for the owner-binding step of the reconcile: it compares with the cache and writes only
 * what differs, so an idle cluster sees no writes. Only bindings named `tenantgate-owners` are kept.
 */
import type * as k8s from '@kubernetes/client-node';
import { ResilientInformer, type InformerMetrics } from '../kube/informers.js';
import { slim } from '../kube/lists.js';
import { OWNERS_BINDING_NAME, type RoleBindingObject } from '../render/owner-binding.js';
import { LABEL_MANAGED_BY, MANAGED_BY } from '../validate/types.js';

export const OWNER_BINDING_SELECTOR = `${LABEL_MANAGED_BY}=${MANAGED_BY}`;

export class OwnerBindingCache {
  readonly informer: ResilientInformer<'RoleBinding'>;
  private readonly byNamespace = new Map<string, RoleBindingObject>();
  private readonly listeners: Array<(namespace: string) => void> = [];

  constructor(kc: k8s.KubeConfig, list: () => Promise<k8s.KubernetesListObject<k8s.KubernetesObject>>, options: { log: (m: string) => void; metrics: InformerMetrics }) {
    this.informer = new ResilientInformer('RoleBinding', kc, '/apis/rbac.authorization.k8s.io/v1/rolebindings', list, { ...options, labelSelector: OWNER_BINDING_SELECTOR });
    this.informer.informer.on('add', (o) => this.put(o));
    this.informer.informer.on('update', (o) => this.put(o));
    this.informer.informer.on('delete', (o) => this.drop(o));
  }

  get(namespace: string): RoleBindingObject | undefined {
    return this.byNamespace.get(namespace);
  }

  /** Called with the namespace of every binding that changed (its project is reconciled again). */
  onChange(listener: (namespace: string) => void): void {
    this.listeners.push(listener);
  }

  /** The API server's response to our own write, so the next pass does not write again. */
  applyWritten(binding: RoleBindingObject): void {
    const current = this.byNamespace.get(binding.metadata.namespace);
    if (current && Number(current.metadata.resourceVersion) >= Number(binding.metadata.resourceVersion)) return;
    this.byNamespace.set(binding.metadata.namespace, slim(binding));
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
    if (o.metadata?.name !== OWNERS_BINDING_NAME) return;
    const namespace = o.metadata.namespace ?? '';
    this.byNamespace.set(namespace, o as unknown as RoleBindingObject);
    this.notify(namespace);
  }

  private drop(o: k8s.KubernetesObject): void {
    if (o.metadata?.name !== OWNERS_BINDING_NAME) return;
    const namespace = o.metadata.namespace ?? '';
    this.byNamespace.delete(namespace);
    this.notify(namespace);
  }

  private notify(namespace: string): void {
    for (const l of this.listeners) l(namespace);
  }
}
