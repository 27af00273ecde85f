/**
 * The conditions a deleting Project carries (ADR 0096), pure: `DeletionPaused` while the breaker holds
 * every cascade, `DeletionConfirmed` False while namespaces with data wait for a confirmation, True once
 * confirmed. They are set over the status computeStatus made (status.ts knows nothing of them).
 */
import type { NamespaceContents } from './inventory.js';
import type { Project, ProjectCondition, ProjectStatus } from '../../validate/types.js';
import { awaitingMessage } from './plan.js';
import { pausedMessage, type BreakerState } from './breaker.js';
import {
  ANNOTATION_DELETION_CONFIRMED,
  CONDITION_DELETION_CONFIRMED,
  CONDITION_DELETION_PAUSED,
  REASON_AWAITING_CONFIRMATION,
  REASON_BREAKER_TRIPPED,
} from './names.js';

/** A condition message is cut where the CRD's limit would refuse it. */
const MAX_MESSAGE = 8000;

function cond(type: string, status: ProjectCondition['status'], reason: string, message: string): ProjectCondition {
  return {
    type,
    status,
    reason,
    message: message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE - 10)}…` : message,
  };
}

export function pausedCondition(state: BreakerState): ProjectCondition {
  return cond(CONDITION_DELETION_PAUSED, 'True', REASON_BREAKER_TRIPPED, pausedMessage(state));
}

export function awaitingCondition(project: Project, waiting: readonly NamespaceContents[]): ProjectCondition {
  return cond(CONDITION_DELETION_CONFIRMED, 'False', REASON_AWAITING_CONFIRMATION, awaitingMessage(project, waiting));
}

export function confirmedCondition(project: Project): ProjectCondition {
  return cond(
    CONDITION_DELETION_CONFIRMED,
    'True',
    'Confirmed',
    `the annotation ${ANNOTATION_DELETION_CONFIRMED} names this Project's uid ${project.metadata.uid ?? ''}: ` +
      'its namespaces are deleted with what they hold',
  );
}

/**
 * `status` with `extra` added (a condition of the same type replaced), each keeping its
 * lastTransitionTime from `prev` while its status did not flip, else `now`; observedGeneration as the others.
 */
export function withDeletionConditions(
  status: ProjectStatus,
  prev: ProjectStatus | undefined,
  extra: readonly ProjectCondition[],
  now: string,
  generation: number | undefined,
): ProjectStatus {
  if (extra.length === 0) return status;
  const before = new Map((prev?.conditions ?? []).map((c) => [c.type, c]));
  const added = extra.map((c) => {
    const old = before.get(c.type);
    const at = old && old.status === c.status && old.lastTransitionTime ? old.lastTransitionTime : now;
    return { ...c, lastTransitionTime: at, ...(generation !== undefined ? { observedGeneration: generation } : {}) };
  });
  const types = new Set(added.map((c) => c.type));
  const conditions = [...(status.conditions ?? []).filter((c) => !types.has(c.type)), ...added].sort((a, b) =>
    a.type < b.type ? -1 : a.type > b.type ? 1 : 0,
  );
  return { ...status, conditions };
}

/** Whether `type` has status `status` in `s`. */
export function hasCondition(s: ProjectStatus | undefined, type: string, status: ProjectCondition['status']): boolean {
  return (s?.conditions ?? []).some((c) => c.type === type && c.status === status);
}
