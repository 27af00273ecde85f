/**
 * What one pass over a deleting Project does (ADR 0096), pure: paused by the breaker; release every
 * owned namespace (Orphan); or delete the namespaces that hold nothing and, once confirmed, the others.
 */
import type { DeletionPolicy, TenantgateConfig } from '../../config/config.js';
import type { NamespaceObject, Project } from '../../validate/types.js';
import { ANNOTATION_PROJECT_UID, LABEL_PROJECT } from '../../validate/types.js';
import { ANNOTATION_RELEASED_AT, LABEL_RELEASED_FROM } from './names.js';
import { describeContents, holdsNothing, type NamespaceContents } from './inventory.js';

/** spec.deletionPolicy, else tenantgate.yaml deletion.policy. */
export function deletionPolicyOf(project: Project, config: Pick<TenantgateConfig, 'deletion'>): DeletionPolicy {
  const own = (project.spec as { deletionPolicy?: unknown }).deletionPolicy;
  return own === 'Orphan' || own === 'Delete' ? own : config.deletion.policy;
}

export interface CascadePlan {
  /** Namespaces to delete now. */
  delete: string[];
  /** Namespaces that hold something and wait for the confirmation, with what they hold. */
  waiting: NamespaceContents[];
}

/** Which owned namespaces go now: the empty ones always, the others only when confirmed. */
export function planCascade(contents: readonly NamespaceContents[], confirmed: boolean): CascadePlan {
  const plan: CascadePlan = { delete: [], waiting: [] };
  for (const c of contents) {
    if (confirmed || holdsNothing(c)) plan.delete.push(c.namespace);
    else plan.waiting.push(c);
  }
  return plan;
}

/** The AwaitingConfirmation message: each waiting namespace and what it holds, and how to confirm. */
export function awaitingMessage(project: Project, waiting: readonly NamespaceContents[]): string {
  return (
    `not deleted until a platform admin confirms (annotation tenantgate.io/deletion-confirmed: ` +
    `${project.metadata.uid ?? '<uid>'} on Project ${project.metadata.name ?? ''}): ` +
    waiting.map(describeContents).join('; ')
  );
}

/** The merge patch that releases a namespace from its Project (Orphan): its contents stay. */
export function releasePatch(project: Project, ns: NamespaceObject, at: number) {
  return {
    metadata: {
      resourceVersion: ns.metadata.resourceVersion,
      labels: { [LABEL_PROJECT]: null, [LABEL_RELEASED_FROM]: project.metadata.name ?? '' },
      annotations: {
        [ANNOTATION_PROJECT_UID]: null,
        [ANNOTATION_RELEASED_AT]: `${new Date(at).toISOString().slice(0, 19)}Z`,
      },
    },
  };
}
