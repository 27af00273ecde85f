/**
 * Q5: headroom decisions that cannot overspend (SPEC §5.4).
 * - In one process, decisions of a project are serialised and what was admitted is remembered
 *   (`pending`) until the cache shows it or it expires.
 * - Across replicas, a growing allocation is first reserved in the ledger with a compare-and-swap
 *   write; the decision counts max(observed, reserved) per namespace, so a reservation only makes
 *   it stricter. Dry runs reserve nothing.
 */
import type { ReviewContext, Verdict } from '../validate/admission.js';
import { clusterShares, formatResources, maxResources, parseResources, type Resources } from '../validate/resources.js';
import { LedgerConflict, type LedgerEntry, type LedgerState, type LedgerStore } from './ledger.js';
import { handledKind, verdictFor, type AdmissionRequest } from './review.js';

export interface HeadroomGuardOptions {
  ttlMs: number;
  ledger?: LedgerStore;
  maxAttempts?: number;
  now?: () => number;
  onReservation?: (outcome: 'reserved' | 'conflict' | 'exhausted' | 'error') => void;
}

interface Pending {
  project: string;
  resources: Resources;
  expires: number;
}

export class HeadroomGuard {
  private readonly local = new Map<string, Pending>();
  private readonly ledgerCache = new Map<string, LedgerState>();
  private readonly chains = new Map<string, Promise<unknown>>();
  /** When the cache first showed an object ("ns/quota", or "ns/" for a namespace): its reservation is then spent. */
  private readonly seen = new Map<string, number>();
  private readonly now: () => number;

  constructor(private readonly options: HeadroomGuardOptions) {
    this.now = options.now ?? Date.now;
  }

  /** What this process admitted for a namespace and the cache does not show yet. */
  readonly pending = (namespace: string): Resources | undefined => {
    const entry = this.local.get(namespace);
    if (!entry) return undefined;
    if (entry.expires <= this.now()) {
      this.local.delete(namespace);
      return undefined;
    }
    return entry.resources;
  };

  get pendingCount(): number {
    return this.local.size;
  }

  /** Called on cache events: forget what the cache now shows (observed ≥ admitted). */
  observe(ctx: Pick<ReviewContext, 'snapshot' | 'config'>, namespace: string): void {
    const entry = this.local.get(namespace);
    if (!entry) return;
    const project = ctx.snapshot.project(entry.project);
    if (!project) return;
    const observed = clusterShares(ctx.snapshot, project, ctx.config.clusterName).find((s) => s.namespace === namespace);
    if (!observed) return;
    for (const [r, q] of entry.resources) {
      const seen = observed.resources.get(r);
      if (!seen || seen.cmp(q) < 0) return;
    }
    this.local.delete(namespace);
  }

  /** Called on cache ADD events of ResourceQuotas and Namespaces. */
  markSeen(namespace: string, quota?: string): void {
    this.seen.set(`${namespace}/${quota ?? ''}`, this.now());
    if (this.seen.size > 100_000) {
      const horizon = this.now() - this.options.ttlMs;
      for (const [key, at] of this.seen) if (at < horizon) this.seen.delete(key);
    }
  }

  /** A ledger entry counts until it expires or the object it reserved for has appeared. */
  private isLive(entry: LedgerEntry): boolean {
    if (entry.expires <= this.now()) return false;
    const seenAt = this.seen.get(`${entry.namespace}/${entry.quota ?? ''}`);
    return seenAt === undefined || seenAt < (entry.created ?? 0);
  }

  readonly decide = async (ctx: ReviewContext, request: AdmissionRequest): Promise<Verdict> => {
    const withLocal: ReviewContext = { ...ctx, pending: this.pending };
    const first = verdictFor(withLocal, request);
    const allocation = first.allocation;
    if (!allocation || !allocation.grows || first.violations.length > 0) return first;
    return this.serialise(allocation.project, () => this.decideGrowing(withLocal, request));
  };

  private serialise<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.chains.get(key) ?? Promise.resolve();
    const next = previous.then(fn, fn);
    const settled = next.catch(() => undefined);
    this.chains.set(key, settled);
    void settled.then(() => {
      if (this.chains.get(key) === settled) this.chains.delete(key);
    });
    return next;
  }

  private async decideGrowing(ctx: ReviewContext, request: AdmissionRequest): Promise<Verdict> {
    const ledger = this.options.ledger;
    if (!ledger) {
      const verdict = verdictFor(ctx, request);
      if (!request.dryRun) this.remember(verdict);
      return verdict;
    }
    const maxAttempts = this.options.maxAttempts ?? 10;
    let project = '';
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      const probe = verdictFor(ctx, request);
      project = probe.allocation?.project ?? '';
      let state = this.ledgerCache.get(project);
      if (!state) {
        state = await ledger.read(project);
        this.ledgerCache.set(project, state);
      }
      const live = state.entries.filter((e) => this.isLive(e));
      const reserved = (namespace: string): Resources | undefined => {
        let out = this.pending(namespace);
        for (const e of live) if (e.namespace === namespace) out = out ? maxResources(out, parseResources(e.allocation)) : parseResources(e.allocation);
        return out;
      };
      const verdict = verdictFor({ ...ctx, pending: reserved }, request);
      if (verdict.violations.length > 0 || !verdict.allocation?.grows) return verdict;
      if (request.dryRun) return verdict;
      const { namespace, resources } = verdict.allocation;
      const quota = handledKind(request) === 'ResourceQuota' ? request.name || String((request.object?.metadata as { name?: string } | undefined)?.name ?? '') : undefined;
      const entry: LedgerEntry = { namespace, quota, allocation: formatResources(resources), created: this.now(), expires: this.now() + this.options.ttlMs };
      try {
        const written = await ledger.write(project, state, [...live.filter((e) => !(e.namespace === namespace && e.quota === quota)), entry]);
        this.ledgerCache.set(project, written);
        this.options.onReservation?.('reserved');
        this.remember(verdict);
        return verdict;
      } catch (err) {
        this.ledgerCache.delete(project);
        if (!(err instanceof LedgerConflict)) {
          this.options.onReservation?.('error');
          return denyQ5(`could not reserve headroom in the ledger of project ${project}: ${(err as Error).message}`);
        }
        this.options.onReservation?.('conflict');
      }
    }
    this.options.onReservation?.('exhausted');
    return denyQ5(`project ${project}: ${maxAttempts} concurrent updates of the headroom ledger collided; retry the request`);
  }

  private remember(verdict: Verdict): void {
    const a = verdict.allocation;
    if (!a || verdict.violations.length > 0) return;
    const prev = this.local.get(a.namespace);
    const resources = prev ? maxResources(prev.resources, a.resources) : a.resources;
    this.local.set(a.namespace, { project: a.project, resources, expires: this.now() + this.options.ttlMs });
  }
}

function denyQ5(message: string): Verdict {
  return { violations: [{ rule: 'Q5', message }], warnings: [] };
}
