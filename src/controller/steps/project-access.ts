/**
 * Step (visibility: own): the Project's ClusterRole and ClusterRoleBinding.
 */
import type { Project } from '../../validate/types.js';
import { ACCESS_KINDS, desiredProjectAccess, projectAccessMatches, projectAccessName } from '../project-access.js';
import { describeError } from '../../kube/errors.js';
import { type StepContext, ownNamespaces } from './context.js';

/**
 * Step (visibility: own, docs/visibility.md): the Project's ClusterRole and ClusterRoleBinding
 * granting its owners `get` on it and on its namespaces; created, and repaired when they differ from
 * the cache. `access` exists only under visibility: own; the garbage collector removes both with the
 * Project (ownerReference), and switching to `all` leaves them in place.
 */
export async function ensureProjectAccess(
  c: StepContext,
  project: Project,
  failures: string[],
  signal: AbortSignal,
): Promise<void> {
  const access = c.access;
  if (!access) return;
  const desired = desiredProjectAccess(project, ownNamespaces(c, project));
  if (!desired) return;
  const projectName = project.metadata.name ?? '';
  const name = projectAccessName(projectName);
  for (const kind of ACCESS_KINDS) {
    const cache = access.caches[kind];
    const actual = cache.get(name);
    const want = kind === 'ClusterRole' ? desired.role : desired.binding;
    if (actual && projectAccessMatches(actual, want)) continue;
    signal.throwIfAborted();
    try {
      cache.applyWritten(await c.api.putAccess(want, actual));
      c.log(`project ${projectName}: ${actual ? 'repaired' : 'created'} ${kind} ${name}`);
      await c.event(project, {
        type: 'Normal',
        reason: `${kind}${actual ? 'Repaired' : 'Created'}`,
        message:
          `${actual ? 'set' : 'created'} ${kind} ${name}: the owners may get this Project and its namespaces ` +
          `(visibility: own)`,
      });
    } catch (err) {
      failures.push(`writing ${kind} ${name}: ${describeError(err)}`);
    }
  }
}
