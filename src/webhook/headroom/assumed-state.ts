/**
 * This replica's assumed state (as Kueue's cache assumes a workload before the apiserver shows it:
 * AssumeWorkload/ForgetWorkload): what this process admitted that its watch cache does not show yet.
 * Per namespace the share an admitted growth took, and per quota every spec an admitted write may
 * leave it with. Decisions count max(observed, assumed); an assumption is forgotten once the cache
 * shows it (observe), when it expires (the TTL), or when its project goes. It only ever makes this
 * process's decisions stricter; other replicas learn of it through the headroom ledger.
 */
import type { LedgerQuotaWrite } from '../../ledger/ledger.js';
import type { ReviewContext, Verdict } from '../../validate/admission.js';
import { maxResources } from '../../validate/resource-lists.js';
import { namespaceShare, type PendingAllocations } from '../../validate/shares.js';
import type { QuotaOverlay } from '../../validate/quota-hold.js';
import type { Resources } from '../../validate/types.js';
import { LABEL_PROJECT, type ResourceQuotaObject, type Snapshot } from '../../validate/types.js';
import { reserves } from './ledger-entries.js';
import {
  envelope,
  landsLast,
  shownByCache,
  specOf,
  supersededInCache,
  unionVersions,
  writeVersions,
  type OverlayWrite,
} from './quota-versions.js';
import type { AdmissionRequest } from '../review.js';

/** An admitted growth of a namespace's share. */
interface AssumedShare {
  project: string;
  resources: Resources;
  expires: number;
}

/** An admitted ResourceQuota write (null: a deletion) the cache may not show yet. */
interface AssumedWrite {
  project: string;
  quota: ResourceQuotaObject | null;
  /** Every spec the quota may have until the write is shown: the write and the object it replaced. */
  versions: LedgerQuotaWrite[];
  basedOn?: string;
  expires: number;
}

export class AssumedState {
  private readonly shares = new Map<string, AssumedShare>();
  /** The namespaces of `shares`, by project (Q1 asks for a project's pending namespaces on every decision). */
  private readonly sharesByProject = new Map<string, Set<string>>();
  /** Admitted quota writes by namespace and quota name, until the cache shows them or they expire. */
  private readonly writes = new Map<string, Map<string, AssumedWrite>>();

  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number,
  ) {}

  /** What this process admitted and the cache does not show yet (the cache it counts with: `pendingOver`). */
  readonly pending: PendingAllocations = {
    allocation: (namespace) => this.live(namespace)?.resources,
    namespaces: (project) => {
      const names = this.sharesByProject.get(project);
      return names ? [...names].filter((ns) => this.live(ns)) : [];
    },
    quotaOverlay: (namespace) => this.overlay(namespace, undefined, []),
    allocated: () => this.allocatedNamespaces(),
  };

  /** Every namespace with an assumed share, of any project (expired ones until they are swept or asked for). */
  allocatedNamespaces(): Iterable<string> {
    return this.shares.keys();
  }

  /**
   * `pending` for decisions against one snapshot: admitted quota writes count as their envelope until it shows them.
   */
  pendingOver(snapshot: Snapshot): PendingAllocations {
    if (this.writes.size === 0) return this.pending;
    return { ...this.pending, quotaOverlay: (namespace) => this.overlay(namespace, snapshot, []) };
  }

  /**
   * The quotas of a namespace the rules count instead of the cached ones: per quota with a live
   * assumed write (this process's, or any replica's in `recorded`), the envelope of the versions it
   * may have — unless `snapshot` shows its newest write stored (undefined: no snapshot to ask). A write
   * the snapshot has moved past (supersededInCache: the quota changed or was deleted after the version the
   * write was conditional on) counts no more: it lost, or what it did is shown. Else a write that lost
   * to another replica's delete would bring the deleted quota back at its envelope, and a namespace
   * capped by it would look as if it could not grow to its other quotas.
   */
  overlay(
    namespace: string,
    snapshot: Snapshot | undefined,
    recorded: readonly OverlayWrite[],
  ): QuotaOverlay | undefined {
    const mine = this.liveWrites(namespace);
    if (!mine && recorded.length === 0) return undefined;
    const byQuota = new Map<string, { newest: OverlayWrite; versions: LedgerQuotaWrite[] }>();
    const add = (w: OverlayWrite) => {
      const prev = byQuota.get(w.quota);
      if (!prev) return void byQuota.set(w.quota, { newest: w, versions: [...w.versions] });
      prev.versions = unionVersions(prev.versions, w.versions);
      prev.newest = w.created >= prev.newest.created ? landsLast(prev.newest, w) : landsLast(w, prev.newest);
    };
    const current = (quota: string, basedOn: string | undefined) =>
      !snapshot || !supersededInCache(snapshot, namespace, quota, basedOn);
    for (const [quota, w] of mine ?? []) {
      if (!current(quota, w.basedOn)) continue;
      add({
        quota,
        write: specOf(w.quota),
        versions: w.versions,
        ...(w.basedOn !== undefined ? { basedOn: w.basedOn } : {}),
        created: w.expires - this.ttlMs,
      });
    }
    for (const w of recorded) if (current(w.quota, w.basedOn)) add(w);
    const out = new Map<string, ResourceQuotaObject | null>();
    for (const [quota, { newest, versions }] of byQuota) {
      if (snapshot && shownByCache(snapshot, namespace, quota, newest.write, newest.basedOn)) continue;
      out.set(quota, envelope(namespace, quota, versions));
    }
    return out.size > 0 ? out : undefined;
  }

  /**
   * Per quota of the namespace with an assumed write, every version it may have (live or expired alike, as the guard
   * always counted them).
   */
  writeVersionsIn(namespace: string): Map<string, LedgerQuotaWrite[]> {
    const versions = new Map<string, LedgerQuotaWrite[]>();
    for (const [name, w] of this.writes.get(namespace) ?? []) versions.set(name, [...w.versions]);
    return versions;
  }

  /** This process's admitted quota writes in the namespace that still count (undefined: none). */
  private liveWrites(namespace: string): Map<string, AssumedWrite> | undefined {
    const byQuota = this.writes.get(namespace);
    if (!byQuota) return undefined;
    const now = this.now();
    for (const [name, w] of byQuota) if (w.expires <= now) byQuota.delete(name);
    if (byQuota.size === 0) this.writes.delete(namespace);
    return byQuota.size > 0 ? byQuota : undefined;
  }

  private live(namespace: string): AssumedShare | undefined {
    const entry = this.shares.get(namespace);
    if (entry && entry.expires <= this.now()) {
      this.forget(namespace);
      return undefined;
    }
    return entry;
  }

  /** Forgets the assumed share of a namespace. */
  forget(namespace: string): void {
    const entry = this.shares.get(namespace);
    if (!entry) return;
    this.shares.delete(namespace);
    const names = this.sharesByProject.get(entry.project);
    names?.delete(namespace);
    if (names?.size === 0) this.sharesByProject.delete(entry.project);
  }

  /** How many namespaces have an assumed share. */
  get shareCount(): number {
    return this.shares.size;
  }

  /** How many quotas have an assumed write. */
  get writeCount(): number {
    let writes = 0;
    for (const byQuota of this.writes.values()) writes += byQuota.size;
    return writes;
  }

  /** Drops what has expired. */
  sweep(): void {
    const now = this.now();
    for (const [namespace, entry] of this.shares) if (entry.expires <= now) this.forget(namespace);
    for (const namespace of [...this.writes.keys()]) this.liveWrites(namespace);
  }

  /** Called when a Project is deleted: nothing assumed for it is needed any more. */
  forgetProject(project: string): void {
    for (const namespace of [...(this.sharesByProject.get(project) ?? [])]) this.forget(namespace);
    for (const [namespace, byQuota] of this.writes) {
      for (const [name, w] of byQuota) if (w.project === project) byQuota.delete(name);
      if (byQuota.size === 0) this.writes.delete(namespace);
    }
  }

  /**
   * Called on cache events: forget what the cache now shows. This only relaxes this process's own
   * memory: the ledger's entries (its own included) count until they expire whatever any cache shows.
   */
  observe(ctx: Pick<ReviewContext, 'snapshot' | 'config' | 'at'>, namespace: string): void {
    const byQuota = this.writes.get(namespace);
    if (byQuota) {
      for (const [name, w] of byQuota) {
        if (shownByCache(ctx.snapshot, namespace, name, specOf(w.quota), w.basedOn)) byQuota.delete(name);
      }
      if (byQuota.size === 0) this.writes.delete(namespace);
    }
    const entry = this.shares.get(namespace);
    if (!entry) return;
    const project = ctx.snapshot.project(entry.project);
    if (!project || ctx.snapshot.namespace(namespace)?.metadata.labels?.[LABEL_PROJECT] !== entry.project) return;
    const observed = namespaceShare(ctx.snapshot, project, ctx.config.clusterName, ctx.at, namespace);
    for (const [r, q] of entry.resources) {
      const seen = observed.resources.get(r);
      if (!seen || seen.cmp(q) < 0) return;
    }
    this.forget(namespace);
  }

  /**
   * Assumes an admitted change (its quota write, and its share when it reserves one) until the
   * cache shows it or it expires.
   */
  assume(verdict: Verdict, request: AdmissionRequest): void {
    const a = verdict.allocation;
    if (!a || verdict.violations.length > 0) return;
    if (a.quotaWrite) {
      let byQuota = this.writes.get(a.namespace);
      if (!byQuota) this.writes.set(a.namespace, (byQuota = new Map()));
      const write = a.quotaWrite.quota ? { spec: a.quotaWrite.quota.spec ?? {} } : null;
      const prev = byQuota.get(a.quotaWrite.name);
      const basedOn = (request.oldObject as ResourceQuotaObject | undefined)?.metadata?.resourceVersion;
      const admitted = { quota: a.quotaWrite.quota, ...(basedOn !== undefined ? { basedOn } : {}) };
      // The write that can land last stays the one the cache must show (landsLast).
      const last = prev ? landsLast<{ quota: ResourceQuotaObject | null; basedOn?: string }>(prev, admitted) : admitted;
      byQuota.set(a.quotaWrite.name, {
        project: a.project,
        quota: last.quota,
        versions: unionVersions(prev?.versions ?? [], writeVersions(request, write)),
        ...(last.basedOn !== undefined ? { basedOn: last.basedOn } : {}),
        expires: this.now() + this.ttlMs,
      });
    }
    if (!reserves(verdict, request)) return;
    const prev = this.shares.get(a.namespace);
    const resources = prev ? maxResources(prev.resources, a.resources) : a.resources;
    if (prev && prev.project !== a.project) this.forget(a.namespace);
    this.shares.set(a.namespace, { project: a.project, resources, expires: this.now() + this.ttlMs });
    let names = this.sharesByProject.get(a.project);
    if (!names) this.sharesByProject.set(a.project, (names = new Set()));
    names.add(a.namespace);
  }
}
