/**
 * Bursts (docs/budgets.md): time-bound increases of a project's budget, approved in git. Pure: every
 * function takes the instant it decides at (`at`, ms since the epoch); the clock is read at the edges
 * (src/clock.ts). docs/adr/0067-budgets.md has the decisions.
 */
import { canonicalJson } from '../canonical-json.js';
import { Quantity } from '../quantity/quantity.js';
import type { Burst, Project, ResourceList } from './types.js';

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
 * Per bursts list (lists from the watch caches are replaced, never edited): the parsed windows, so a
 * decision parses no date, and the raised budgets already built, by budget list and active set, with
 * the last one handed out in front (the webhook's hot path: one WeakMap lookup and three comparisons).
 */
interface ListEntry {
  windows: ReadonlyArray<Window | undefined>;
  byBudget: WeakMap<ResourceList, Map<number | string, ResourceList>>;
  last?: { budget: ResourceList; key: number | string; out: ResourceList };
}
const entries = new WeakMap<readonly Burst[], ListEntry>();

function entryOf(bursts: readonly Burst[]): ListEntry {
  let e = entries.get(bursts);
  if (!e) {
    const windows = bursts.map((b) => {
      const from = instantOf(b?.from);
      const until = instantOf(b?.until);
      return from !== undefined && until !== undefined && from < until ? { from, until } : undefined;
    });
    entries.set(bursts, (e = { windows, byBudget: new WeakMap() }));
  }
  return e;
}

function windows(bursts: readonly Burst[]): ReadonlyArray<Window | undefined> {
  return entryOf(bursts).windows;
}

/** The project's bursts (none when spec.bursts is absent or not a list). */
const NO_BURSTS: readonly Burst[] = Object.freeze([]);

export function bursts(project: Project): readonly Burst[] {
  const list = project.spec?.bursts;
  return Array.isArray(list) ? list : NO_BURSTS;
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

/**
 * The next instant after `at` where a burst starts or ends (the controller requeues then);
 * undefined when none is ahead.
 */
export function nextTransition(project: Project, at: number): number | undefined {
  let next: number | undefined;
  for (const w of windows(bursts(project))) {
    if (!w) continue;
    for (const t of [w.from, w.until]) if (t > at && (next === undefined || t < next)) next = t;
  }
  return next;
}

/**
 * The budget list with the bursts active at `at` on `cluster` added: the same object when none is
 * active (no allocation), and the same object for the same project spec, budget and active set.
 * A burst adds only to resources the budget has (B1 refuses others).
 */
export function withActiveBursts(project: Project, cluster: string, budget: ResourceList, at: number): ResourceList {
  const list = bursts(project);
  if (list.length === 0) return budget;
  const entry = entryOf(list);
  const w = entry.windows;
  // The active set as a number (a bit per burst, exact up to 52 bursts), else as a string; no
  // allocation in the first case.
  let mask = 0;
  let key: number | string = 0;
  for (let i = 0; i < list.length; i++) {
    const win = w[i];
    if (!win || at < win.from || at >= win.until || !burstApplies(list[i]!, cluster)) continue;
    if (i < 52) mask += 2 ** i;
    else key = `${typeof key === 'string' ? key : ''},${i}`;
  }
  if (mask === 0 && key === 0) return budget;
  key = typeof key === 'string' ? `${mask}${key}` : mask;
  const last = entry.last;
  if (last && last.budget === budget && last.key === key) return last.out;
  let byActive = entry.byBudget.get(budget);
  if (!byActive) entry.byBudget.set(budget, (byActive = new Map()));
  let out = byActive.get(key);
  if (!out)
    byActive.set(
      key,
      (out = addBursts(
        budget,
        list.filter((b, i) => w[i] && burstApplies(b, cluster) && at >= w[i]!.from && at < w[i]!.until),
      )),
    );
  entry.last = { budget, key, out };
  return out;
}

/** `budget` plus every burst's `quota.hard`, on the resources the budget has. */
function addBursts(budget: ResourceList, active: readonly Burst[]): ResourceList {
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
  return [
    ...new Set(
      bursts(project)
        .filter((b) => b.namespace && burstApplies(b, cluster))
        .map((b) => b.namespace!),
    ),
  ].sort();
}

/** "+8 CPU" style summary of a burst's increase: `requests.cpu +8, requests.memory +32Gi`. */
export function describeIncrease(burst: Burst): string {
  return Object.keys(burst.quota?.hard ?? {})
    .sort()
    .map((r) => `${r} +${String(burst.quota.hard![r])}`)
    .join(', ');
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
 * `black-friday (added): +8 requests.cpu from 2026-12-01 to 2026-12-03 on namespace ml-serving, upcoming — Black Friday
 * traffic`.
 */
export function planBurstLines(
  before: Project | undefined,
  after: Project | undefined,
  cluster: string,
  at: number,
): string[] {
  const on = (p: Project | undefined) =>
    p ? bursts(p).filter((b) => b && typeof b.name === 'string' && burstApplies(b, cluster)) : [];
  const old = new Map(on(before).map((b) => [b.name, b]));
  const out: string[] = [];
  for (const b of on(after)) {
    const was = old.get(b.name);
    old.delete(b.name);
    const change = !was ? 'added' : canonicalJson(was) === canonicalJson(b) ? undefined : 'changed';
    const phase = burstPhase(b, at);
    if (!change && phase === 'ended') continue;
    const where = b.namespace ? ` on namespace ${b.namespace}` : '';
    out.push(
      `${b.name}${change ? ` (${change})` : ''}: ${increaseText(b)} from ${shortInstant(b.from)} to ` +
        `${shortInstant(b.until)}${where}, ${phase} — ${b.reason}`,
    );
  }
  for (const b of old.values())
    out.push(`${b.name} (removed): was ${increaseText(b)} from ${shortInstant(b.from)} to ${shortInstant(b.until)}`);
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
    out.push({
      name: b.name,
      phase,
      from: b.from,
      until: b.until,
      reason: b.reason,
      increase: { ...(b.quota?.hard ?? {}) },
      ...(b.namespace ? { namespace: b.namespace } : {}),
    });
  }
  return out;
}

/**
 * `burst black-friday (active until 2026-12-03T00:00:00Z): +8 requests.cpu on namespace ml-serving
 * — Black Friday traffic`.
 */
export function burstJsonLine(b: BurstJson): string {
  const inc = Object.keys(b.increase)
    .sort()
    .map((r) => `+${String(b.increase[r])} ${r}`)
    .join(', ');
  const when = b.phase === 'active' ? `active until ${b.until}` : `from ${b.from} until ${b.until}`;
  return `burst ${b.name} (${when}): ${inc}${b.namespace ? ` on namespace ${b.namespace}` : ''} — ${b.reason}`;
}
