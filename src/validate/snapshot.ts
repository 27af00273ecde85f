/** An indexed in-memory Snapshot. The webhook and controller keep one up to date from informers. */
import { effectiveQuota, type Resources } from './resources.js';
import { LABEL_PROJECT, type NamespaceObject, type Project, type ResourceQuotaObject, type Snapshot } from './types.js';

export class MemorySnapshot implements Snapshot {
  private readonly projectsByName = new Map<string, Project>();
  private readonly namespacesByName = new Map<string, NamespaceObject>();
  private readonly namespacesByProject = new Map<string, Set<string>>();
  private readonly quotasByNamespace = new Map<string, Map<string, ResourceQuotaObject>>();
  /**
   * Effective quota per namespace, computed on first use and forgotten when a quota of that namespace
   * is added, replaced or deleted: the webhook's Q1 sums every namespace of a project per request.
   * A stale entry would let Q1 count an old quota and admit an overspend, so every quota write goes
   * through upsertQuota/deleteQuota, which drop it.
   */
  private readonly effectiveByNamespace = new Map<string, Resources>();
  /** Σ of the quotasByNamespace map sizes, kept as quotas come and go (`sizes` runs on every cache event). */
  private quotaCount = 0;

  static of(objects: { projects?: Project[]; namespaces?: NamespaceObject[]; quotas?: ResourceQuotaObject[] }): MemorySnapshot {
    const s = new MemorySnapshot();
    for (const p of objects.projects ?? []) s.upsertProject(p);
    for (const n of objects.namespaces ?? []) s.upsertNamespace(n);
    for (const q of objects.quotas ?? []) s.upsertQuota(q);
    return s;
  }

  projects(): Iterable<Project> {
    return this.projectsByName.values();
  }
  project(name: string): Project | undefined {
    return this.projectsByName.get(name);
  }
  namespace(name: string): NamespaceObject | undefined {
    return this.namespacesByName.get(name);
  }
  *namespacesOfProject(project: string): Iterable<NamespaceObject> {
    for (const name of this.namespacesByProject.get(project) ?? []) {
      const ns = this.namespacesByName.get(name);
      if (ns) yield ns;
    }
  }
  quotasInNamespace(namespace: string): Iterable<ResourceQuotaObject> {
    return this.quotasByNamespace.get(namespace)?.values() ?? [];
  }

  effectiveQuotaOf(namespace: string): Resources {
    let effective = this.effectiveByNamespace.get(namespace);
    if (!effective) {
      effective = effectiveQuota(this.quotasInNamespace(namespace));
      // Namespaces without quotas stay out of the memo (an empty result is cheap and would only grow it).
      if (effective.size > 0) this.effectiveByNamespace.set(namespace, effective);
    }
    return effective;
  }

  /** O(1). */
  get sizes(): { projects: number; namespaces: number; quotas: number } {
    return { projects: this.projectsByName.size, namespaces: this.namespacesByName.size, quotas: this.quotaCount };
  }

  upsertProject(p: Project): void {
    if (p.metadata.name) this.projectsByName.set(p.metadata.name, p);
  }
  deleteProject(name: string): void {
    this.projectsByName.delete(name);
  }

  upsertNamespace(ns: NamespaceObject): void {
    const name = ns.metadata.name;
    if (!name) return;
    this.unindexNamespace(name);
    this.namespacesByName.set(name, ns);
    const project = ns.metadata.labels?.[LABEL_PROJECT];
    if (project) {
      let set = this.namespacesByProject.get(project);
      if (!set) this.namespacesByProject.set(project, (set = new Set()));
      set.add(name);
    }
  }
  deleteNamespace(name: string): void {
    this.unindexNamespace(name);
    this.namespacesByName.delete(name);
  }
  private unindexNamespace(name: string): void {
    const project = this.namespacesByName.get(name)?.metadata.labels?.[LABEL_PROJECT];
    if (!project) return;
    const set = this.namespacesByProject.get(project);
    set?.delete(name);
    if (set && set.size === 0) this.namespacesByProject.delete(project);
  }

  upsertQuota(q: ResourceQuotaObject): void {
    const { namespace, name } = q.metadata;
    if (!namespace || !name) return;
    let m = this.quotasByNamespace.get(namespace);
    if (!m) this.quotasByNamespace.set(namespace, (m = new Map()));
    if (!m.has(name)) this.quotaCount += 1;
    m.set(name, q);
    this.effectiveByNamespace.delete(namespace);
  }
  deleteQuota(namespace: string, name: string): void {
    const m = this.quotasByNamespace.get(namespace);
    if (!m) return;
    if (m.delete(name)) this.quotaCount -= 1;
    this.effectiveByNamespace.delete(namespace);
    if (m.size === 0) this.quotasByNamespace.delete(namespace);
  }
}
