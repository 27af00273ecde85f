/**
 * Watch caches of Projects, Namespaces and ResourceQuotas (client-node informers: list, then watch,
 * relist on 410) feeding one MemorySnapshot. An informer that fails is restarted with backoff, so a
 * broken watch never silently freezes the cache.
 */
import * as k8s from '@kubernetes/client-node';
import { MemorySnapshot } from '../validate/snapshot.js';
import type { NamespaceObject, Project, ResourceQuotaObject } from '../validate/types.js';

export type CachedKind = 'Project' | 'Namespace' | 'ResourceQuota';
export type CacheEvent = 'add' | 'update' | 'delete';
export type CacheListener = (kind: CachedKind, event: CacheEvent, object: k8s.KubernetesObject) => void;

interface Watched {
  kind: CachedKind;
  informer: k8s.Informer<k8s.KubernetesObject>;
  synced: boolean;
  restartDelayMs: number;
  timer?: NodeJS.Timeout;
}

export interface ClusterCacheOptions {
  log?: (message: string) => void;
  /** Restart backoff after an informer error: starts here, doubles up to 30 s. */
  restartDelayMs?: number;
}

export class ClusterCache {
  readonly snapshot = new MemorySnapshot();
  private readonly watched: Watched[] = [];
  private readonly listeners: CacheListener[] = [];
  private stopped = false;
  private readonly log: (message: string) => void;
  private readonly baseDelayMs: number;

  constructor(kc: k8s.KubeConfig, options: ClusterCacheOptions = {}) {
    this.log = options.log ?? (() => {});
    this.baseDelayMs = options.restartDelayMs ?? 500;
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const custom = kc.makeApiClient(k8s.CustomObjectsApi);
    this.add('Project', k8s.makeInformer(kc, '/apis/tenantgate.io/v1alpha1/projects', async () =>
      (await custom.listClusterCustomObject({ group: 'tenantgate.io', version: 'v1alpha1', plural: 'projects' })) as k8s.KubernetesListObject<k8s.KubernetesObject>));
    this.add('Namespace', k8s.makeInformer(kc, '/api/v1/namespaces', () => core.listNamespace() as Promise<k8s.KubernetesListObject<k8s.KubernetesObject>>));
    this.add('ResourceQuota', k8s.makeInformer(kc, '/api/v1/resourcequotas', () => core.listResourceQuotaForAllNamespaces() as Promise<k8s.KubernetesListObject<k8s.KubernetesObject>>));
  }

  private add(kind: CachedKind, informer: k8s.Informer<k8s.KubernetesObject>): void {
    const w: Watched = { kind, informer, synced: false, restartDelayMs: this.baseDelayMs };
    this.watched.push(w);
    informer.on('add', (o) => this.apply(kind, 'add', o));
    informer.on('update', (o) => this.apply(kind, 'update', o));
    informer.on('delete', (o) => this.apply(kind, 'delete', o));
    informer.on('error', (err) => {
      if (this.stopped) return;
      this.log(`${kind} watch failed (${describe(err)}); restarting in ${w.restartDelayMs} ms`);
      clearTimeout(w.timer);
      w.timer = setTimeout(() => void this.startOne(w), w.restartDelayMs);
      w.restartDelayMs = Math.min(w.restartDelayMs * 2, 30_000);
    });
  }

  private apply(kind: CachedKind, event: CacheEvent, object: k8s.KubernetesObject): void {
    const s = this.snapshot;
    const meta = object.metadata ?? {};
    if (kind === 'Project') {
      if (event === 'delete') s.deleteProject(meta.name ?? '');
      else s.upsertProject(object as unknown as Project);
    } else if (kind === 'Namespace') {
      if (event === 'delete') s.deleteNamespace(meta.name ?? '');
      else s.upsertNamespace(object as unknown as NamespaceObject);
    } else if (event === 'delete') {
      s.deleteQuota(meta.namespace ?? '', meta.name ?? '');
    } else {
      s.upsertQuota(object as unknown as ResourceQuotaObject);
    }
    for (const listener of this.listeners) listener(kind, event, object);
  }

  onEvent(listener: CacheListener): void {
    this.listeners.push(listener);
  }

  private async startOne(w: Watched): Promise<void> {
    if (this.stopped) return;
    let failed = false;
    const onError = () => (failed = true);
    w.informer.on('error', onError);
    try {
      await w.informer.start();
    } catch (err) {
      failed = true;
      this.log(`${w.kind} informer start failed: ${describe(err)}`);
    } finally {
      w.informer.off('error', onError);
    }
    if (!failed) {
      w.synced = true;
      w.restartDelayMs = this.baseDelayMs;
    }
  }

  /** Starts every informer; resolves when all have listed once (or rejects after `timeoutMs`). */
  async start(timeoutMs = 60_000): Promise<void> {
    await Promise.all(this.watched.map((w) => this.startOne(w)));
    const deadline = Date.now() + timeoutMs;
    while (!this.synced()) {
      if (Date.now() > deadline) throw new Error(`caches not synced after ${timeoutMs} ms: ${this.watched.filter((w) => !w.synced).map((w) => w.kind).join(', ')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  synced(): boolean {
    return this.watched.every((w) => w.synced);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const w of this.watched) {
      clearTimeout(w.timer);
      await w.informer.stop();
    }
  }
}

function describe(err: unknown): string {
  if (err instanceof Error) return err.message;
  return typeof err === 'object' ? JSON.stringify(err) : String(err);
}
