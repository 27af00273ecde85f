/**
 * The quota-version algebra of the headroom guard (docs/design.md, "Headroom under concurrency"): a
 * ResourceQuota with admitted writes the cache may not show yet may have any of several specs, or be
 * absent. These functions say what the rules count for it: the envelope of its versions, the lowest a
 * namespace's quotas may hold as any replica counts them, and the ceilings where a possibly-absent
 * quota leaves a resource uncovered (docs/adr/0002-rule-engine.md).
 * Pure: the snapshot and the recorded versions are arguments.
 */
import type { Quantity } from '../../quantity/quantity.js';
import type { LedgerEntry, LedgerQuotaWrite } from '../../ledger/ledger.js';
import { quotaTier } from '../../validate/tiers.js';
import { countedHard, type QuotaOverlay } from '../../validate/quota-hold.js';
import { formatResources, parseResources } from '../../validate/resource-lists.js';
import type { Resources } from '../../validate/types.js';
import type { ResourceQuotaObject, Snapshot } from '../../validate/types.js';
import type { AdmissionRequest } from '../review.js';
import { isLaterRevision } from './stream-marks.js';

/** The object Q2/Q3 see for a recorded write. */
function quotaOfWrite(namespace: string, name: string, write: LedgerQuotaWrite): ResourceQuotaObject | null {
  return write ? { metadata: { name, namespace }, spec: write.spec } : null;
}

/** A spec's identity for comparisons: its JSON (absent: `null`). For a write that lives no longer than one decision. */
export const freshSpecKey = (w: LedgerQuotaWrite): string => JSON.stringify(w === null ? null : (w.spec ?? {}));

/**
 * freshSpecKey of each recorded version, by identity: versions are never edited, and a busy quota's
 * are compared on every decision. Only for recorded versions: a WeakMap whose entries die young is
 * rebuilt from time to time (resource-lists.ts parseUncached says the same).
 */
const specKeys = new WeakMap<object, string>();

const specKey = (w: LedgerQuotaWrite): string => {
  if (w === null) return 'null';
  let key = specKeys.get(w);
  if (key === undefined) specKeys.set(w, (key = freshSpecKey(w)));
  return key;
};

/**
 * `versions` with the ones of `more` it lacks (by spec), compacted (compactVersions): a quota written
 * many times within the TTL (a busy project raising it step by step) keeps a bounded list.
 */
export function unionVersions(
  versions: readonly LedgerQuotaWrite[],
  more: readonly LedgerQuotaWrite[],
): LedgerQuotaWrite[] {
  const out = [...versions];
  const have = new Set(out.map(specKey));
  for (const v of more) if (!have.has(specKey(v))) (have.add(specKey(v)), out.push(v));
  return out.length > 2 ? compactVersions(out) : out;
}

/**
 * The versions that decide what every reader of them counts. Each reader (envelope, lowestQuotas,
 * limitsAcross) reads a version list through per-resource maxima and minima, whether some version is
 * absent, and the scope and the limited resources of each version. So among versions with the same
 * scope and the same resources named in `spec.hard`, one that is neither the largest nor the smallest
 * for any of those resources changes nothing a reader computes, and is left out. Absent versions,
 * every scope and every set of resources keep at least one version each; a version whose limits do
 * not all parse is always kept. Order is kept (the first version of a list stays first).
 */
export function compactVersions(versions: readonly LedgerQuotaWrite[]): LedgerQuotaWrite[] {
  const classes = new Map<string, number[]>();
  versions.forEach((v, i) => {
    const key =
      v === null
        ? 'null'
        : JSON.stringify([v.spec.scopes ?? null, v.spec.scopeSelector ?? null, Object.keys(v.spec.hard ?? {}).sort()]);
    const members = classes.get(key);
    if (members) members.push(i);
    else classes.set(key, [i]);
  });
  const kept = new Set<number>();
  for (const [key, members] of classes) {
    if (key === 'null') {
      kept.add(members[0]!);
      continue;
    }
    if (members.length <= 2) {
      for (const i of members) kept.add(i);
      continue;
    }
    const parsed = members.map((i) => {
      const hard = versions[i]!.spec.hard ?? {};
      const limits = parseResources(hard);
      return limits.size === Object.keys(hard).length ? limits : undefined;
    });
    const extremes = new Map<string, { most: number; least: number }>();
    parsed.forEach((limits, m) => {
      if (!limits) return void kept.add(members[m]!);
      for (const [resource, q] of limits) {
        const e = extremes.get(resource);
        if (!e) extremes.set(resource, { most: m, least: m });
        else {
          if (q.cmp(parsed[e.most]!.get(resource)!) > 0) e.most = m;
          if (q.cmp(parsed[e.least]!.get(resource)!) < 0) e.least = m;
        }
      }
    });
    const firstParsed = parsed.findIndex((limits) => limits !== undefined);
    // The class's first parsable version stays: so does the list's first version (envelope takes its
    // scope from it), and a class limiting nothing keeps one version.
    if (firstParsed >= 0) kept.add(members[firstParsed]!);
    for (const { most, least } of extremes.values()) kept.add(members[most]!).add(members[least]!);
  }
  return versions.filter((_, i) => kept.has(i));
}

/**
 * The quota the rules count while it may be any of `versions` (docs/design.md, "Headroom under
 * concurrency"): none when one of them is absent or scoped (a missing quota lets the namespace hold
 * more and covers nothing); otherwise the resources every version limits, each at its largest limit.
 * Counting it can only make Q1 stricter (a namespace's hold is the minimum over its quotas) and Q2/Q3
 * stricter (a resource counts as covered only when every version covers it).
 */
export function envelope(
  namespace: string,
  name: string,
  versions: readonly LedgerQuotaWrite[],
): ResourceQuotaObject | null {
  if (versions.length === 1) return quotaOfWrite(namespace, name, versions[0]!);
  let hard: Map<string, Quantity> | undefined;
  // Versions that all count for the same keys (unscoped, or the same tier: tiers.ts quotaTier) keep that scope.
  let tier: string | undefined;
  let scopeSelector: unknown;
  for (const v of versions) {
    if (v === null) return null;
    const candidate = { metadata: { name, namespace }, spec: v.spec } as ResourceQuotaObject;
    const counted = quotaTier(candidate);
    if (counted === undefined || (tier !== undefined && counted !== tier)) return null;
    if (tier === undefined) ((tier = counted), (scopeSelector = v.spec.scopeSelector));
    const limits = parseResources(v.spec.hard);
    if (!hard) {
      hard = new Map(limits);
      continue;
    }
    for (const [r, q] of hard) {
      const other = limits.get(r);
      if (!other) hard.delete(r);
      else if (other.cmp(q) > 0) hard.set(r, other);
    }
  }
  return {
    metadata: { name, namespace },
    spec: { hard: formatResources(hard ?? new Map()), ...(tier ? { scopeSelector } : {}) },
  };
}

/**
 * The lowest a namespace's quotas may hold as any replica counts them: each quota with recorded
 * versions at the smallest limit any of its versions (or this cache's copy) sets per resource, present
 * when any of them is, and no status (a status lowered a moment ago may not have reached this cache).
 */
export function lowestQuotas(
  snapshot: Snapshot,
  namespace: string,
  recorded: ReadonlyMap<string, readonly LedgerQuotaWrite[]>,
): ResourceQuotaObject[] {
  const candidates = new Map<string, LedgerQuotaWrite[]>();
  for (const q of snapshot.quotasInNamespace(namespace))
    candidates.set(q.metadata.name ?? '', [{ spec: q.spec ?? {} }]);
  for (const [name, versions] of recorded) candidates.set(name, [...(candidates.get(name) ?? []), ...versions]);
  const out: ResourceQuotaObject[] = [];
  for (const [name, versions] of candidates) {
    let hard: Map<string, Quantity> | undefined;
    for (const v of versions) {
      // Under the keys each version counts for (tier quotas under tier keys): the result is a list
      // of keys, read as an unscoped quota.
      if (v === null || quotaTier({ metadata: { name }, spec: v.spec } as ResourceQuotaObject) === undefined) continue;
      hard ??= new Map();
      for (const [r, q] of countedHard({ metadata: { name }, spec: v.spec } as ResourceQuotaObject)) {
        const prev = hard.get(r);
        if (!prev || q.cmp(prev) < 0) hard.set(r, q);
      }
    }
    if (hard) out.push({ metadata: { name, namespace }, spec: { hard: formatResources(hard) } });
  }
  return out;
}

/**
 * Per budget resource that no quota of the namespace surely limits after a change of quota
 * `changed.name` (its new object, or null for a delete), the largest limit any other quota may still
 * set: undefined when there is none such (or nothing to raise). The rules count the quotas of a
 * namespace through the overlay, where a quota with a recorded write that may not have landed (a
 * create, a delete, or a version that is scoped) is absent: right for the minimum over the quotas
 * while another one limits the resource, but a namespace left with no limit at all counts
 * namespaceDefaults, and the quota may be there in truth with a far larger limit. Such a resource
 * counts at the largest limit any version of any of those quotas sets.
 */
export const uncoveredCeiling = ceiling(false, ({ surelyLowest, largest }) => (surelyLowest ? undefined : largest));

/**
 * The most a namespace may hold after a quota change when this cache may show it from before it was
 * deleted and created again: every cached quota may be absent (with every version recorded for it),
 * only the changed quota surely exists. Per budgeted resource: the smallest limit among the quotas
 * that surely limit it (their largest version), else the largest limit any version sets; a resource
 * no version limits is left to the rules (defaults). Undefined when nothing is limited.
 */
export const replacedCeiling = ceiling(true, ({ surelyLowest, largest }) => surelyLowest ?? largest);

/**
 * A ceiling after a change of quota `changed.name`. The candidates are every quota the namespace may
 * have then, with every version it may have (null: absent): the cached ones (`cachedMayBeGone`:
 * possibly absent too), those with recorded writes (the overlay's object and every recorded version),
 * and the changed one as it will be. Per budget resource, the limit `pick` takes from the limits the
 * candidates set; undefined when it takes none.
 */
function ceiling(cachedMayBeGone: boolean, pick: (limits: Limits) => Quantity | undefined) {
  return (
    snapshot: Snapshot,
    namespace: string,
    overlay: QuotaOverlay | undefined,
    recorded: ReadonlyMap<string, readonly LedgerQuotaWrite[]>,
    changed: { name: string; quota: ResourceQuotaObject | null },
    budget: Resources,
  ): Resources | undefined => {
    const candidates = new Map<string, LedgerQuotaWrite[]>();
    for (const q of snapshot.quotasInNamespace(namespace)) {
      const name = q.metadata.name ?? '';
      if (!cachedMayBeGone && overlay?.has(name)) continue;
      candidates.set(name, cachedMayBeGone ? [{ spec: q.spec ?? {} }, null] : [{ spec: q.spec ?? {} }]);
    }
    for (const name of overlay?.keys() ?? [])
      candidates.set(name, [
        ...(recorded.get(name) ?? []),
        specOf(overlay!.get(name)),
        ...(cachedMayBeGone ? [null] : []),
      ]);
    candidates.set(changed.name, [specOf(changed.quota)]);
    let out: Map<string, Quantity> | undefined;
    for (const resource of budget.keys()) {
      const limit = pick(limitsAcross(candidates, resource));
      if (limit) (out ??= new Map()).set(resource, limit);
    }
    return out;
  };
}

/** What the candidate quotas set for one resource (limitsAcross). */
interface Limits {
  surelyLowest?: Quantity;
  largest?: Quantity;
}

/**
 * For one resource across candidate quotas: the smallest of the largest limits of the quotas that
 * surely limit it (every version present, unscoped and naming it), and the largest limit any version sets.
 */
function limitsAcross(candidates: ReadonlyMap<string, readonly LedgerQuotaWrite[]>, resource: string): Limits {
  let surelyLowest: Quantity | undefined;
  let largest: Quantity | undefined;
  for (const versions of candidates.values()) {
    let always = versions.length > 0;
    let mostOfThis: Quantity | undefined;
    for (const v of versions) {
      const limit =
        v !== null ? countedHard({ metadata: {}, spec: v.spec } as ResourceQuotaObject).get(resource) : undefined;
      if (!limit) {
        always = false;
        continue;
      }
      if (!mostOfThis || limit.cmp(mostOfThis) > 0) mostOfThis = limit;
    }
    if (mostOfThis && (!largest || mostOfThis.cmp(largest) > 0)) largest = mostOfThis;
    if (always && mostOfThis && (!surelyLowest || mostOfThis.cmp(surelyLowest) < 0)) surelyLowest = mostOfThis;
  }
  return { ...(surelyLowest ? { surelyLowest } : {}), ...(largest ? { largest } : {}) };
}

/**
 * Whether this cache shows the newest write of a quota as stored: the same spec (absent for a
 * deletion) at a resourceVersion later than the object the write replaced. Then no older version can
 * come back (every later spec change is recorded too), and the cached object is the one to count.
 */
export function shownByCache(
  snapshot: Snapshot,
  namespace: string,
  name: string,
  write: LedgerQuotaWrite,
  basedOn: string | undefined,
): boolean {
  let cached: ResourceQuotaObject | undefined;
  for (const q of snapshot.quotasInNamespace(namespace)) if (q.metadata.name === name) cached = q;
  if (write === null || !cached) return false;
  if (freshSpecKey({ spec: cached.spec ?? {} }) !== specKey(write)) return false;
  if (basedOn === undefined) return true;
  const rv = Number(cached.metadata.resourceVersion);
  const base = Number(basedOn);
  return Number.isSafeInteger(rv) && Number.isSafeInteger(base) && rv > base;
}

/**
 * Of two recorded writes of one quota, `earlier` recorded before `later`, the one that can land last:
 * the one conditional on the newer resourceVersion. A write recorded later may be based on an older
 * version (its review was slower): it can no longer land once that version is gone, while the other
 * still can, so standing for it would let the cache "show" it and release the other's room. When the
 * versions do not order them (equal, or either write a create), the later record.
 */
export function landsLast<W extends { basedOn?: string }>(earlier: W, later: W): W {
  return earlier.basedOn !== undefined && later.basedOn !== undefined && isLaterRevision(earlier.basedOn, later.basedOn)
    ? earlier
    : later;
}

/**
 * Whether the cache has moved past the resourceVersion `basedOn` a write of quota `name` was conditional on:
 * it shows the quota at a later resourceVersion, or shows it absent while another quota of the namespace
 * carries a later one (the quota stream delivered the quota's deletion). Such a write can no longer land
 * as written (its precondition is gone); what it did, if it landed, the cache already shows. A write without
 * `basedOn` (a create) is never superseded here.
 */
export function supersededInCache(
  snapshot: Snapshot,
  namespace: string,
  name: string,
  basedOn: string | undefined,
): boolean {
  const base = Number(basedOn);
  if (basedOn === undefined || !Number.isSafeInteger(base)) return false;
  let passed = false;
  for (const q of snapshot.quotasInNamespace(namespace)) {
    const rv = Number(q.metadata.resourceVersion);
    const later = Number.isSafeInteger(rv) && rv > base;
    if (q.metadata.name === name && !later) return false;
    if (later) passed = true;
  }
  return passed;
}

/** The spec a request's object (or old object) gives its quota: null when there is none. */
export function specOf(object: unknown): LedgerQuotaWrite {
  const quota = object as ResourceQuotaObject | null | undefined;
  return quota ? { spec: quota.spec ?? {} } : null;
}

/** A recorded quota write: its name and versions, for the overlay. */
export interface OverlayWrite {
  quota: string;
  write: LedgerQuotaWrite;
  versions: LedgerQuotaWrite[];
  basedOn?: string;
  created: number;
}

/** The recorded quota writes of a namespace among ledger entries. */
export function overlayWrites(entries: readonly LedgerEntry[], namespace: string): OverlayWrite[] {
  const out: OverlayWrite[] = [];
  for (const e of entries) {
    if (e.namespace !== namespace || e.write === undefined || !e.quota) continue;
    out.push({
      quota: e.quota,
      write: e.write,
      versions: e.versions ?? [e.write],
      ...(e.basedOn !== undefined ? { basedOn: e.basedOn } : {}),
      created: e.created,
    });
  }
  return out;
}

/**
 * The versions a quota may have once a write is admitted: the write, and the object it replaces (none for a create).
 */
export function writeVersions(request: AdmissionRequest, write: LedgerQuotaWrite): LedgerQuotaWrite[] {
  return unionVersions([write], [request.operation === 'CREATE' ? null : specOf(request.oldObject)]);
}
