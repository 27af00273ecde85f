/**
 * The offline rules over Project declarations (git): schema, N1–N4, H3, T1 against a base, Q1/Q2 per
 * cluster placement. Used by `tenantgate validate` and `tenantgate render`.
 */
import type { TenantgateConfig } from '../config/config.js';
import type { Quantity } from '../quantity/quantity.js';
import { budgetPath, declaredBudgetList, defaultsOf } from './budget/layers.js';
import { parseResources } from './resource-lists.js';
import type { NamespaceShare, Resources } from './types.js';
import { checkTierNames, hasTiers, tierList, withTierBudgets } from './tiers.js';
import {
  checkNamespaceName,
  checkProjectName,
  findPrefixOverlaps,
  namespaceDeclaredByOther,
  namespaceDeclaredTwice,
  projectDeclaredTwice,
} from './rules/naming.js';
import { checkBudget, checkCoverage, checkDeclaredCount, type BudgetScope } from './rules/quota.js';
import { checkFleetBudget } from './rules/fleet.js';
import { checkCanonicalCidrs } from './rules/cidrs.js';
import { checkCostDeclaration, checkProjectCost } from './rules/cost.js';
import { checkBurstDeclarations, checkEndedBursts } from './rules/bursts.js';
import { checkLimitRangeKeys, checkQuotaKeys } from './rules/quota-keys.js';
import { checkTenantImmutable } from './rules/tenancy.js';
import { checkDeclaredGrantingMetadata } from './rules/metadata.js';
import { validateProjectSchema } from './schema/validate-schema.js';
import { checkHostnameSuffixOverlaps } from './rules/allow-lists.js';
import type { DeclaredNamespace, Project, Violation } from './types.js';

/**
 * Violations for the project at index `document` of the input list. `at` (ms since the epoch, the
 * caller's instant: `--now` or the process clock at the edge) decides which bursts have ended (B2,
 * judged against the project's version in `base`).
 */
export function validateDeclarations(
  projects: Project[],
  config: TenantgateConfig,
  at: number,
  base: Project[] = [],
): Violation[] {
  const out: Violation[] = [];
  const names = projects.map((p) => (typeof p?.metadata?.name === 'string' ? p.metadata.name : ''));
  const overlaps = findPrefixOverlaps(config, names);
  const firstIndex = new Map<string, number>();
  names.forEach((n, i) => {
    if (n && !firstIndex.has(n)) firstIndex.set(n, i);
  });
  const declaredBy = namespaceOwners(projects);
  const wellFormed: Array<{ project: Project; document: number }> = [];
  projects.forEach((project, document) => {
    const add = (vs: Violation[]) => out.push(...vs.map((v) => ({ ...v, document })));
    const schema = validateProjectSchema(project);
    add(schema);
    if (schema.length === 0) wellFormed.push({ project, document });
    if (schema.length > 0 && !isStructurallyUsable(project)) return;
    add(checkQuotaKeys(project));
    add(checkLimitRangeKeys(project));
    const name = project.metadata.name ?? '';
    add(checkProjectName(project.metadata.name));
    add(overlaps.get(document) ?? []);
    const first = firstIndex.get(name);
    if (first !== undefined && first < document) add([projectDeclaredTwice(name, first)]);
    const previous = base.find((b) => b.metadata?.name === name);
    if (previous) add(checkTenantImmutable(previous, project));
    add(checkDeclaredNamespaces(config, project, declaredBy));
    add(checkTierNames(project));
    add(checkCanonicalCidrs(project));
    add(checkPlacementBudgets(project, config, at));
    add(checkCostDeclaration(config.pricing, project));
    add(checkFleetBudget(project));
    add(checkBurstDeclarations(project));
    if (previous) add(checkEndedBursts(previous, project, at));
  });
  out.push(...checkHostnameSuffixOverlaps(config, wellFormed));
  return out;
}

function isStructurallyUsable(project: Project): boolean {
  return (
    typeof project === 'object' &&
    project !== null &&
    typeof project.metadata === 'object' &&
    project.metadata !== null &&
    typeof project.spec === 'object' &&
    project.spec !== null
  );
}

function declared(project: Project): DeclaredNamespace[] {
  return Array.isArray(project.spec.namespaces)
    ? project.spec.namespaces.filter((n) => n && typeof n.name === 'string')
    : [];
}

/** Namespace name → the names of the projects declaring it. */
function namespaceOwners(projects: Project[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const p of projects) {
    if (!p?.spec || typeof p.metadata?.name !== 'string') continue;
    for (const ns of new Set(declared(p).map((n) => n.name))) {
      const list = out.get(ns);
      if (list) list.push(p.metadata.name);
      else out.set(ns, [p.metadata.name]);
    }
  }
  return out;
}

function checkDeclaredNamespaces(
  config: TenantgateConfig,
  project: Project,
  declaredBy: Map<string, string[]>,
): Violation[] {
  const out: Violation[] = [];
  const name = project.metadata.name ?? '';
  const seen = new Map<string, number>();
  declared(project).forEach((ns, i) => {
    const path = ['spec', 'namespaces', i, 'name'];
    out.push(...checkNamespaceName(config, name, ns.name, path));
    const key = `${ns.cluster ?? ''}/${ns.name}`;
    const first = seen.get(key);
    if (first !== undefined) out.push(namespaceDeclaredTwice(name, ns.name, path, first, i));
    seen.set(key, i);
    for (const other of declaredBy.get(ns.name) ?? [])
      if (other !== name) out.push(namespaceDeclaredByOther(name, ns.name, path, other));
    out.push(...checkDeclaredGrantingMetadata(name, ns.name, i, ns));
  });
  const max = project.spec.maxNamespaces;
  if (typeof max === 'number') {
    for (const cluster of placementClusters(project))
      out.push(...checkDeclaredCount(name, cluster, namespacesOn(project, cluster).length, max));
  }
  return out;
}

/** Clusters to check offline: every one named in spec.clusters or a namespace's cluster, plus the unnamed one. */
function placementClusters(project: Project): string[] {
  const named = new Set<string>(Object.keys(project.spec.clusters ?? {}));
  for (const ns of declared(project)) if (ns.cluster) named.add(ns.cluster);
  return ['', ...[...named].sort()];
}

/** Declared namespaces that exist on `cluster` ('' = an unnamed cluster: only those without `cluster`). */
export function namespacesOn(project: Project, cluster: string): DeclaredNamespace[] {
  return declared(project).filter((ns) => !ns.cluster || ns.cluster === cluster);
}

function checkPlacementBudgets(project: Project, config: TenantgateConfig, at: number): Violation[] {
  const out: Violation[] = [];
  const sink: Violation[] = [];
  const defaults = defaultsOf(project);
  const name = project.metadata.name ?? '';
  const tiered = hasTiers(project);
  for (const cluster of placementClusters(project)) {
    const scope: BudgetScope = {
      project: name,
      cluster,
      at,
      budget: parseResources(withTierBudgets(project, declaredBudgetList(project, cluster)), [], sink),
      budgetPath: budgetPath(project, cluster),
    };
    if (scope.budget.size === 0) continue;
    const shares: NamespaceShare[] = [];
    declared(project).forEach((ns, i) => {
      if (ns.cluster && ns.cluster !== cluster) return;
      // With tiers, the namespace's tier quotas count under tier keys (its own tiers, else
      // namespaceDefaults.tiers; tiers.ts).
      const own = parseResources(
        tiered ? { ...ns.quota?.hard, ...tierList(ns.tiers ?? {}) } : ns.quota?.hard,
        [],
        sink,
      );
      const effective = new Map<string, Quantity>(own);
      let defaulted = false;
      for (const r of scope.budget.keys()) {
        if (!effective.has(r) && defaults.has(r)) {
          effective.set(r, defaults.get(r)!);
          defaulted = true;
        }
      }
      const path = ns.quota ? ['spec', 'namespaces', i, 'quota'] : ['spec', 'namespaces', i, 'name'];
      const subject = `namespace ${ns.name}${ns.quota ? '' : ' (namespaceDefaults)'}`;
      const uncovered = checkCoverage(scope, subject, effective, path);
      if (!out.some((v) => v.rule === 'Q2' && v.path?.join('/') === path.join('/'))) out.push(...uncovered);
      shares.push({ namespace: ns.name, resources: restrict(effective, scope.budget), defaulted });
    });
    out.push(...checkBudget(scope, shares));
    // C1: the declared allocation on this placement, priced (without pricing, checkCostDeclaration says so once).
    if (config.pricing) out.push(...checkProjectCost(config.pricing, project, cluster, shares));
  }
  return out;
}

function restrict(resources: Resources, budget: Resources): Resources {
  return new Map([...resources].filter(([r]) => budget.has(r)));
}
