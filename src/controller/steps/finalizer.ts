/**
 * The cascade finalizer: put on every live Project, taken off once the cascade has deleted every
 * namespace (and the project's headroom ledger).
 */
import { FINALIZER_CASCADE, type Project, LEDGER_PREFIX } from '../../validate/types.js';
import type { CascadeReport } from '../status.js';
import type { StepContext } from './context.js';

/** Step: the cascade finalizer is on every live Project (the mutating webhook adds it too). */
export async function ensureFinalizer(c: StepContext, project: Project, signal: AbortSignal): Promise<Project> {
  if ((project.metadata.finalizers ?? []).includes(FINALIZER_CASCADE)) return project;
  signal.throwIfAborted();
  const updated = await c.api.addFinalizer(project);
  c.informers.applyWritten('Project', updated as never);
  return updated;
}

/**
 * Deleting: the ledger, then the finalizer, once every namespace of the project is gone (`released`:
 * deletionPolicy Orphan released them instead, ADR 0096).
 */
export async function removeFinalizer(
  c: StepContext,
  project: Project,
  report: CascadeReport,
  signal: AbortSignal,
  released = false,
): Promise<void> {
  // The webhook's headroom ledger of this Project goes first: a failure here retries with the
  // finalizer still on (nothing can grow a terminating project's allocation meanwhile).
  signal.throwIfAborted();
  await c.api.deleteLedger(c.config.systemNamespace, `${LEDGER_PREFIX}${project.metadata.name ?? ''}`);
  if (report.foreign.length > 0) {
    const kept = report.foreign.map((f) => `${f.name} (${f.reason})`).join(', ');
    c.log(`project ${project.metadata.name}: namespaces left in place (not the project's): ${kept}`);
    await c.event(project, {
      type: 'Warning',
      reason: 'NamespacesKept',
      message: `not deleted with the project, their project-uid is not this Project's: ${kept}`,
    });
  }
  signal.throwIfAborted();
  const updated = await c.api.removeFinalizer(project);
  // Without finalizers the API server deletes the object right away: drop it rather than cache a ghost.
  if ((updated.metadata.finalizers ?? []).length === 0) c.informers.forget('Project', updated as never);
  else c.informers.applyWritten('Project', updated as never);
  const done = released ? 'released (deletionPolicy Orphan), none deleted' : 'deleted';
  c.log(`project ${project.metadata.name}: every namespace ${done}, finalizer removed`);
  await c.event(project, {
    type: 'Normal',
    reason: 'CascadeFinished',
    message: `every namespace of the project is ${done}; finalizer removed`,
  });
}
