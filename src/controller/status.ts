/**
 * CR3: the status a Project should have, computed from the snapshot (and, while it is being deleted,
 * from the cascade's report). Pure: no I/O, no clock (the caller passes `now`). The reconciler
 * writes the result only when `statusEquals` says it differs from what the Project has.
 */
import { Quantity } from '../quantity/quantity.js';
import { budgetOf } from '../validate/budget/layers.js';
import { clusterShares, sumShares } from '../validate/shares.js';
import { formatResources, parseResources } from '../validate/resource-lists.js';
import { namespaceIsTerminating } from '../validate/quota-hold.js';
import type { Resources } from '../validate/types.js';
import {
  ANNOTATION_PROJECT_UID,
  LABEL_PROJECT,
  LABEL_TENANT,
  type NamespaceHealth,
  type NamespaceObject,
  type Project,
  type ProjectCondition,
  type ProjectStatus,
  type Snapshot,
  type DeclaredNamespace,
  type ResourceList,
} from '../validate/types.js';
import { hasTiers, isTierKey, namespaceTierList } from '../validate/tiers.js';
import { neededQuotas } from '../validate/rules/quota.js';
import { canonicalJson } from '../canonical-json.js';
import { headroomOf, usedOf } from '../validate/budget.js';
import { cmpStr } from '../order.js';
import { declaredHere, effectiveOf, expectedQuota, planDefaultQuotas } from './defaults.js';
import { burstCondition, expectedWithBursts } from './burst-quotas.js';

const CONDITION_READY = 'Ready';
export const CONDITION_QUOTA_WITHIN_BUDGET = 'QuotaWithinBudget';
const CONDITION_NAMESPACES_HEALTHY = 'NamespacesHealthy';
const CONDITION_NAMESPACES_REMAINING = 'NamespacesRemaining';

/** How many namespaces a condition message names before it says "and N more". */
const MESSAGE_LIST_LIMIT = 20;

type NamespaceStatus = NonNullable<ProjectStatus['namespaces']>[number];

/** What the cascade (CR2) found, for the status of a Project being deleted. */
export interface CascadeReport {
  /** Namespaces owned by the Project (label and project-uid match) that still exist. */
  remaining: Array<{ name: string; phase?: string; deleting: boolean; conditions: string[] }>;
  /** Namespaces labelled for the Project that are not deleted with it, and why. */
  foreign: Array<{ name: string; reason: string }>;
}

export interface StatusInput {
  project: Project;
  snapshot: Snapshot;
  /** config.clusterName: selects the per-cluster budget and the declared namespaces placed here. */
  cluster: string;
  /** RFC 3339 time used for conditions whose status flips. */
  now: string;
  /** The instant budget decisions are made at (bursts), ms since the epoch; default: `now`, parsed. */
  at?: number;
  cascade?: CascadeReport;
}

/**
 * Health of one namespace of the project (CR3). Terminating and Missing are transient and do not
 * make the project unhealthy.
 */
function namespaceHealth(
  project: Project,
  ns: NamespaceObject | undefined,
  declaredQuota: Record<string, string | number> | undefined,
  isDeclared: boolean,
  snapshot: Snapshot,
  cluster: string,
  at: number,
): { health: NamespaceHealth; message?: string } {
  const name = project.metadata.name ?? '';
  if (!ns) return { health: 'Missing', message: 'declared in spec.namespaces but does not exist' };
  if (namespaceIsTerminating(ns))
    return { health: 'Terminating', message: deletionConditions(ns).join('; ') || 'being deleted' };
  const labels = ns.metadata.labels ?? {};
  const problems: string[] = [];
  if (labels[LABEL_PROJECT] !== name)
    problems.push(`label ${LABEL_PROJECT} is ${quote(labels[LABEL_PROJECT])}, expected ${quote(name)}`);
  if (labels[LABEL_TENANT] !== project.spec.tenant)
    problems.push(`label ${LABEL_TENANT} is ${quote(labels[LABEL_TENANT])}, expected ${quote(project.spec.tenant)}`);
  const uid = ns.metadata.annotations?.[ANNOTATION_PROJECT_UID];
  if (uid !== undefined && project.metadata.uid && uid !== project.metadata.uid) {
    problems.push(
      `annotation ${ANNOTATION_PROJECT_UID} is ${quote(uid)}, not this project's uid ${project.metadata.uid}: it ` +
        `is not deleted with the project`,
    );
  }
  if (problems.length > 0) return { health: 'LabelMismatch', message: problems.join('; ') };

  const note = uid === undefined ? `no ${ANNOTATION_PROJECT_UID} annotation: not deleted with the project` : undefined;
  const budget = budgetOf(project, cluster, at);
  const effective = effectiveOf(snapshot, ns.metadata.name ?? '');
  const uncovered = [...budget.keys()].filter((r) => !effective.has(r)).sort();
  if (uncovered.length > 0) {
    const what = uncovered.some(isTierKey)
      ? `no quota covers ${uncovered.join(', ')} (it needs ${neededQuotas(uncovered)})`
      : `no unscoped ResourceQuota covers ${uncovered.join(', ')}`;
    return { health: 'QuotaMissing', message: join(what, note) };
  }
  if (isDeclared && declaredQuota) {
    const diffs: string[] = [];
    for (const [r, want] of [...parseResources(declaredQuota)].sort(([a], [b]) => cmpStr(a, b))) {
      const got = effective.get(r);
      if (!got) diffs.push(`${r} is not set (declared ${want.toString()})`);
      else if (got.cmp(want) !== 0) diffs.push(`${r} is ${got.toString()} (declared ${want.toString()})`);
    }
    if (diffs.length > 0)
      return {
        health: 'QuotaMismatch',
        message: join(`effective quota differs from the declaration: ${diffs.join(', ')}`, note),
      };
  }
  return note ? { health: 'Healthy', message: note } : { health: 'Healthy' };
}

/** The namespace controller's deletion conditions that are True, as "Type: message". */
export function deletionConditions(ns: NamespaceObject): string[] {
  return (ns.status?.conditions ?? [])
    .filter((c) => c.status === 'True' && c.type.startsWith('Namespace'))
    .map((c) => `${c.type}: ${c.message ?? c.reason ?? ''}`.trim());
}

/** A namespace still being deleted, with the conditions that hold it. */
function describeRemaining(r: { name: string; conditions: string[] }): string {
  return r.conditions.length > 0 ? `${r.name} (${r.conditions.join('; ')})` : r.name;
}

export function computeStatus(input: StatusInput): ProjectStatus {
  const { project, snapshot, cluster, cascade } = input;
  const at = input.at ?? Date.parse(input.now);
  const name = project.metadata.name ?? '';
  const generation = project.metadata.generation;
  const terminating = Boolean(project.metadata.deletionTimestamp);
  const budget = budgetOf(project, cluster, at);

  // Allocation, with the rule engine's functions (the same numbers the webhook decides with).
  const shares = clusterShares(snapshot, project, cluster, at);
  const allocated = sumShares(shares);
  const headroom = headroomOf(budget, allocated);
  const used = usedOf(
    snapshot,
    shares.map((s) => s.namespace),
  );

  // Per-namespace health.
  const namespaces: NamespaceStatus[] = [];
  if (terminating && cascade) {
    for (const r of cascade.remaining) {
      namespaces.push(
        entry(
          r.name,
          'Terminating',
          r.phase,
          r.conditions.join('; ') || (r.deleting ? 'being deleted' : 'to be deleted'),
        ),
      );
    }
    for (const f of cascade.foreign) {
      const ns = snapshot.namespace(f.name);
      namespaces.push(entry(f.name, 'LabelMismatch', ns?.status?.phase, `${f.reason}: not deleted with the project`));
    }
  } else {
    const declared = new Map(declaredHere(project, cluster).map((d) => [d.name, d]));
    const names = new Set<string>(declared.keys());
    for (const ns of snapshot.namespacesOfProject(name)) names.add(ns.metadata.name ?? '');
    const plan = terminating ? undefined : planDefaultQuotas(project, snapshot, cluster, at);
    for (const nsName of [...names].sort(cmpStr)) {
      const ns = snapshot.namespace(nsName);
      const d = declared.get(nsName);
      // A namespace a burst raises is expected at its declared quota plus the burst.
      const expected = d
        ? withTierQuotas(project, d, expectedWithBursts(project, cluster, nsName, expectedQuota(project, d), at))
        : undefined;
      let { health, message } = namespaceHealth(project, ns, expected, d !== undefined, snapshot, cluster, at);
      if (health === 'QuotaMissing') {
        const blocked = plan?.blocked.get(nsName);
        const creating = plan?.create.some((c) => c.namespace === nsName);
        if (blocked) message = `${message}; ${blocked}`;
        else if (creating) message = `${message}; a default quota is being created`;
      }
      namespaces.push(entry(nsName, health, ns?.status?.phase, message));
    }
  }
  namespaces.sort((a, b) => cmpStr(a.name, b.name));

  // Conditions.
  const conditions: ProjectCondition[] = [];
  const over = [...budget]
    .filter(([r, limit]) => (allocated.get(r)?.cmp(limit) ?? -1) > 0)
    .sort(([a], [b]) => cmpStr(a, b));
  const quotaOk = over.length === 0;
  conditions.push(
    quotaOk
      ? cond(
          CONDITION_QUOTA_WITHIN_BUDGET,
          'True',
          'WithinBudget',
          budget.size === 0
            ? 'the project declares no budget'
            : 'the namespace quotas and what the namespaces use fit the project budget',
        )
      : cond(
          CONDITION_QUOTA_WITHIN_BUDGET,
          'False',
          'OverBudget',
          over
            .map(
              ([r, limit]) =>
                `${r}: ${allocated.get(r)!.toString()} allocated${inUse(used, r)}, budget ${limit.toString()} (` +
                `${perNamespace(snapshot, shares, r)})`,
            )
            .join('; '),
        ),
  );

  const unhealthy = namespaces.filter(
    (n) => n.health !== 'Healthy' && n.health !== 'Terminating' && n.health !== 'Missing',
  );
  const transient = namespaces.filter((n) => n.health === 'Terminating' || n.health === 'Missing');
  if (terminating) {
    conditions.push(cond(CONDITION_NAMESPACES_HEALTHY, 'Unknown', 'Terminating', 'the project is being deleted'));
  } else if (unhealthy.length === 0) {
    const extra = transient.length > 0 ? `; ${describeList(transient.map((n) => `${n.name} ${n.health}`))}` : '';
    conditions.push(
      cond(
        CONDITION_NAMESPACES_HEALTHY,
        'True',
        'AllHealthy',
        `${namespaces.length - transient.length} namespaces healthy${extra}`,
      ),
    );
  } else {
    const kinds = new Set(unhealthy.map((n) => n.health));
    const reason = kinds.size === 1 ? [...kinds][0]! : 'NamespacesUnhealthy';
    conditions.push(
      cond(
        CONDITION_NAMESPACES_HEALTHY,
        'False',
        reason,
        describeList(unhealthy.map((n) => `${n.name}: ${n.health}${n.message ? ` (${n.message})` : ''}`)),
      ),
    );
  }

  if (terminating) {
    const remaining = cascade?.remaining ?? [];
    const foreign = cascade?.foreign ?? [];
    const kept =
      foreign.length > 0 ? `; not deleted: ${describeList(foreign.map((f) => `${f.name} (${f.reason})`))}` : '';
    conditions.push(
      remaining.length > 0
        ? cond(
            CONDITION_NAMESPACES_REMAINING,
            'True',
            'NamespacesRemaining',
            `waiting for ${remaining.length} namespace${remaining.length === 1 ? '' : 's'} to be deleted: ` +
              `${describeList(remaining.map(describeRemaining))}${kept}`,
          )
        : cond(
            CONDITION_NAMESPACES_REMAINING,
            'False',
            'NoNamespacesRemaining',
            `every namespace of the project is deleted${kept}`,
          ),
    );
    conditions.push(cond(CONDITION_READY, 'False', 'Terminating', 'the project is being deleted'));
  } else if (quotaOk && unhealthy.length === 0) {
    conditions.push(cond(CONDITION_READY, 'True', 'Ready', 'the project is ready'));
  } else {
    const failing = conditions.find((c) => c.status === 'False')!;
    conditions.push(
      cond(
        CONDITION_READY,
        'False',
        failing.reason === 'OverBudget' ? 'OverBudget' : 'NamespacesUnhealthy',
        failing.message,
      ),
    );
  }
  // Bursts (after Ready, which it does not decide: QuotaWithinBudget says when a namespace runs over).
  const bursts = terminating ? undefined : burstCondition(project, snapshot, cluster, at);
  if (bursts) conditions.push(cond(bursts.type, bursts.status, bursts.reason, bursts.message));
  for (const c of conditions) if (generation !== undefined) c.observedGeneration = generation;
  conditions.sort((a, b) => cmpStr(a.type, b.type));

  const ready = conditions.find((c) => c.type === CONDITION_READY)!;
  const status: ProjectStatus = {
    phase: terminating ? 'Terminating' : ready.status === 'True' ? 'Active' : 'Degraded',
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
    allocated: formatResources(allocated),
    used: formatResources(used),
    headroom: formatResources(headroom),
    namespaces,
    namespaceCount:
      terminating && cascade
        ? cascade.remaining.length + cascade.foreign.length
        : [...snapshot.namespacesOfProject(name)].length,
    conditions,
  };
  const use = budgetUse(budget, allocated);
  if (use) status.budgetUse = use;
  return withTransitionTimes(status, project.status, input.now);
}

/**
 * A declared namespace's expected quota with its tier quotas under tier keys (tiers.ts), as its
 * effective quota shows them.
 */
function withTierQuotas(
  project: Project,
  declared: DeclaredNamespace,
  expected: ResourceList | undefined,
): ResourceList | undefined {
  if (!hasTiers(project)) return expected;
  return { ...expected, ...namespaceTierList(project, declared) };
}

/** The tightest budget resource as "allocated/budget", e.g. "requests.cpu 16/20". */
export function budgetUse(budget: Resources, allocated: Resources): string | undefined {
  let best: { r: string; ratio: number } | undefined;
  for (const [r, limit] of [...budget].sort(([a], [b]) => cmpStr(a, b))) {
    const a = allocated.get(r) ?? Quantity.zero();
    const l = limit.asApproximateFloat64();
    const ratio = l > 0 ? a.asApproximateFloat64() / l : a.isZero() ? 0 : Infinity;
    if (!best || ratio > best.ratio) best = { r, ratio };
  }
  if (!best) return undefined;
  return `${best.r} ${(allocated.get(best.r) ?? Quantity.zero()).toString()}/${budget.get(best.r)!.toString()}`;
}

/** Carries lastTransitionTime over from the previous status for every condition whose status did not flip. */
export function withTransitionTimes(next: ProjectStatus, prev: ProjectStatus | undefined, now: string): ProjectStatus {
  const before = new Map((prev?.conditions ?? []).map((c) => [c.type, c]));
  for (const c of next.conditions ?? []) {
    const old = before.get(c.type);
    c.lastTransitionTime = old && old.status === c.status && old.lastTransitionTime ? old.lastTransitionTime : now;
  }
  return next;
}

/**
 * True when two statuses say the same, ignoring lastTransitionTime, key order and list order of conditions/namespaces.
 */
export function statusEquals(a: ProjectStatus | undefined, b: ProjectStatus | undefined): boolean {
  return canonicalJson(normalize(a)) === canonicalJson(normalize(b));
}

function normalize(s: ProjectStatus | undefined): unknown {
  if (!s) return {};
  const copy: Record<string, unknown> = { ...s };
  if (s.conditions) {
    copy.conditions = s.conditions
      .map((c) => {
        const { lastTransitionTime: _ignored, ...rest } = c;
        return rest;
      })
      .sort((x, y) => cmpStr(x.type, y.type));
  }
  if (s.namespaces) copy.namespaces = [...s.namespaces].sort((x, y) => cmpStr(x.name, y.name));
  for (const key of ['allocated', 'used', 'headroom'] as const) {
    // Compare quantities by value: "1000m" and "1" are the same allocation.
    const list = s[key];
    if (list)
      copy[key] = Object.fromEntries(Object.entries(list).map(([r, v]) => [r, Quantity.tryParse(v)?.toString() ?? v]));
  }
  return copy;
}

function cond(type: string, status: ProjectCondition['status'], reason: string, message: string): ProjectCondition {
  return { type, status, reason, message: message.length > 8000 ? `${message.slice(0, 7990)}…` : message };
}

function entry(
  name: string,
  health: NamespaceHealth,
  phase: string | undefined,
  message: string | undefined,
): NamespaceStatus {
  const e: NamespaceStatus = { name, health };
  if (phase) e.phase = phase;
  if (message) e.message = message;
  return e;
}

/**
 * ", 3 in use" when the namespaces use some of the resource (a namespace holds the larger of its quota and its usage).
 */
function inUse(used: Resources, r: string): string {
  const u = used.get(r);
  return u && u.sign() > 0 ? `, ${u.toString()} in use` : '';
}

function perNamespace(snapshot: Snapshot, shares: ReturnType<typeof clusterShares>, r: string): string {
  return describeList(
    shares
      .filter((s) => s.resources.has(r))
      .map((s) => {
        const quota = effectiveOf(snapshot, s.namespace).get(r);
        const held = s.resources.get(r)!;
        const why = !quota
          ? ' (default, no quota yet)'
          : held.cmp(quota) > 0
            ? ` (in use; its quota says ${quota.toString()})`
            : '';
        return `${s.namespace} ${held.toString()}${why}`;
      }),
    ', ',
  );
}

function describeList(items: string[], sep = '; '): string {
  if (items.length <= MESSAGE_LIST_LIMIT) return items.join(sep);
  return `${items.slice(0, MESSAGE_LIST_LIMIT).join(sep)}${sep}and ${items.length - MESSAGE_LIST_LIMIT} more`;
}

function join(a: string, b: string | undefined): string {
  return b ? `${a}; ${b}` : a;
}

function quote(v: string | undefined): string {
  return v === undefined ? 'unset' : JSON.stringify(v);
}
