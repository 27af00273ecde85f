/**
 * The budget promise checked from outside, on what the apiserver stores: for one project, at one
 * resourceVersion, per budgeted resource Σ over its namespaces of what each holds ≤ the budget, and
 * its live namespaces ≤ maxNamespaces. Reservations are invisible from outside, so only stored
 * objects count.
 *
 * Computed here from the raw LIST items, not through the rule engine (only Quantity's parser and
 * arithmetic are shared), so a bug in the product's share arithmetic cannot hide a real overspend.
 * A namespace holds, per resource, the largest of (docs/rules.md "Quota headroom"):
 *  - its effective quota: the smallest `spec.hard` over its unscoped ResourceQuotas that name it,
 *  - the limit the apiserver still enforces: the smallest `status.hard` over them,
 *  - what is in use: the largest `status.used`;
 * and a live namespace no unscoped quota covers for a resource counts `namespaceDefaults.quota` for
 * it (the controller is about to create that quota). A terminating namespace counts only what its
 * quotas hold: nothing can be created in it any more.
 * A namespace is the project's when it carries the project label OR its name has the project's
 * prefix: a namespace that slipped in without the label still counts.
 */
import { Quantity } from '../../../src/quantity/quantity.js';

export interface RaceProject {
  name: string;
  /** Namespace name prefix, `<name>-` by default. */
  prefix?: string;
  budget: Record<string, string>;
  defaults: Record<string, string>;
  maxNamespaces?: number;
  /** A project-wide burst active for the whole race: what it adds to the budget (checked as budget + burst). */
  burst?: Record<string, string>;
}

/** The fields of a listed Namespace the check reads (a V1Namespace fits). */
export interface ListedNamespace {
  metadata?: { name?: string; labels?: Record<string, string>; deletionTimestamp?: unknown };
}

/** The fields of a listed ResourceQuota the check reads (a V1ResourceQuota fits). */
export interface ListedQuota {
  metadata?: { name?: string; namespace?: string };
  spec?: { hard?: Record<string, string>; scopes?: string[]; scopeSelector?: unknown };
  status?: { hard?: Record<string, string>; used?: Record<string, string> };
}

export interface InvariantSample {
  /** The resourceVersion both LISTs were read at. */
  resourceVersion: string;
  /** Per budgeted resource, Σ held (canonical quantity). */
  held: Record<string, string>;
  liveNamespaces: number;
  /** Including terminating ones. */
  namespaces: number;
  /** Empty when the promise holds. */
  violations: string[];
  /** Per namespace and resource what it holds and why, for the report of a violation. */
  detail: Record<string, Record<string, string>>;
}

const PROJECT_LABEL = 'tenantgate.io/project';

function parse(what: string, raw: unknown): Quantity {
  const q = Quantity.tryParse(raw);
  if (!q) throw new Error(`${what}: ${JSON.stringify(raw)} is not a quantity`);
  return q;
}

const unscoped = (q: ListedQuota) => !(q.spec?.scopes && q.spec.scopes.length > 0) && !q.spec?.scopeSelector;

/** Smallest (`pick` -1) or largest (1) of the quotas' `field` for `resource`; undefined when none names it. */
function extreme(
  quotas: ListedQuota[],
  resource: string,
  field: (q: ListedQuota) => Record<string, string> | undefined,
  pick: -1 | 1,
): Quantity | undefined {
  let out: Quantity | undefined;
  for (const q of quotas) {
    const raw = field(q)?.[resource];
    if (raw === undefined) continue;
    const v = parse(`ResourceQuota ${q.metadata?.namespace}/${q.metadata?.name} ${resource}`, raw);
    if (!out || v.cmp(out) === pick) out = v;
  }
  return out;
}

/** Checks one consistent view (both LISTs at one resourceVersion) of the whole cluster for `project`. */
export function checkHeadroomInvariant(
  project: RaceProject,
  namespaces: ListedNamespace[],
  quotas: ListedQuota[],
  resourceVersion = '',
): InvariantSample {
  const prefix = project.prefix ?? `${project.name}-`;
  const members = namespaces.filter(
    (ns) => ns.metadata?.labels?.[PROJECT_LABEL] === project.name || (ns.metadata?.name ?? '').startsWith(prefix),
  );
  const quotasOf = new Map<string, ListedQuota[]>();
  for (const q of quotas) {
    if (!unscoped(q)) continue;
    const ns = q.metadata?.namespace ?? '';
    quotasOf.set(ns, [...(quotasOf.get(ns) ?? []), q]);
  }
  const held: Record<string, string> = {};
  const detail: Record<string, Record<string, string>> = {};
  const violations: string[] = [];
  for (const [resource, rawBudget] of Object.entries(project.budget)) {
    const declared = parse(`budget ${resource}`, rawBudget);
    const burst = project.burst?.[resource];
    const budget = burst === undefined ? declared : declared.add(parse(`burst ${resource}`, burst));
    let total = Quantity.zero();
    for (const ns of members) {
      const name = ns.metadata?.name ?? '';
      const qs = quotasOf.get(name) ?? [];
      const spec = extreme(qs, resource, (q) => q.spec?.hard, -1);
      const enforced = extreme(qs, resource, (q) => q.status?.hard, -1);
      const used = extreme(qs, resource, (q) => q.status?.used, 1);
      const live = !ns.metadata?.deletionTimestamp;
      const fallback =
        spec === undefined && live && project.defaults[resource] !== undefined
          ? parse(`namespaceDefaults ${resource}`, project.defaults[resource])
          : undefined;
      let hold = Quantity.zero();
      for (const v of [spec, enforced, used, fallback]) if (v && v.cmp(hold) > 0) hold = v;
      total = total.add(hold);
      (detail[name] ??= {})[resource] =
        `${hold.toString()} (spec ${spec?.toString() ?? '-'}, status.hard ${enforced?.toString() ?? '-'}, used ${used?.toString() ?? '-'}${fallback ? `, default ${fallback.toString()}` : ''}${live ? '' : ', terminating'})`;
    }
    held[resource] = total.toString();
    if (total.cmp(budget) > 0)
      violations.push(`${resource}: the namespaces hold ${total.toString()}, the budget is ${budget.toString()}`);
  }
  const liveNamespaces = members.filter((ns) => !ns.metadata?.deletionTimestamp).length;
  if (project.maxNamespaces !== undefined && liveNamespaces > project.maxNamespaces) {
    violations.push(
      `namespaces: ${liveNamespaces} live (${members
        .filter((ns) => !ns.metadata?.deletionTimestamp)
        .map((ns) => ns.metadata?.name)
        .join(', ')}), maxNamespaces is ${project.maxNamespaces}`,
    );
  }
  return { resourceVersion, held, liveNamespaces, namespaces: members.length, violations, detail };
}
