/**
 * Step CR3: the Project's status from the snapshot (status.ts), written only when it changed, with
 * Events on transitions.
 */
import type { Project, ProjectCondition } from '../../validate/types.js';
import { CONDITION_QUOTA_WITHIN_BUDGET, computeStatus, statusEquals, type CascadeReport } from '../status.js';
import { withDeletionConditions } from '../deletion/conditions.js';
import { type StepContext, rfc3339 } from './context.js';

/**
 * CR3: writes the status only when it differs (ignoring lastTransitionTime). `deletion`: the conditions
 * of a deleting Project's lifecycle (ADR 0096), set over the computed ones.
 */
export async function writeStatus(
  c: StepContext,
  project: Project,
  signal: AbortSignal,
  cascade?: CascadeReport,
  deletion: readonly ProjectCondition[] = [],
): Promise<Project> {
  const at = c.clock.now();
  const now = rfc3339(new Date(at));
  const computed = computeStatus({
    project,
    snapshot: c.informers.snapshot,
    cluster: c.config.clusterName,
    at,
    now,
    ...(cascade ? { cascade } : {}),
  });
  const status = withDeletionConditions(computed, project.status, deletion, now, project.metadata.generation);
  if (statusEquals(project.status, status)) return project;
  signal.throwIfAborted();
  const updated = await c.api.replaceStatus(project, status);
  c.informers.applyWritten('Project', updated as never);
  // Events on transitions only (a status written again for another reason repeats none).
  const budget = (s: Project['status']) => s?.conditions?.find((c) => c.type === CONDITION_QUOTA_WITHIN_BUDGET);
  const overBefore = budget(project.status)?.status === 'False';
  const over = budget(status);
  if (over?.status === 'False' && !overBefore)
    await c.event(updated, { type: 'Warning', reason: 'OverBudget', message: over.message ?? 'quota over budget' });
  if (status?.phase === 'Terminating' && project.status?.phase !== 'Terminating') {
    await c.event(updated, {
      type: 'Normal',
      reason: 'CascadeStarted',
      message: `deleting the project's namespaces: ${cascade?.remaining.map((r) => r.name).join(', ') || 'none left'}`,
    });
  }
  return updated;
}
