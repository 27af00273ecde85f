/**
 * Bursts on a namespace's quota (docs/budgets.md#bursts, docs/adr/0067-budgets.md): while a burst
 * naming a namespace is active, its `tenantgate-quota` is the declared quota plus the burst; once no
 * burst is active it goes back to the declared quota — never below what the namespace uses. What
 * still runs above the declared quota is reported (the BurstEnded condition, an Event, a metric) and
 * the quota is lowered further as usage allows. Pure: reads a Snapshot and an instant, does no I/O.
 *
 * Which resources the controller raised is recorded on the quota (annotation ANNOTATION_BURST_RAISED),
 * so that it lowers only what it raised (a quota a tenant raised within the budget is theirs) and
 * still lowers after the burst was removed from the Project.
 */
import { Quantity } from '../quantity/quantity.js';
import {
  activeBursts,
  burstApplies,
  burstNamespaces,
  burstPhase,
  describeIncrease,
  namespaceRaise,
} from '../validate/bursts.js';
import { type Project, type ResourceList, type ResourceQuotaObject, type Snapshot } from '../validate/types.js';
import { declaredHere, expectedQuota } from './defaults.js';
import {
  defaultQuotaOf,
  describeStillOver,
  liveNamespaceOf,
  planBudgetRestore,
  type GiveBack,
  type StillOver,
} from './burst-budget-restore.js';
import { cmpStr } from '../order.js';

/** On a `tenantgate-quota` the controller raised: the resources it raised, comma-separated. */
export const ANNOTATION_BURST_RAISED = 'tenantgate.io/burst-raised';
/** The field manager of the controller's burst writes (Argo CD's ignoreDifferences names it: docs/argocd.md). */
export const BURST_FIELD_MANAGER = 'tenantgate-burst';

/** A resource a namespace still uses above its declared quota after its bursts ended. */
export interface AboveDeclared {
  namespace: string;
  resource: string;
  used: string;
  declared: string;
  /** What the quota stays at meanwhile (the usage, at most what the burst raised it to). */
  held: string;
}

interface BurstQuotaWrite {
  namespace: string;
  /** The quota as cached (its resourceVersion makes the write conditional). */
  quota: ResourceQuotaObject;
  /** The quota to write (spec.hard and the annotation set). */
  desired: ResourceQuotaObject;
  kind: 'raise' | 'lower';
  /** "requests.cpu 4 → 12" per changed resource. */
  changes: string[];
  /** The active bursts raising it (names), for a raise. */
  bursts: string[];
  /** What this namespace gives back to bring the project within its budget after its bursts ended. */
  giveBacks: GiveBack[];
}

export interface BurstQuotaPlan {
  writes: BurstQuotaWrite[];
  /** After the writes: what still runs above the declared quota in namespaces whose bursts ended. */
  above: AboveDeclared[];
  /** After the writes: budgeted resources the project still allocates above its budget (bursts ended). */
  stillOver: StillOver[];
}

function raisedOf(quota: ResourceQuotaObject): string[] {
  const v = quota.metadata.annotations?.[ANNOTATION_BURST_RAISED];
  return v ? v.split(',').filter(Boolean) : [];
}

function q(v: string | number | undefined): Quantity | undefined {
  return v === undefined ? undefined : Quantity.tryParse(v);
}

/**
 * The declared quota of a namespace plus what the bursts active at `at` add to it (what the status expects it to be).
 */
export function expectedWithBursts(
  project: Project,
  cluster: string,
  namespace: string,
  declared: ResourceList | undefined,
  at: number,
): ResourceList | undefined {
  const raise = namespaceRaise(project, cluster, namespace, at);
  if (!declared || Object.keys(raise).length === 0) return declared;
  const out: ResourceList = { ...declared };
  for (const [r, add] of Object.entries(raise)) {
    const base = q(declared[r]);
    const inc = q(add);
    if (base && inc) out[r] = base.add(inc).toString();
  }
  return out;
}

/** What the controller writes to the project's burst namespaces' quotas at `at`, and what still runs above. */
export function planBurstQuotas(project: Project, snapshot: Snapshot, cluster: string, at: number): BurstQuotaPlan {
  const plan: BurstQuotaPlan = { writes: [], above: [], stillOver: [] };
  if (project.metadata.deletionTimestamp) return plan;
  const name = project.metadata.name ?? '';
  const declaredNs = new Map(declaredHere(project, cluster).map((d) => [d.name, d]));
  // The namespaces a burst names, and the project's namespaces whose quota carries a raise of ours.
  const candidates = new Set(burstNamespaces(project, cluster));
  for (const ns of snapshot.namespacesOfProject(name)) {
    const quota = defaultQuotaOf(snapshot, ns.metadata.name ?? '');
    if (quota && raisedOf(quota).length > 0) candidates.add(ns.metadata.name ?? '');
  }
  for (const namespace of [...candidates].sort(cmpStr)) {
    if (!liveNamespaceOf(snapshot, namespace, name)) continue;
    const quota = defaultQuotaOf(snapshot, namespace);
    if (!quota) continue; // CR4 creates it first
    const declared = expectedQuota(project, declaredNs.get(namespace)) ?? {};
    const raise = namespaceRaise(project, cluster, namespace, at);
    const hard = quota.spec?.hard ?? {};
    const used = quota.status?.used ?? {};
    const wasRaised = raisedOf(quota);
    const next: ResourceList = { ...hard };
    const changes: string[] = [];
    const stillRaised = new Set<string>();
    const set = (r: string, value: Quantity) => {
      const before = q(hard[r]);
      if (before && before.cmp(value) === 0) return;
      next[r] = value.toString();
      changes.push(`${r} ${before?.toString() ?? 'unset'} → ${value.toString()}`);
    };
    // Raise: declared + active bursts, for the resources the bursts raise.
    for (const [r, add] of Object.entries(raise)) {
      const base = q(declared[r]);
      const inc = q(add);
      if (!base || !inc) continue;
      set(r, base.add(inc));
      stillRaised.add(r);
    }
    // Lower what was raised and is raised no more: to the declared quota, never below what is used.
    for (const r of wasRaised) {
      if (stillRaised.has(r)) continue;
      const want = q(declared[r]);
      const current = q(hard[r]);
      if (!want || !current) continue; // no longer declared: left to the platform
      const u = q(used[r]);
      let target = u && u.cmp(want) > 0 ? u : want;
      if (target.cmp(current) > 0) target = current; // lowering never raises
      set(r, target);
      if (target.cmp(want) > 0) {
        stillRaised.add(r);
        plan.above.push({
          namespace,
          resource: r,
          used: u!.toString(),
          declared: want.toString(),
          held: target.toString(),
        });
      }
    }
    const annotation = [...stillRaised].sort(cmpStr).join(',');
    const annotationChanged = annotation !== wasRaised.slice().sort(cmpStr).join(',');
    if (changes.length === 0 && !annotationChanged) continue;
    const annotations = { ...(quota.metadata.annotations ?? {}) };
    if (annotation) annotations[ANNOTATION_BURST_RAISED] = annotation;
    else delete annotations[ANNOTATION_BURST_RAISED];
    const desired: ResourceQuotaObject = {
      ...quota,
      metadata: { ...quota.metadata, annotations },
      spec: { ...quota.spec, hard: next },
    };
    const grows = Object.keys(raise).some((r) => changes.some((c) => c.startsWith(`${r} `)));
    plan.writes.push({
      namespace,
      quota,
      desired,
      kind: grows ? 'raise' : 'lower',
      changes,
      bursts: activeBursts(project, cluster, at)
        .filter((b) => b.namespace === namespace)
        .map((b) => b.name),
      giveBacks: [],
    });
  }
  addBudgetRestore(plan, project, snapshot, cluster, at);
  return plan;
}

/**
 * Once its bursts ended, the project comes back within its budget (burst-budget-restore.ts): merged
 * into the plan's writes.
 */
function addBudgetRestore(
  plan: BurstQuotaPlan,
  project: Project,
  snapshot: Snapshot,
  cluster: string,
  at: number,
): void {
  const pending = new Map(plan.writes.map((w) => [w.namespace, w.desired.spec?.hard ?? {}] as const));
  const restore = planBudgetRestore(project, snapshot, cluster, at, pending, ANNOTATION_BURST_RAISED);
  for (const g of restore.giveBacks) {
    let w = plan.writes.find((x) => x.namespace === g.namespace);
    if (!w) {
      const quota = defaultQuotaOf(snapshot, g.namespace)!;
      w = {
        namespace: g.namespace,
        quota,
        desired: { ...quota, spec: { ...quota.spec, hard: { ...(quota.spec?.hard ?? {}) } } },
        kind: 'lower',
        changes: [],
        bursts: [],
        giveBacks: [],
      };
      plan.writes.push(w);
    }
    w.desired = {
      ...w.desired,
      spec: { ...w.desired.spec, hard: { ...(w.desired.spec?.hard ?? {}), [g.resource]: g.to.toString() } },
    };
    w.changes.push(`${g.resource} ${g.from.toString()} → ${g.to.toString()} (for the project's budget)`);
    w.giveBacks.push(g);
  }
  plan.stillOver = [...restore.stillOver];
}

/** The BurstEnded condition's message for what still runs above the declared quotas. */
export function describeAbove(above: readonly AboveDeclared[]): string {
  return above
    .map(
      (a) =>
        `${a.namespace} uses ${a.resource} ${a.used}, declared ${a.declared}: its quota stays at ${a.held} until ` +
        `usage allows lowering it`,
    )
    .join('; ');
}

const CONDITION_BURST_ENDED = 'BurstEnded';

/**
 * The Project's BurstEnded condition on this cluster, for a project with bursts (or a quota still
 * raised by one): True once a burst has ended — reason Lowered when every raised quota is back at
 * its declaration, UsageAboveQuota while a namespace still uses more (the message says what); False
 * (NoneEnded) before, naming the active and upcoming bursts. Undefined for a project without bursts.
 */
export function burstCondition(
  project: Project,
  snapshot: Snapshot,
  cluster: string,
  at: number,
): { type: string; status: 'True' | 'False'; reason: string; message: string } | undefined {
  const plan = planBurstQuotas(project, snapshot, cluster, at);
  const mine = (project.spec.bursts ?? []).filter((b) => b && burstApplies(b, cluster));
  if (mine.length === 0 && plan.above.length === 0 && plan.writes.length === 0) return undefined;
  const overBudget =
    plan.stillOver.length > 0
      ? `the project still allocates more than its budget: ${plan.stillOver.map(describeStillOver).join('; ')}; ` +
        `quotas are lowered as usage falls`
      : '';
  if (plan.above.length > 0)
    return {
      type: CONDITION_BURST_ENDED,
      status: 'True',
      reason: 'UsageAboveQuota',
      message: `a burst has ended but ${describeAbove(plan.above)}${overBudget ? `; ${overBudget}` : ''}`,
    };
  if (overBudget)
    return {
      type: CONDITION_BURST_ENDED,
      status: 'True',
      reason: 'OverBudget',
      message: `a burst has ended but ${overBudget}`,
    };
  const ended = mine.filter((b) => burstPhase(b, at) === 'ended');
  const pending = plan.writes.filter((w) => w.kind === 'lower');
  if (ended.length > 0 && activeBursts(project, cluster, at).length === 0) {
    return pending.length > 0
      ? {
          type: CONDITION_BURST_ENDED,
          status: 'True',
          reason: 'Lowering',
          message:
            `ended: ${ended.map((b) => b.name).join(', ')}; lowering ` +
            `${pending.map((w) => `${w.namespace} (${w.changes.join(', ')})`).join('; ')}`,
        }
      : {
          type: CONDITION_BURST_ENDED,
          status: 'True',
          reason: 'Lowered',
          message: `ended: ${ended.map((b) => b.name).join(', ')}; every raised quota is back at its declaration`,
        };
  }
  const active = activeBursts(project, cluster, at);
  const upcoming = mine.filter((b) => burstPhase(b, at) === 'upcoming');
  const parts = [
    active.length > 0
      ? `active: ${active.map((b) => `${b.name} (${describeIncrease(b)} until ${b.until})`).join(', ')}`
      : '',
    upcoming.length > 0 ? `upcoming: ${upcoming.map((b) => `${b.name} (from ${b.from})`).join(', ')}` : '',
    ended.length > 0 ? `ended: ${ended.map((b) => b.name).join(', ')}` : '',
  ].filter(Boolean);
  return {
    type: CONDITION_BURST_ENDED,
    status: 'False',
    reason: active.length > 0 ? 'Active' : 'NoneEnded',
    message: parts.join('; ') || 'no burst on this cluster',
  };
}
