/** An indexed in-memory Snapshot. The webhook and controller keep one up to date from informers. */
import { quotaTier } from './tiers.js';
import { effectiveQuota, isUnscoped, namespaceIsTerminating, quotaHold, quotaUsed } from './quota-hold.js';
import { namespaceShare, projectShares, sharesHoldAt, withNamespaceShare } from './shares.js';
import type { ProjectShares, Resources } from './types.js';
import { LABEL_PROJECT, type NamespaceObject, type Project, type ResourceQuotaObject, type Snapshot } from './types.js';

const NONE: readonly ResourceQuotaObject[] = Object.freeze([]);
/** No usage: a namespace seen live whose quotas were never seen to go admitted no pod unseen. */
const NOTHING: Resources = new Map();

export class MemorySnapshot implements Snapshot {
  private readonly projectsByName = new Map<string, Project>();
  private readonly namespacesByName = new Map<string, NamespaceObject>();
  /** The namespace objects themselves, by project and name: the rules iterate them on every request. */
  private readonly namespacesByProject = new Map<string, Map<string, NamespaceObject>>();
  /**
   * The quotas of each namespace as a small array (usually one element): at 50,000 namespaces a Map
   * per namespace cost ≈ 15 MB more heap (P3). Arrays are replaced, never edited in place, so an
   * iteration in progress never sees a write.
   */
  private readonly quotasByNamespace = new Map<string, readonly ResourceQuotaObject[]>();
  /**
   * Effective quota per namespace, computed on first use and forgotten when a quota of that namespace
   * is added, replaced or deleted: the webhook's Q1 sums every namespace of a project per request.
   * A stale entry would let Q1 count an old quota and admit an overspend, so every quota write goes
   * through upsertQuota/deleteQuota, which drop it.
   */
  private readonly effectiveByNamespace = new Map<string, Resources>();
  /**
   * What each namespace's quotas let it hold (quotaHold: spec, enforced status.hard, status.used); kept like
   * effectiveByNamespace.
   */
  private readonly heldByNamespace = new Map<string, Resources>();
  /**
   * Observed shares per project (Q1 sums the other namespaces of a project on every growing request):
   * forgotten when the Project changes; one share recomputed when a namespace joins or leaves the
   * project (by its label) or the limits of its quotas change. An entry made for another Project
   * object or cluster, or for an instant whose budget differs (a burst started or ended), is not used:
   * it is recomputed at the instant asked for.
   */
  private readonly sharesByProject = new Map<string, ProjectShares>();
  /**
   * What the unscoped quotas of a namespace last reported in use when the last of them was deleted
   * (lastQuotaUsageOf): before Kubernetes 1.33 the namespace controller may delete a terminating
   * namespace's quotas while its pods still run (ADR 0077). One entry per such namespace, dropped
   * when the namespace goes or an unscoped quota comes back.
   */
  private readonly lastUsageByNamespace = new Map<string, Resources>();
  /**
   * Namespaces already terminating when this snapshot first saw them (a process started during their
   * deletion): whether their quotas went before it started is unknown, so without a remembered usage
   * they count the whole budget. One seen live had no quota deleted unseen.
   */
  private readonly firstSeenTerminating = new Set<string>();
  /** Σ of the quota list lengths, kept as quotas come and go (`sizes` runs on every cache event). */
  private quotaCount = 0;

  static of(objects: {
    projects?: Project[];
    namespaces?: NamespaceObject[];
    quotas?: ResourceQuotaObject[];
  }): MemorySnapshot {
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
  namespacesOfProject(project: string): Iterable<NamespaceObject> {
    return this.namespacesByProject.get(project)?.values() ?? [];
  }
  quotasInNamespace(namespace: string): Iterable<ResourceQuotaObject> {
    return this.quotasByNamespace.get(namespace) ?? NONE;
  }

  effectiveQuotaOf(namespace: string): Resources {
    return this.memoised(this.effectiveByNamespace, namespace, effectiveQuota);
  }

  /** `memo`'s entry for the namespace, else `compute` over its quotas, remembered when not empty. */
  private memoised(
    memo: Map<string, Resources>,
    namespace: string,
    compute: (quotas: Iterable<ResourceQuotaObject>) => Resources,
  ): Resources {
    const known = memo.get(namespace);
    if (known !== undefined) return known;
    const computed = compute(this.quotasInNamespace(namespace));
    // Namespaces without quotas stay out of the memo (an empty result is cheap and would only grow it).
    if (computed.size > 0) memo.set(namespace, computed);
    return computed;
  }

  /** After a status-only update: whether the namespace's memoised hold is still what its quotas give. */
  private holdUnchanged(namespace: string): boolean {
    const known = this.heldByNamespace.get(namespace);
    if (known === undefined) return false;
    const now = quotaHold(this.quotasInNamespace(namespace));
    if (now !== known && !sameResources(now, known)) return false;
    this.heldByNamespace.set(namespace, now);
    return true;
  }

  lastQuotaUsageOf(namespace: string): Resources | undefined {
    return this.lastUsageByNamespace.get(namespace) ?? (this.firstSeenTerminating.has(namespace) ? undefined : NOTHING);
  }

  heldQuotaOf(namespace: string): Resources {
    return this.memoised(this.heldByNamespace, namespace, quotaHold);
  }

  /** A quota of the namespace changed: its memo entries go, and the next lookup computes them afresh. */
  private forgetEffective(namespace: string): void {
    this.effectiveByNamespace.delete(namespace);
    this.heldByNamespace.delete(namespace);
  }

  projectSharesOf(project: Project, cluster: string, at: number): ProjectShares {
    const name = project.metadata.name ?? '';
    let memo = this.sharesByProject.get(name);
    if (!memo || !sharesHoldAt(memo, this, project, cluster, at)) {
      memo = projectShares(this, project, cluster, at);
      // Only the Project object the snapshot holds is memoised (a caller's edited copy is computed afresh).
      if (this.projectsByName.get(name) === project) this.sharesByProject.set(name, memo);
    }
    return memo;
  }

  private forgetShares(project: string | undefined): void {
    if (project !== undefined) this.sharesByProject.delete(project);
  }
  /**
   * A namespace joined `project`, left it (`inProject` false) or had its quotas changed: the project's
   * memo, if any, gets that one share recomputed instead of being dropped (an admitted creation is
   * followed by its watch event, and the next decision of the project would otherwise rebuild all).
   */
  private reshare(project: string | undefined, namespace: string, inProject: boolean): void {
    if (project === undefined) return;
    const memo = this.sharesByProject.get(project);
    if (!memo) return;
    this.sharesByProject.set(
      project,
      withNamespaceShare(
        memo,
        namespace,
        inProject ? namespaceShare(this, memo.project, memo.cluster, memo.at, namespace) : undefined,
      ),
    );
  }
  private projectOf(namespace: string): string | undefined {
    return this.namespacesByName.get(namespace)?.metadata.labels?.[LABEL_PROJECT];
  }

  /** O(1). */
  get sizes(): { projects: number; namespaces: number; quotas: number } {
    return { projects: this.projectsByName.size, namespaces: this.namespacesByName.size, quotas: this.quotaCount };
  }

  upsertProject(p: Project): void {
    if (!p.metadata.name) return;
    this.projectsByName.set(p.metadata.name, p);
    this.forgetShares(p.metadata.name);
  }
  deleteProject(name: string): void {
    this.projectsByName.delete(name);
    this.forgetShares(name);
  }

  upsertNamespace(ns: NamespaceObject): void {
    const name = ns.metadata.name;
    if (!name) return;
    const previous = this.namespacesByName.get(name);
    const existed = previous !== undefined;
    if (!existed && namespaceIsTerminating(ns)) this.firstSeenTerminating.add(name);
    const before = this.projectOf(name);
    this.unindexNamespace(name);
    this.namespacesByName.set(name, ns);
    const project = ns.metadata.labels?.[LABEL_PROJECT];
    if (project) {
      let namespaces = this.namespacesByProject.get(project);
      if (!namespaces) this.namespacesByProject.set(project, (namespaces = new Map()));
      namespaces.set(name, ns);
    }
    // Shares follow namespace names and project labels only: an update that keeps the label keeps them.
    if (!existed || before !== project) {
      this.reshare(before, name, false);
      this.reshare(project, name, true);
    } else if (namespaceIsTerminating(previous) !== namespaceIsTerminating(ns)) {
      // A terminating namespace without quotas counts what its pods last used (terminatingWithoutQuota).
      this.reshare(project, name, true);
    }
  }
  deleteNamespace(name: string): void {
    this.lastUsageByNamespace.delete(name);
    this.firstSeenTerminating.delete(name);
    this.reshare(this.projectOf(name), name, false);
    this.unindexNamespace(name);
    this.namespacesByName.delete(name);
  }
  private unindexNamespace(name: string): void {
    const project = this.projectOf(name);
    if (!project) return;
    const namespaces = this.namespacesByProject.get(project);
    namespaces?.delete(name);
    if (namespaces && namespaces.size === 0) this.namespacesByProject.delete(project);
  }

  upsertQuota(q: ResourceQuotaObject): void {
    const { namespace, name } = q.metadata;
    if (!namespace || !name) return;
    const list = this.quotasByNamespace.get(namespace) ?? NONE;
    if (isUnscoped(q)) this.lastUsageByNamespace.delete(namespace);
    const at = list.findIndex((x) => x.metadata.name === name);
    if (at < 0) {
      this.quotasByNamespace.set(namespace, [...list, q]);
      this.quotaCount += 1;
    } else {
      const previous = list[at]!;
      this.quotasByNamespace.set(
        namespace,
        list.map((x, i) => (i === at ? q : x)),
      );
      // Annotations, labels, managed fields: only the scopes, spec.hard, status.hard and status.used count.
      if (sameHold(previous, q)) return;
      // The quota controller rewrites status.used with every pod; while usage stays within the quota
      // the namespace holds what its spec says, and nothing it counts with changes.
      if (sameLimits(previous, q) && this.holdUnchanged(namespace)) return;
    }
    this.forgetEffective(namespace);
    this.reshare(this.projectOf(namespace), namespace, true);
  }
  deleteQuota(namespace: string, name: string): void {
    const list = this.quotasByNamespace.get(namespace);
    if (!list) return;
    const rest = list.filter((x) => x.metadata.name !== name);
    this.quotaCount -= list.length - rest.length;
    if (list.some(isUnscoped) && !rest.some(isUnscoped)) this.lastUsageByNamespace.set(namespace, quotaUsed(list));
    if (rest.length === 0) {
      this.quotasByNamespace.delete(namespace);
      this.effectiveByNamespace.delete(namespace);
      this.heldByNamespace.delete(namespace);
    } else {
      this.quotasByNamespace.set(namespace, rest);
      this.forgetEffective(namespace);
    }
    this.reshare(this.projectOf(namespace), namespace, true);
  }
}

/**
 * Whether two versions of a quota count the same (what effectiveQuota and quotaHold read: which keys
 * it counts for (unscoped, a tier's, none: tiers.ts quotaTier), spec.hard, status.hard, status.used). The quota
 * controller rewrites status.used with every pod.
 */
function sameHold(a: ResourceQuotaObject, b: ResourceQuotaObject): boolean {
  if (quotaTier(a) !== quotaTier(b)) return false;
  return (
    sameList(a.spec?.hard, b.spec?.hard) &&
    sameList(a.status?.hard, b.status?.hard) &&
    sameList(a.status?.used, b.status?.used)
  );
}

/** Whether two versions of a quota limit the same (what effectiveQuota reads: the keys it counts for, spec.hard). */
function sameLimits(a: ResourceQuotaObject, b: ResourceQuotaObject): boolean {
  return quotaTier(a) === quotaTier(b) && sameList(a.spec?.hard, b.spec?.hard);
}

function sameResources(a: Resources, b: Resources): boolean {
  if (a.size !== b.size) return false;
  for (const [name, q] of a) {
    const other = b.get(name);
    if (!other || other.cmp(q) !== 0) return false;
  }
  return true;
}

function sameList(
  a: Record<string, string | number> | undefined,
  b: Record<string, string | number> | undefined,
): boolean {
  const x = a ?? {};
  const y = b ?? {};
  const keys = Object.keys(x);
  if (keys.length !== Object.keys(y).length) return false;
  return keys.every((k) => Object.hasOwn(y, k) && x[k] === y[k]);
}
