/**
 * Q6 (a budget lowered below what is in use) and Q7 (a declared namespace removed while pods run in it):
 * what `tenantgate plan` finds before a change merges, beyond what the webhook would refuse at sync
 * time (docs/plan.md). Pure functions over numbers computed by src/validate/budget.ts.
 */
import type { ResourceBudget } from '../budget.js';
import type { FieldPath, Violation } from '../types.js';
import { projectOnCluster } from './quota.js';

/**
 * Q6: for every resource whose budget the change lowers, the new budget is not below what the
 * project's namespaces use now (their quotas' `status.used`). Lowering quotas frees nothing that is
 * in use, so only stopping workloads makes such a budget fit. `perNamespace`: resource → the namespaces
 * using it, for the message.
 */
export function checkBudgetBelowUse(
  project: string,
  cluster: string,
  before: readonly ResourceBudget[],
  after: readonly ResourceBudget[],
  perNamespace: (resource: string) => string,
  budgetPath: FieldPath = ['spec', 'quota', 'hard'],
): Violation[] {
  const out: Violation[] = [];
  for (const now of after) {
    if (!now.budget) continue;
    const was = before.find((r) => r.resource === now.resource)?.budget;
    if (was && now.budget.cmp(was) >= 0) continue;
    if (now.used.cmp(now.budget) <= 0) continue;
    out.push({
      rule: 'Q6',
      path: [...budgetPath, now.resource],
      message:
        `${projectOnCluster(project, cluster)}: the budget for ${now.resource} ` +
        `${was ? `goes from ${was.toString()} to` : 'becomes'} ${now.budget.toString()}, but its namespaces use ` +
        `${now.used.toString()} (${perNamespace(now.resource)}): ${now.used.sub(now.budget).toString()} over; ` +
        `lowering quotas frees nothing in use, stop workloads first`,
    });
  }
  return out;
}

/** Q7: a namespace the change removes from a cluster (no longer declared, or its project removed) still runs pods. */
export function checkRemovedNamespaceInUse(
  project: string,
  cluster: string,
  namespace: string,
  pods: { resource: string; used: string } | undefined,
  why: 'undeclared' | 'project-removed',
): Violation[] {
  if (!pods || pods.used === '0') return [];
  const cause =
    why === 'undeclared'
      ? `is no longer declared in ${projectOnCluster(project, cluster)}`
      : `belongs to ${projectOnCluster(project, cluster)}, which the change removes`;
  return [
    {
      rule: 'Q7',
      message:
        `namespace ${namespace} ${cause}, but its quota reports ${pods.resource} ${pods.used} in use: syncing with ` +
        `prune deletes the namespace and those pods; move or stop them first`,
    },
  ];
}

const WAIT_FOR_ADMIN =
  ", and the namespaces holding data wait for a platform admin's confirmation (tenantgate.io/deletion-confirmed)";

/** What one namespace a removal deletes holds (live objects when read, else its quotas' `status.used`). */
export interface NamespaceHolding {
  namespace: string;
  /** e.g. ["2 PersistentVolumeClaims", "3 running Pods"] or ["pods 3 in use"]; empty when nothing was seen. */
  holds: string[];
}

/**
 * D4 (a warning, never a refusal): a change that removes a Project from a cluster where it has
 * namespaces says what the removal deletes and that confirmations will be asked (docs/deletion.md):
 * Argo CD asks before it prunes the Project (render sets Prune=confirm), and namespaces holding data
 * then wait for a platform admin. With deletionPolicy Orphan they are released instead.
 */
export function removedProjectDeletes(
  project: string,
  cluster: string,
  namespaces: readonly NamespaceHolding[],
  policy: 'Delete' | 'Orphan',
): Violation[] {
  if (namespaces.length === 0) return [];
  const list = namespaces
    .map((n) => `${n.namespace} (${n.holds.length > 0 ? n.holds.join(', ') : 'nothing seen in it'})`)
    .join(', ');
  const where = projectOnCluster(project, cluster);
  if (policy === 'Orphan')
    return [
      {
        rule: 'D4',
        message:
          `${where} is removed: its namespaces are released, not deleted (deletionPolicy Orphan), ` +
          `with what they hold: ${list}; Argo CD asks before it prunes the Project (Prune=confirm)`,
      },
    ];
  const data = namespaces.some((n) => n.holds.length > 0);
  return [
    {
      rule: 'D4',
      message:
        `${where} is removed: its namespaces would be deleted with what they hold: ${list}; ` +
        `Argo CD asks before it prunes the Project (Prune=confirm)${data ? WAIT_FOR_ADMIN : ''}: docs/deletion.md`,
    },
  ];
}
