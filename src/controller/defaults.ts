/**
 * CR4, the plan: which project namespaces get a ResourceQuota from the controller, and which cannot
 * because the headroom does not allow it. Pure: reads a Snapshot, does no I/O. Uses the rule
 * engine's allocation functions, so the controller and the webhook agree on what fits.
 */
// render's name too: an Argo CD sync of the declared quota takes ours over
import { DEFAULT_QUOTA_NAME } from '../validate/types.js';
import type { Quantity } from '../quantity/quantity.js';
import { budgetOf, defaultsOf } from '../validate/budget/layers.js';
import { clusterShares } from '../validate/shares.js';
import { effectiveQuota, isUnscoped, namespaceAllocation, namespaceIsTerminating } from '../validate/quota-hold.js';
import { parseResources } from '../validate/resource-lists.js';
import type { Resources } from '../validate/types.js';
import type { DeclaredNamespace, Project, ResourceList, ResourceQuotaObject, Snapshot } from '../validate/types.js';
import {
  hasTiers,
  OTHER_TIERS_QUOTA_NAME,
  otherTiersScopeSelector,
  quotaTier,
  tierKey,
  tierNames,
  tierQuotasOf,
} from '../validate/tiers.js';
import { canonicalJson } from '../canonical-json.js';
import { byMetadataName } from '../order.js';

export interface DefaultQuotaPlan {
  /**
   * Namespaces to give a quota, with its `hard`: the default quota (no `name`), or with tiers a tier
   * quota or the other-tiers quota (its `name` and `scopeSelector`, tiers.ts tierQuotasOf).
   */
  create: Array<{ namespace: string; hard: ResourceList; name?: string; scopeSelector?: unknown }>;
  /** Namespaces without a quota that cannot get one, and why. */
  blocked: Map<string, string>;
  /**
   * With tiers: other-tiers quotas whose scope no longer leaves out exactly the declared tiers, as
   * they should be (tiers.ts).
   */
  replace: ResourceQuotaObject[];
}

/** A declared namespace is placed on this cluster when it names no cluster or names this one. */
export function declaredHere(project: Project, cluster: string): DeclaredNamespace[] {
  return (project.spec.namespaces ?? []).filter(
    (ns) => ns.cluster === undefined || ns.cluster === '' || ns.cluster === cluster,
  );
}

/** The quota a namespace should have: its declared quota, else `namespaceDefaults.quota` (as render emits it). */
export function expectedQuota(project: Project, declared: DeclaredNamespace | undefined): ResourceList | undefined {
  const hard = declared?.quota?.hard ?? project.spec.namespaceDefaults?.quota?.hard;
  return hard && Object.keys(hard).length > 0 ? hard : undefined;
}

export function planDefaultQuotas(project: Project, snapshot: Snapshot, cluster: string, at: number): DefaultQuotaPlan {
  const plan: DefaultQuotaPlan = { create: [], blocked: new Map(), replace: [] };
  const name = project.metadata.name ?? '';
  if (project.metadata.deletionTimestamp) return plan;
  const budget = budgetOf(project, cluster, at);
  const defaults = defaultsOf(project);
  const declared = new Map(declaredHere(project, cluster).map((d) => [d.name, d]));
  // Running allocation per namespace; updated as quotas are planned so two namespaces cannot both take the last room.
  const shares = new Map(clusterShares(snapshot, project, cluster, at).map((s) => [s.namespace, s.resources]));
  for (const ns of [...snapshot.namespacesOfProject(name)].sort(byMetadataName)) {
    const nsName = ns.metadata.name ?? '';
    if (namespaceIsTerminating(ns)) continue;
    const quotas = [...snapshot.quotasInNamespace(nsName)];
    if (hasTiers(project)) planTierQuotas(project, nsName, quotas, declared.get(nsName), budget, shares, plan);
    if (quotas.some(isUnscoped) || quotas.some((q) => q.metadata.name === DEFAULT_QUOTA_NAME)) continue;
    const hard = expectedQuota(project, declared.get(nsName));
    if (!hard) {
      plan.blocked.set(
        nsName,
        `no quota to create: the project declares neither a quota for it nor namespaceDefaults.quota`,
      );
      continue;
    }
    const candidate = namespaceAllocation(parseResources(hard), budget, defaults);
    const short = notFitting(candidate, budget, othersThan(shares, nsName));
    if (short.length > 0) {
      plan.blocked.set(nsName, `quota ${DEFAULT_QUOTA_NAME} does not fit the project budget: ${short.join(', ')}`);
      continue;
    }
    plan.create.push({ namespace: nsName, hard: { ...hard } });
    shares.set(nsName, candidate);
  }
  return plan;
}

/**
 * With tiers: each tier quota the namespace lacks (no quota counting for that tier, none of that
 * name) is planned when its tier keys fit the budget beside the other namespaces' shares; the
 * other-tiers quota (`pods@*` = 0) always fits, so a deleted one is put back on the next pass.
 */
function planTierQuotas(
  project: Project,
  nsName: string,
  quotas: ResourceQuotaObject[],
  declared: DeclaredNamespace | undefined,
  budget: Resources,
  shares: Map<string, Resources>,
  plan: DefaultQuotaPlan,
): void {
  const present = new Set(quotas.map(quotaTier));
  const names = new Set(quotas.map((q) => q.metadata.name));
  const short: string[] = [];
  const stale = quotas.find((q) => q.metadata.name === OTHER_TIERS_QUOTA_NAME && !isOtherTiersQuota(project, q));
  // The tiers changed (or the quota was edited): its scope and pods 0 as render writes them.
  if (stale)
    plan.replace.push({
      ...stale,
      spec: { hard: { pods: '0' }, scopeSelector: otherTiersScopeSelector(tierNames(project)) },
    });
  for (const t of tierQuotasOf(project, declared)) {
    if (present.has(t.tier) || names.has(t.name)) continue;
    const asked = new Map([...parseResources(t.hard)].map(([r, q]) => [tierKey(r, t.tier), q]));
    const over = notFitting(asked, budget, othersThan(shares, nsName));
    if (over.length > 0) {
      short.push(`quota ${t.name} does not fit the project budget: ${over.join(', ')}`);
      continue;
    }
    plan.create.push({ namespace: nsName, name: t.name, hard: { ...t.hard }, scopeSelector: t.scopeSelector });
    shares.set(nsName, new Map([...(shares.get(nsName) ?? []), ...[...asked].filter(([k]) => budget.has(k))]));
  }
  if (short.length > 0) plan.blocked.set(nsName, short.join('; '));
}

/** Σ of the planned shares of every namespace but `namespace`. */
function othersThan(shares: ReadonlyMap<string, Resources>, namespace: string): Map<string, Quantity> {
  const others = new Map<string, Quantity>();
  for (const [other, res] of shares) {
    if (other === namespace) continue;
    for (const [r, q] of res) others.set(r, add(others.get(r), q));
  }
  return others;
}

/** Per budgeted key `asked` names: "<key> <ask> asked, <left> of <limit> left" where ask + others exceed the budget. */
function notFitting(asked: Resources, budget: Resources, others: ReadonlyMap<string, Quantity>): string[] {
  const short: string[] = [];
  for (const [key, ask] of asked) {
    const limit = budget.get(key);
    if (!limit) continue;
    const taken = others.get(key);
    if (add(taken, ask).cmp(limit) > 0) {
      const left = taken ? limit.sub(taken) : limit;
      short.push(
        `${key} ${ask.toString()} asked, ${left.sign() < 0 ? '0' : left.toString()} of ${limit.toString()} left`,
      );
    }
  }
  return short;
}

/**
 * Whether a quota is the other-tiers quota of the project's current tiers: Exists and NotIn exactly the tiers, pods 0
 * and nothing else.
 */
function isOtherTiersQuota(project: Project, quota: ResourceQuotaObject): boolean {
  const want = otherTiersScopeSelector(tierNames(project));
  const hard = quota.spec?.hard ?? {};
  return (
    canonicalJson(quota.spec?.scopeSelector ?? null) === canonicalJson(want) &&
    Object.keys(hard).length === 1 &&
    parseResources(hard).get('pods')?.isZero() === true &&
    !quota.spec?.scopes?.length
  );
}

/** The effective quota of a namespace in the snapshot. */
export function effectiveOf(snapshot: Snapshot, namespace: string): Resources {
  return effectiveQuota(snapshot.quotasInNamespace(namespace));
}

function add(a: Quantity | undefined, b: Quantity): Quantity {
  return a ? a.add(b) : b;
}
