/**
 * Step: the Pod Security labels of the project's namespaces.
 */
import type { Project } from '../../validate/types.js';
import { podSecurityLabels } from '../../validate/pod-security.js';
import { describeError } from '../../kube/errors.js';
import { type StepContext, ownNamespaces } from './context.js';

/**
 * Step: every live namespace of the project carries its Pod Security labels (the Project's levels
 * over tenantgate.yaml's). The mutating webhook sets them on CREATE; this repairs a namespace made
 * before, or changed by a privileged subject, or a Project whose levels changed in git.
 */
export async function ensurePodSecurityLabels(
  c: StepContext,
  project: Project,
  failures: string[],
  signal: AbortSignal,
): Promise<void> {
  if (!c.managed) return; // the same switch as the other namespace objects (tests without them)
  const wanted = podSecurityLabels(c.config.podSecurity, project);
  for (const ns of ownNamespaces(c, project)) {
    const labels = ns.metadata.labels ?? {};
    const differ = Object.entries(wanted).filter(([k, v]) => labels[k] !== v);
    if (differ.length === 0) continue;
    signal.throwIfAborted();
    const name = ns.metadata.name ?? '';
    try {
      const updated = await c.api.setNamespaceLabels(ns, wanted);
      c.informers.applyWritten('Namespace', updated as never);
      const change = differ.map(([k, v]) => `${k}=${v} (was ${labels[k] ?? 'unset'})`).join(', ');
      c.log(`project ${project.metadata.name}: set Pod Security labels of namespace ${name}: ${change}`);
      await c.event(project, {
        type: 'Normal',
        reason: 'PodSecurityLabelsSet',
        message: `namespace ${name}: ${change}`,
      });
    } catch (err) {
      failures.push(`setting Pod Security labels of namespace ${name}: ${describeError(err)}`);
    }
  }
}
