/**
 * Priority tiers (docs/budgets.md): budgets per PriorityClass, realised as scoped ResourceQuotas.
 * A tier's budget and a namespace's tier quota are carried through the rule engine as resource keys
 * `<resource>@<priorityClass>` (`pods@*` for the classes that are no declared tier), so that the
 * arithmetic, coverage, ledger, status and views of plain resources serve tiers unchanged.
 * Pure; the decisions are in docs/adr/0067-budgets.md.
 */
import type {
  DeclaredNamespace,
  FieldPath,
  PriorityTiers,
  Project,
  ResourceList,
  ResourceQuotaObject,
  Violation,
} from './types.js';

/** Between a resource and its tier in a budget key: `requests.cpu@production`. */
const TIER_SEPARATOR = '@';
/** The tier of `pods@*`: every PriorityClass that is not a declared tier. */
export const OTHER_TIERS = '*';
/** The key that refuses pods of undeclared PriorityClasses: budget 0, covered by the other-tiers quota. */
export const OTHER_TIERS_PODS = `pods${TIER_SEPARATOR}${OTHER_TIERS}`;
/** The quotas tenantgate writes per tier (render and the controller): `tenantgate-quota-<tier>`. */
const TIER_QUOTA_PREFIX = 'tenantgate-quota-';
export const OTHER_TIERS_QUOTA_NAME = `${TIER_QUOTA_PREFIX}other-tiers`;
/** The scope name of ResourceQuota scope selectors matching a pod's PriorityClass. */
const PRIORITY_CLASS_SCOPE = 'PriorityClass';
/** PriorityClass names are DNS-1123 subdomains (≤ 253 characters). */
const PRIORITY_CLASS_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** `<resource>@<tier>`. */
export function tierKey(resource: string, tier: string): string {
  return `${resource}${TIER_SEPARATOR}${tier}`;
}

/** A budget key split into its resource and tier (no tier for a plain resource). Resource names never contain '@'. */
export function splitTierKey(key: string): { resource: string; tier?: string } {
  const at = key.lastIndexOf(TIER_SEPARATOR);
  return at < 0 ? { resource: key } : { resource: key.slice(0, at), tier: key.slice(at + 1) };
}

export function isTierKey(key: string): boolean {
  return key.includes(TIER_SEPARATOR);
}

/** The declared tiers of a project, sorted (none when it declares none). */
export function tierNames(project: Project): string[] {
  const tiers = project.spec.tiers;
  return tiers && typeof tiers === 'object' ? Object.keys(tiers).sort() : [];
}

export function hasTiers(project: Project): boolean {
  const tiers = project.spec.tiers;
  if (!tiers || typeof tiers !== 'object') return false;
  for (const _ in tiers) return true;
  return false;
}

/**
 * One budget list per (project spec, declared budget list): budgetList's result must be the same object for the same
 * input (its parse is cached by identity).
 */
const withTiersCache = new WeakMap<object, Map<ResourceList, ResourceList>>();

/**
 * The budget list with the tiers' budgets added: each tier's `quota.hard` under `<resource>@<tier>`,
 * and `pods@*` = 0 (pods of classes that are no tier). The same object when the project declares no
 * tiers, and the same object for the same spec and budget list otherwise.
 */
export function withTierBudgets(project: Project, budget: ResourceList): ResourceList {
  if (!hasTiers(project)) return budget;
  let bySpec = withTiersCache.get(project.spec);
  if (!bySpec) withTiersCache.set(project.spec, (bySpec = new Map()));
  let out = bySpec.get(budget);
  if (!out) bySpec.set(budget, (out = { ...budget, ...tierList(project.spec.tiers ?? {}), [OTHER_TIERS_PODS]: 0 }));
  return out;
}

/** A tiers map's quotas as one list of tier keys. */
export function tierList(tiers: PriorityTiers): ResourceList {
  const out: ResourceList = {};
  for (const tier of Object.keys(tiers).sort()) {
    const hard = tiers[tier]?.quota?.hard;
    if (hard) for (const r of Object.keys(hard)) out[tierKey(r, tier)] = hard[r]!;
  }
  return out;
}

const defaultsCache = new WeakMap<object, ResourceList>();

/**
 * `namespaceDefaults.quota.hard` with `namespaceDefaults.tiers` as tier keys and `pods@*` = 0 (the
 * other-tiers quota the controller gives every namespace); `base` itself without tiers. Cached per spec.
 */
export function withTierDefaults(project: Project, base: ResourceList | undefined): ResourceList | undefined {
  if (!hasTiers(project)) return base;
  let out = defaultsCache.get(project.spec);
  if (!out)
    defaultsCache.set(
      project.spec,
      (out = { ...(base ?? {}), ...tierList(project.spec.namespaceDefaults?.tiers ?? {}), [OTHER_TIERS_PODS]: 0 }),
    );
  return out;
}

/**
 * The tier quotas a namespace is to have: its declared `tiers`, else `namespaceDefaults.tiers`, per
 * tier (a declared namespace's tier replaces that tier's default; the other tiers keep theirs).
 */
function namespaceTiers(project: Project, declared: DeclaredNamespace | undefined): PriorityTiers {
  const out: PriorityTiers = {};
  const defaults = project.spec.namespaceDefaults?.tiers ?? {};
  const own = declared?.tiers ?? {};
  for (const tier of tierNames(project)) {
    const hard = own[tier]?.quota?.hard ?? defaults[tier]?.quota?.hard;
    if (hard && Object.keys(hard).length > 0) out[tier] = { quota: { hard } };
  }
  return out;
}

/**
 * The tier quotas of a namespace as one list of tier keys, with `pods@*` = 0 (what render and the controller write).
 */
export function namespaceTierList(project: Project, declared: DeclaredNamespace | undefined): ResourceList {
  return { ...tierList(namespaceTiers(project, declared)), [OTHER_TIERS_PODS]: 0 };
}

export function tierQuotaName(tier: string): string {
  return tier === OTHER_TIERS ? OTHER_TIERS_QUOTA_NAME : `${TIER_QUOTA_PREFIX}${tier}`;
}

/** A scope selector of one PriorityClass (a tier quota's). */
function tierScopeSelector(tier: string): {
  matchExpressions: Array<{ scopeName: string; operator: string; values?: string[] }>;
} {
  return { matchExpressions: [{ scopeName: PRIORITY_CLASS_SCOPE, operator: 'In', values: [tier] }] };
}

/**
 * The scope selector of the other-tiers quota: pods that name a PriorityClass (`Exists`) that is not a
 * declared tier (`NotIn`). `Exists` matters: `NotIn` alone also matches pods without a
 * priorityClassName (Kubernetes matches them as an absent label), and those are in no tier
 * (docs/budgets.md, test/e2e/priority-tiers.test.ts).
 */
export function otherTiersScopeSelector(tiers: readonly string[]): {
  matchExpressions: Array<{ scopeName: string; operator: string; values?: string[] }>;
} {
  return {
    matchExpressions: [
      { scopeName: PRIORITY_CLASS_SCOPE, operator: 'Exists' },
      { scopeName: PRIORITY_CLASS_SCOPE, operator: 'NotIn', values: [...tiers] },
    ],
  };
}

/** A tier quota as render and the controller write it. */
export interface TierQuota {
  name: string;
  tier: string;
  hard: ResourceList;
  scopeSelector: ReturnType<typeof tierScopeSelector>;
}

/**
 * The ResourceQuotas a namespace's tiers become: one `tenantgate-quota-<tier>` per tier with a quota
 * (scoped `PriorityClass In [tier]`), and `tenantgate-quota-other-tiers` (`pods: "0"` for every other
 * class). None when the project declares no tiers. Sorted by name.
 */
export function tierQuotasOf(project: Project, declared: DeclaredNamespace | undefined): TierQuota[] {
  const tiers = tierNames(project);
  if (tiers.length === 0) return [];
  const out: TierQuota[] = [];
  const own = namespaceTiers(project, declared);
  for (const tier of Object.keys(own).sort()) {
    out.push({
      name: tierQuotaName(tier),
      tier,
      hard: { ...own[tier]!.quota!.hard! },
      scopeSelector: tierScopeSelector(tier),
    });
  }
  out.push({
    name: OTHER_TIERS_QUOTA_NAME,
    tier: OTHER_TIERS,
    hard: { pods: '0' },
    scopeSelector: otherTiersScopeSelector(tiers),
  });
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * Which budget keys a quota's resources count under: '' for an unscoped quota (plain keys), the
 * PriorityClass for a quota scoped exactly `PriorityClass In [<one class>]`, OTHER_TIERS for one
 * scoped `PriorityClass NotIn [...]` (with or without `PriorityClass Exists`), undefined for any other
 * scoped quota (it bounds a subset of the pods and counts for nothing). Allocates nothing.
 */
export function quotaTier(quota: ResourceQuotaObject): string | undefined {
  const spec = quota.spec;
  if (!spec) return '';
  const scopes = spec.scopes;
  const selector = spec.scopeSelector as { matchExpressions?: unknown } | undefined | null;
  if (!selector) return scopes && scopes.length > 0 ? undefined : '';
  if (scopes && scopes.length > 0) return undefined;
  const exprs = selector.matchExpressions;
  if (!Array.isArray(exprs) || exprs.length === 0 || exprs.length > 2) return undefined;
  let notIn = false;
  let exists = false;
  let single: string | undefined;
  for (const e of exprs as Array<{ scopeName?: unknown; operator?: unknown; values?: unknown }>) {
    if (!e || e.scopeName !== PRIORITY_CLASS_SCOPE) return undefined;
    const values = e.values;
    if (
      e.operator === 'In' &&
      exprs.length === 1 &&
      Array.isArray(values) &&
      values.length === 1 &&
      typeof values[0] === 'string'
    )
      single = values[0];
    else if (e.operator === 'NotIn' && !notIn && Array.isArray(values) && values.length > 0) notIn = true;
    else if (e.operator === 'Exists' && !exists) exists = true;
    else return undefined;
  }
  if (single !== undefined) return single;
  return notIn ? OTHER_TIERS : undefined;
}

/** The classes an other-tiers quota leaves out (its NotIn values). */
export function otherTiersExcluded(quota: ResourceQuotaObject): string[] {
  const selector = quota.spec?.scopeSelector as
    { matchExpressions?: Array<{ operator?: string; values?: unknown }> } | undefined;
  const notIn = selector?.matchExpressions?.find((e) => e?.operator === 'NotIn');
  return Array.isArray(notIn?.values)
    ? (notIn.values as unknown[]).filter((v): v is string => typeof v === 'string')
    : [];
}

/** The budget path of a key: `spec.tiers.<tier>.quota.hard.<resource>` for a tier key, else under `plain`. */
export function keyBudgetPath(plain: FieldPath, key: string): FieldPath {
  const { resource, tier } = splitTierKey(key);
  if (tier === undefined) return [...plain, key];
  return tier === OTHER_TIERS ? ['spec', 'tiers'] : ['spec', 'tiers', tier, 'quota', 'hard', resource];
}

/**
 * S1 for tier names (the CRD checks the same with CEL): a tier is a PriorityClass name (a DNS-1123
 * subdomain of at most 253 characters) and not `other-tiers`, whose quota name is taken.
 */
export function checkTierNames(project: Project): Violation[] {
  const out: Violation[] = [];
  const name = project.metadata?.name ?? '';
  const check = (tiers: unknown, path: FieldPath, declaredOnly: boolean) => {
    if (!tiers || typeof tiers !== 'object') return;
    for (const tier of Object.keys(tiers)) {
      if (!PRIORITY_CLASS_NAME.test(tier) || tier.length > 253 || tier === 'other-tiers') {
        out.push({
          rule: 'S1',
          path: [...path, tier],
          message:
            `Project ${name}: ${[...path, tier].join('.')} is not allowed: a tier is a PriorityClass name (a ` +
            `lowercase DNS-1123 subdomain of at most 253 characters, not "other-tiers")`,
        });
      } else if (declaredOnly && !Object.hasOwn(project.spec.tiers ?? {}, tier)) {
        out.push({
          rule: 'S1',
          path: [...path, tier],
          message:
            `Project ${name}: ${[...path, tier].join('.')} names no tier of spec.tiers (declared: ` +
            `${tierNames(project).join(', ') || 'none'})`,
        });
      }
    }
  };
  check(project.spec.tiers, ['spec', 'tiers'], false);
  check(project.spec.namespaceDefaults?.tiers, ['spec', 'namespaceDefaults', 'tiers'], true);
  (Array.isArray(project.spec.namespaces) ? project.spec.namespaces : []).forEach((ns, i) =>
    check(ns?.tiers, ['spec', 'namespaces', i, 'tiers'], true),
  );
  return out;
}
