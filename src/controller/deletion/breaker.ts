/**
 * The deletion breaker (ADR 0096, rule D2), pure: whether too many Projects began their deletion in
 * the last window — more than max(maxProjects, floor(maxShare × all Projects)), counting only those
 * after the last resume — or the `projects.tenantgate.io` CRD itself is being deleted; and what the
 * ConfigMap `tenantgate-deletion-breaker` (trippedAt, reason, projects, resumedAt) says. Instants are
 * arguments (ms since the epoch): no clock here.
 */
import type { DeletionConfig } from '../../config/config.js';
import type { Project } from '../../validate/types.js';

/** The breaker ConfigMap's data, parsed. */
export interface BreakerState {
  trippedAt?: number;
  reason?: string;
  projects?: string[];
  resumedAt?: number;
}

/** Parses the ConfigMap's data; an unreadable instant fails closed (tripped, never resumed). */
export function parseBreaker(data: Record<string, string> | undefined): BreakerState {
  if (!data) return {};
  const at = (v: string | undefined, failed: number | undefined): number | undefined => {
    if (v === undefined || v === '') return undefined;
    const ms = Date.parse(v);
    return Number.isNaN(ms) ? failed : ms;
  };
  const state: BreakerState = {};
  const trippedAt = at(data.trippedAt, 0);
  const resumedAt = at(data.resumedAt, undefined);
  if (trippedAt !== undefined) state.trippedAt = trippedAt;
  if (resumedAt !== undefined) state.resumedAt = resumedAt;
  if (data.reason) state.reason = data.reason;
  if (data.projects) state.projects = data.projects.split(',').filter((p) => p !== '');
  return state;
}

/** The data written when the breaker trips (resumedAt kept: the operator's last resume). */
export function breakerData(state: BreakerState): Record<string, string> {
  const out: Record<string, string> = {};
  if (state.trippedAt !== undefined) out.trippedAt = new Date(state.trippedAt).toISOString();
  if (state.reason) out.reason = state.reason;
  if (state.projects) out.projects = state.projects.join(',');
  if (state.resumedAt !== undefined) out.resumedAt = new Date(state.resumedAt).toISOString();
  return out;
}

/** Tripped and not resumed since. */
export function isTripped(state: BreakerState): boolean {
  return state.trippedAt !== undefined && (state.resumedAt === undefined || state.resumedAt < state.trippedAt);
}

export interface BreakerInput {
  projects: readonly Project[];
  /** The CRD's deletionTimestamp, when it has one. */
  crdDeletionTimestamp?: string;
  state: BreakerState;
  breaker: DeletionConfig['breaker'];
  at: number;
}

export type BreakerDecision =
  | { kind: 'Closed' }
  /** Already recorded as tripped (nothing to write). */
  | { kind: 'Tripped'; state: BreakerState }
  /** Trips now: write `state` (compare-and-swap), then pause. */
  | { kind: 'Trip'; state: BreakerState };

/** The most deletions one window allows. */
function breakerLimit(breaker: DeletionConfig['breaker'], allProjects: number): number {
  return Math.max(breaker.maxProjects, Math.floor(breaker.maxShare * allProjects));
}

export function decideBreaker(input: BreakerInput): BreakerDecision {
  const { state, breaker, at } = input;
  if (isTripped(state)) return { kind: 'Tripped', state };
  const after = state.resumedAt ?? -Infinity;
  const crdAt = input.crdDeletionTimestamp ? Date.parse(input.crdDeletionTimestamp) : undefined;
  if (crdAt !== undefined && !(crdAt <= after)) {
    const deleting = input.projects.filter((p) => p.metadata.deletionTimestamp).map((p) => p.metadata.name ?? '');
    return {
      kind: 'Trip',
      state: {
        ...state,
        trippedAt: at,
        reason: 'the CustomResourceDefinition projects.tenantgate.io is being deleted',
        projects: deleting.sort(),
      },
    };
  }
  const from = Math.max(after, at - breaker.windowSeconds * 1000);
  const recent = input.projects
    .filter((p) => {
      const ts = p.metadata.deletionTimestamp ? Date.parse(p.metadata.deletionTimestamp) : NaN;
      return !Number.isNaN(ts) && ts > from && ts <= at;
    })
    .map((p) => p.metadata.name ?? '')
    .sort();
  const limit = breakerLimit(breaker, input.projects.length);
  if (recent.length <= limit) return { kind: 'Closed' };
  return {
    kind: 'Trip',
    state: {
      ...state,
      trippedAt: at,
      reason: `${recent.length} Projects began their deletion within ${breaker.windowSeconds}s, more than ${limit}`,
      projects: recent,
    },
  };
}

/** Why the cascades pause, for the DeletionPaused condition and Event. */
export function pausedMessage(state: BreakerState): string {
  const when = state.trippedAt !== undefined ? ` at ${new Date(state.trippedAt).toISOString()}` : '';
  const who = state.projects?.length ? ` (${state.projects.join(', ')})` : '';
  return (
    `[D2] the deletion breaker tripped${when}: ${state.reason ?? 'reason not recorded'}${who}; ` +
    'nothing is deleted or released until an operator resumes (kubectl tenantgate resume-deletions, ' +
    'which writes resumedAt in the ConfigMap tenantgate-deletion-breaker)'
  );
}
