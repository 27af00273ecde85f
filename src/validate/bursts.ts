/**
 * Bursts (docs/budgets.md): time-bound increases of a project's budget, approved in git. Pure: every
 * function takes the instant it decides at (`at`, ms since the epoch); the clock is read at the edges
 * (src/clock.ts). docs/adr/0053-bursts.md has the decisions.
 */
import { canonicalJson } from '../canonical-json.js';
import { Quantity } from '../quantity/quantity.js';
import type { Burst, FieldPath, Project, ResourceList, Violation } from './types.js';

export type BurstPhase = 'upcoming' | 'active' | 'ended';

/** RFC 3339 with a zone (`Z` or `±hh:mm`), as the CRD's date-time format: `2026-12-01T00:00:00Z`. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/** The instant (ms since the epoch) of an RFC 3339 string; undefined when it is not one. */
export function instantOf(value: unknown): number | undefined {
  if (typeof value !== 'string' || !RFC3339.test(value)) return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
}

/** A burst's window: [from, until). Undefined when either end is not RFC 3339 or from ≥ until (B1). */
interface Window {
  from: number;
  until: number;
}

/**
 * The parsed windows of a bursts list, by list identity (lists from the watch caches are replaced,
 * never edited), so a decision parses no date: the webhook's hot path.
 */
const windowsOf = new WeakMap<readonly Burst[], ReadonlyArray<Window | undefined>>();

function windows(bursts: readonly Burst[]): ReadonlyArray<Window | undefined> {
  let w = windowsOf.get(bursts);
  if (!w) {
    w = bursts.map((b) => {
      const from = instantOf(b?.from);
      const until = instantOf(b?.until);
      return from !== undefined && until !== undefined && from < until ? { from, until } : undefined;
    });
    windowsOf.set(bursts, w);
  }
  return w;
}

function bursts(project: Project): readonly Burst[] {
  const list = project.spec?.bursts;
  return Array.isArray(list) ? list : [];
}

/** Where a burst stands at `at`; a burst whose window is not valid (B1) is never active and counts as ended. */
export function burstPhase(burst: Burst, at: number): BurstPhase {
  const from = instantOf(burst.from);
  const until = instantOf(burst.until);
  if (from === undefined || until === undefined || from >= until) return 'ended';
  return at < from ? 'upcoming' : at < until ? 'active' : 'ended';
}

/** Whether a burst raises the budget on `cluster` (every cluster when it names none). */
export function burstApplies(burst: Burst, cluster: string): boolean {
  return burst.cluster === undefined || burst.cluster === '' || burst.cluster === cluster;
}

export interface BurstClasses {
  active: Burst[];
  ended: Burst[];
  upcoming: Burst[];
}

/** The project's bursts by phase at `at`, in declaration order. */
export function classifyBursts(project: Project, at: number): BurstClasses {
  const out: BurstClasses = { active: [], ended: [], upcoming: [] };
  for (const b of bursts(project)) out[burstPhase(b, at)].push(b);
  return out;
}

/** The bursts that raise the budget on `cluster` at `at`. */
export function activeBursts(project: Project, cluster: string, at: number): Burst[] {
  return bursts(project).filter((b) => burstApplies(b, cluster) && burstPhase(b, at) === 'active');
}

/** The next instant after `at` where a burst starts or ends (the controller requeues then); undefined when none is ahead. */
export function nextTransition(project: Project, at: number): number | undefined {
  let next: number | undefined;
  for (const w of windows(bursts(project))) {
    if (!w) continue;
    for (const t of [w.from, w.until]) if (t > at && (next === undefined || t < next)) next = t;
  }
  return next;
}

/**
 * Raised budgets by bursts list, then by the budget they raise, then by the set of active bursts
 * (a bit per burst index): the same inputs give the same object, so resources.ts parses it once.
 */
const raised = new WeakMap<readonly Burst[], WeakMap<ResourceList, Map<number | string, ResourceList>>>();

/**
 * The budget list with the bursts active at `at` on `cluster` added: the same object when none is
 * active (no allocation), and the same object for the same project spec, budget and active set.
 * A burst adds only to resources the budget has (B1 refuses others).
 */
export function withActiveBursts(project: Project, cluster: string, budget: ResourceList, at: number): ResourceList {
  const list = bursts(project);
  if (list.length === 0) return budget;
  const w = windows(list);
  // The active set as a number (exact up to 52 bursts), else as a string; no allocation in the first case.
  let mask = 0;
  let key: number | string = 0;
  for (let i = 0; i < list.length; i++) {
    const win = w[i];
    if (!win || at < win.from || at >= win.until || !burstApplies(list[i]!, cluster)) continue;
    if (i < 52) mask += 2 ** i;
    else key = `${typeof key === 'string' ? key : ''},${i}`;
  }
  if (mask === 0 && key === 0) return budget;
  if (typeof key === 'string') key = `${mask}${key}`;
  else key = mask;
  let byBudget = raised.get(list);
  if (!byBudget) raised.set(list, (byBudget = new WeakMap()));
  let byActive = byBudget.get(budget);
  if (!byActive) byBudget.set(budget, (byActive = new Map()));
  let out = byActive.get(key);
  if (!out) byActive.set(key, (out = addBursts(budget, list.filter((b, i) => w[i] && burstApplies(b, cluster) && at >= w[i]!.from && at < w[i]!.until))));
  return out;
}

/** `budget` plus every burst's `quota.hard`, on the resources the budget has. */
export function addBursts(budget: ResourceList, active: readonly Burst[]): ResourceList {
  const out: ResourceList = { ...budget };
  for (const b of active) {
    for (const [r, raw] of Object.entries(b.quota?.hard ?? {})) {
      const base = Quantity.tryParse(out[r]);
      const add = Quantity.tryParse(raw);
      if (base && add) out[r] = base.add(add).toString();
    }
  }
  return out;
}

/** What the bursts active at `at` add to namespace `namespace`'s quota (empty when none). */
export function namespaceRaise(project: Project, cluster: string, namespace: string, at: number): ResourceList {
  const active = activeBursts(project, cluster, at).filter((b) => b.namespace === namespace);
  const out: ResourceList = {};
  for (const b of active) {
    for (const [r, raw] of Object.entries(b.quota?.hard ?? {})) {
      const q = Quantity.tryParse(raw);
      if (!q) continue;
      const before = Quantity.tryParse(out[r]);
      out[r] = (before ? before.add(q) : q).toString();
    }
  }
  return out;
}

/** The namespaces some burst names (active, ended or upcoming): the controller looks after their quotas. */
export function burstNamespaces(project: Project, cluster: string): string[] {
  return [...new Set(bursts(project).filter((b) => b.namespace && burstApplies(b, cluster)).map((b) => b.namespace!))].sort();
}

/** "+8 CPU" style summary of a burst's increase: `requests.cpu +8, requests.memory +32Gi`. */
export function describeIncrease(burst: Burst): string {
  return Object.keys(burst.quota?.hard ?? {})
    .sort()
    .map((r) => `${r} +${String(burst.quota.hard![r])}`)
    .join(', ');
}

/** One line per burst for plans and views: `black-friday: requests.cpu +8 from … until … (active) — reason`. */
export function describeBurst(burst: Burst, at: number): string {
  const where = [burst.namespace ? `namespace ${burst.namespace}` : '', burst.cluster ? `cluster ${burst.cluster}` : ''].filter(Boolean).join(', ');
  return `${burst.name}: ${describeIncrease(burst)} from ${burst.from} until ${burst.until}${where ? ` (${where})` : ''}, ${burstPhase(burst, at)}: ${burst.reason}`;
}

// --- rules ----------------------------------------------------------------------------------------

/** The resources a project budgets on any cluster (spec.quota.hard and every spec.clusters[].quota.hard). */
function budgetedResources(project: Project, cluster: string | undefined): Set<string> {
  const lists: Array<ResourceList | undefined> = [];
  const clusters = project.spec.clusters ?? {};
  if (cluster) lists.push(clusters[cluster]?.quota?.hard ?? project.spec.quota?.hard);
  else {
    lists.push(project.spec.quota?.hard);
    for (const c of Object.keys(clusters)) lists.push(clusters[c]?.quota?.hard);
  }
  const out = new Set<string>();
  for (const l of lists) for (const r of Object.keys(l ?? {})) out.add(r);
  return out;
}

/**
 * B1: a burst's declaration makes sense: RFC 3339 `from` and `until` with from < until, a unique name,
 * a positive increase of resources the project budgets (on the burst's cluster), and a `namespace`
 * the project declares.
 */
export function checkBurstDeclarations(project: Project): Violation[] {
  const out: Violation[] = [];
  const name = project.metadata?.name ?? '';
  const seen = new Map<string, number>();
  const declared = new Set((project.spec.namespaces ?? []).map((n) => n?.name));
  bursts(project).forEach((b, i) => {
    if (!b || typeof b !== 'object') return;
    const at = (...rest: Array<string | number>): FieldPath => ['spec', 'bursts', i, ...rest];
    const subject = `Project ${name}: spec.bursts[${i}] (${b.name})`;
    const first = seen.get(b.name);
    if (first !== undefined) out.push({ rule: 'B1', path: at('name'), message: `${subject}: name ${JSON.stringify(b.name)} is also spec.bursts[${first}]'s; burst names are unique in a project` });
    else seen.set(b.name, i);
    const from = instantOf(b.from);
    const until = instantOf(b.until);
    for (const [field, raw, ms] of [['from', b.from, from], ['until', b.until, until]] as const) {
      if (ms === undefined) out.push({ rule: 'B1', path: at(field), message: `${subject}: ${field} is ${JSON.stringify(raw)}, which is not an RFC 3339 instant (allowed: e.g. "2026-12-01T00:00:00Z")` });
    }
    if (from !== undefined && until !== undefined && from >= until) {
      out.push({ rule: 'B1', path: at('until'), message: `${subject}: until ${b.until} is not after from ${b.from}; a burst lasts from \`from\` (included) to \`until\` (excluded)` });
    }
    if (b.cluster && !project.spec.clusters?.[b.cluster]) {
      out.push({ rule: 'B1', path: at('cluster'), message: `${subject}: cluster ${JSON.stringify(b.cluster)} is not in spec.clusters (allowed: ${Object.keys(project.spec.clusters ?? {}).sort().join(', ') || 'none: leave cluster out'})` });
    }
    const budgeted = budgetedResources(project, b.cluster || undefined);
    const hard = b.quota?.hard ?? {};
    if (Object.keys(hard).length === 0) out.push({ rule: 'B1', path: at('quota', 'hard'), message: `${subject}: quota.hard is empty; a burst raises at least one resource the project budgets (${[...budgeted].sort().join(', ') || 'none'})` });
    for (const [r, raw] of Object.entries(hard)) {
      if (!budgeted.has(r)) {
        out.push({ rule: 'B1', path: at('quota', 'hard', r), message: `${subject}: quota.hard raises ${r}, which the project does not budget${b.cluster ? ` on cluster ${b.cluster}` : ''} (allowed: ${[...budgeted].sort().join(', ') || 'none'})` });
        continue;
      }
      const q = Quantity.tryParse(raw);
      if (q && q.sign() <= 0) out.push({ rule: 'B1', path: at('quota', 'hard', r), message: `${subject}: quota.hard.${r} is ${String(raw)}; a burst raises by a positive quantity` });
    }
    if (b.namespace !== undefined && !declared.has(b.namespace)) {
      out.push({ rule: 'B1', path: at('namespace'), message: `${subject}: namespace ${JSON.stringify(b.namespace)} is not declared in spec.namespaces (allowed: ${[...declared].sort().join(', ') || 'none: leave namespace out'})` });
    }
  });
  return out;
}

/**
 * B2: a burst that has ended at `at` cannot be added or changed, and a burst that had ended cannot be
 * changed (into a new window): the pull request approved it once, for its window. Unchanged or removed
 * is fine. `previous` is the Project before the change (undefined on create).
 */
export function checkEndedBursts(previous: Project | undefined, project: Project, at: number): Violation[] {
  const out: Violation[] = [];
  const name = project.metadata?.name ?? '';
  const before = new Map(bursts(previous ?? ({ spec: {} } as Project)).filter((b) => b && typeof b.name === 'string').map((b) => [b.name, b]));
  const when = new Date(at).toISOString().replace(/\.000Z$/, 'Z');
  bursts(project).forEach((b, i) => {
    if (!b || typeof b !== 'object') return;
    const old = before.get(b.name);
    if (old && canonicalJson(old) === canonicalJson(b)) return;
    const subject = `Project ${name}: spec.bursts[${i}] (${b.name})`;
    if (old && burstPhase(old, at) === 'ended') {
      out.push({ rule: 'B2', path: ['spec', 'bursts', i], message: `${subject} ended at ${old.until} and cannot be changed (now ${when}); keep it as it was or remove it, and declare a new burst with a new name for a new window` });
    } else if (burstPhase(b, at) === 'ended' && instantOf(b.until) !== undefined && instantOf(b.from) !== undefined && instantOf(b.from)! < instantOf(b.until)!) {
      out.push({ rule: 'B2', path: ['spec', 'bursts', i, 'until'], message: `${subject}: until ${b.until} has passed (now ${when}); a burst that has ended cannot be ${old ? 'changed' : 'added'}` });
    }
  });
  return out;
}

// --- plan ----------------------------------------------------------------------------------------

/** `2026-12-01` for midnight UTC, else the instant as written. */
function shortInstant(s: string): string {
  return /^\d{4}-\d{2}-\d{2}T00:00:00(\.0+)?Z$/i.test(s) ? s.slice(0, 10) : s;
}

/** "+8 requests.cpu, +32Gi requests.memory". */
function increaseText(burst: Burst): string {
  return Object.keys(burst.quota?.hard ?? {})
    .sort()
    .map((r) => `+${String(burst.quota.hard![r])} ${r}`)
    .join(', ');
}

/**
 * `tenantgate plan`'s burst lines for a project on a cluster: every burst the change adds, changes or
 * removes, and the unchanged ones that are active or upcoming at `at`:
 * `black-friday (added): +8 requests.cpu from 2026-12-01 to 2026-12-03 on namespace ml-serving, upcoming — Black Friday traffic`.
 */
export function planBurstLines(before: Project | undefined, after: Project | undefined, cluster: string, at: number): string[] {
  const on = (p: Project | undefined) => (p ? bursts(p).filter((b) => b && typeof b.name === 'string' && burstApplies(b, cluster)) : []);
  const old = new Map(on(before).map((b) => [b.name, b]));
  const out: string[] = [];
  for (const b of on(after)) {
    const was = old.get(b.name);
    old.delete(b.name);
    const change = !was ? 'added' : canonicalJson(was) === canonicalJson(b) ? undefined : 'changed';
    const phase = burstPhase(b, at);
    if (!change && phase === 'ended') continue;
    const where = b.namespace ? ` on namespace ${b.namespace}` : '';
    out.push(`${b.name}${change ? ` (${change})` : ''}: ${increaseText(b)} from ${shortInstant(b.from)} to ${shortInstant(b.until)}${where}, ${phase} — ${b.reason}`);
  }
  for (const b of old.values()) out.push(`${b.name} (removed): was ${increaseText(b)} from ${shortInstant(b.from)} to ${shortInstant(b.until)}`);
  return out;
}

// --- views ---------------------------------------------------------------------------------------

/** A burst as the budget view and the kubectl plugin show it. */
export interface BurstJson {
  name: string;
  phase: 'active' | 'upcoming';
  from: string;
  until: string;
  reason: string;
  /** What it adds to the budget. */
  increase: ResourceList;
  namespace?: string;
}

/** The project's active and upcoming bursts on `cluster` at `at` (ended ones are history: git has them). */
export function burstsJson(project: Project, cluster: string, at: number): BurstJson[] {
  const out: BurstJson[] = [];
  for (const b of bursts(project)) {
    if (!b || !burstApplies(b, cluster)) continue;
    const phase = burstPhase(b, at);
    if (phase === 'ended') continue;
    out.push({ name: b.name, phase, from: b.from, until: b.until, reason: b.reason, increase: { ...(b.quota?.hard ?? {}) }, ...(b.namespace ? { namespace: b.namespace } : {}) });
  }
  return out;
}

/** `burst black-friday (active until 2026-12-03T00:00:00Z): +8 requests.cpu on namespace ml-serving — Black Friday traffic`. */
export function burstJsonLine(b: BurstJson): string {
  const inc = Object.keys(b.increase).sort().map((r) => `+${String(b.increase[r])} ${r}`).join(', ');
  const when = b.phase === 'active' ? `active until ${b.until}` : `from ${b.from} until ${b.until}`;
  return `burst ${b.name} (${when}): ${inc}${b.namespace ? ` on namespace ${b.namespace}` : ''} — ${b.reason}`;
}
