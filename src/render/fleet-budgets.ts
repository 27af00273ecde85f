/**
 * The hub's FleetBudgets in a render for the fleet's hub (`--fleet-hub`, or the Application's plugin
 * env FLEET_HUB=true: docs/fleet.md, docs/adr/0039-fleet-budgets.md): one per Project with `spec.fleet`,
 * its spec from git, with the finalizer tenantgate.io/fleet-shares so that Argo CD pruning it (the
 * Project lost spec.fleet or was deleted) only marks it while a member holds a share. Pure.
 */
import { fleetBudgetFor, FLEET_FINALIZER } from '../fleet/fleet-budget-object.js';
import { LABEL_MANAGED_BY, MANAGED_BY, type Project } from '../validate/types.js';

export function* hubFleetBudgets(
  projects: readonly Project[],
  at: number,
  wave: string,
  waveAnnotation: string,
): Generator<Record<string, unknown> & { apiVersion: string; kind: string; metadata: Record<string, unknown> }> {
  for (const project of projects) {
    const budget = fleetBudgetFor(project, at);
    if (!budget) continue;
    yield {
      ...budget,
      metadata: {
        ...budget.metadata,
        labels: { ...budget.metadata.labels, [LABEL_MANAGED_BY]: MANAGED_BY },
        annotations: { [waveAnnotation]: wave },
        finalizers: [FLEET_FINALIZER],
      },
    };
  }
}
