/**
 * Step: the owners' RoleBinding, LimitRange, isolation NetworkPolicy and AllowList of each project namespace.
 */
import { LABEL_PROJECT } from '../../validate/types.js';
import { NAMESPACE_OBJECTS } from '../namespace-objects.js';
import { describeError } from '../../kube/errors.js';
import type { GracedStep } from './graced-step.js';
import { ownNamespaces, argoCdGrace } from './context.js';

/**
 * Step: every live namespace of the project has exactly what the Project declares: the owners'
 * RoleBinding, the LimitRange, the isolation NetworkPolicy (docs/design.md), the AllowList
 * (docs/adr/0095-allow-lists-in-the-api-server.md). Missing ones are
 * created, edited ones repaired, ones the Project no longer declares removed.
 */
export const ensureNamespaceObjects: GracedStep = async (c, project, failures, signal, graced) => {
  const managed = c.managed;
  if (!managed) return;
  const projectName = project.metadata.name ?? '';
  for (const ns of ownNamespaces(c, project)) {
    const namespace = ns.metadata.name ?? '';
    for (const kind of NAMESPACE_OBJECTS) {
      const cache = managed.caches[kind.kind];
      const actual = cache.get(namespace);
      const desired = kind.desired(project, namespace, c.config);
      const where = `${kind.kind} ${namespace}/${kind.name}`;
      if (!desired) {
        if (!actual || actual.metadata.labels?.[LABEL_PROJECT] !== projectName) continue;
        signal.throwIfAborted();
        try {
          await c.api.deleteManaged(kind.kind, namespace, kind.name, actual.metadata.resourceVersion);
          cache.applyDeleted(namespace);
          c.log(`project ${projectName}: removed ${where} (no longer declared)`);
          await c.event(project, {
            type: 'Normal',
            reason: `${kind.kind}Removed`,
            message: `removed ${where}: the project no longer declares ${kind.declaredBy}`,
          });
        } catch (err) {
          failures.push(`removing ${where}: ${describeError(err)}`);
        }
        continue;
      }
      if (actual && kind.matches(actual, desired)) continue;
      // A missing one in a namespace Argo CD just created comes with its sync: not yet.
      if (!actual && argoCdGrace(c, namespace, graced) > 0) continue;
      signal.throwIfAborted();
      try {
        cache.applyWritten(await c.api.putManaged(desired, actual));
        c.log(`project ${projectName}: ${actual ? 'repaired' : 'created'} ${where}`);
        await c.event(project, {
          type: 'Normal',
          reason: `${kind.kind}${actual ? 'Repaired' : 'Created'}`,
          message: `${actual ? 'set' : 'created'} ${where} as the project declares (${kind.describe(desired)})`,
        });
      } catch (err) {
        failures.push(`writing ${where}: ${describeError(err)}`);
      }
    }
  }
};
