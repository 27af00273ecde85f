/**
 * Step CR4: the default quotas (and, with tiers, the tier quotas) of the project's namespaces.
 */
import {
  LABEL_MANAGED_BY,
  LABEL_PROJECT,
  MANAGED_BY,
  type ResourceQuotaObject,
  DEFAULT_QUOTA_NAME,
} from '../../validate/types.js';
import { planDefaultQuotas } from '../defaults.js';
import { tierNames } from '../../validate/tiers.js';
import { describeError } from '../../kube/errors.js';
import type { GracedStep } from './graced-step.js';
import { argoCdGrace } from './context.js';

/** The field manager of the controller's repairs of the other-tiers quota (docs/budgets.md#priority-tiers). */
const TIERS_FIELD_MANAGER = 'tenantgate-tiers';

/**
 * CR4: a ResourceQuota for each project namespace without one, when the headroom allows (not yet in
 * a namespace Argo CD is filling).
 */
export const createDefaultQuotas: GracedStep = async (c, project, failures, signal, graced) => {
  const plan = planDefaultQuotas(project, c.informers.snapshot, c.config.clusterName, c.clock.now());
  for (const { namespace, hard, name = DEFAULT_QUOTA_NAME, scopeSelector } of plan.create) {
    if (argoCdGrace(c, namespace, graced) > 0) continue;
    // With tiers (docs/budgets.md#priority-tiers) also the tier quotas and the other-tiers quota, scoped by
    // PriorityClass.
    const quota: ResourceQuotaObject = {
      apiVersion: 'v1',
      kind: 'ResourceQuota',
      metadata: {
        name,
        namespace,
        labels: { [LABEL_PROJECT]: project.metadata.name ?? '', [LABEL_MANAGED_BY]: MANAGED_BY },
      },
      spec: { hard, ...(scopeSelector ? { scopeSelector } : {}) },
    };
    signal.throwIfAborted();
    try {
      const created = await c.api.createQuota(quota);
      if (created !== 'exists') {
        c.informers.applyWritten('ResourceQuota', created as never);
        c.log(`project ${project.metadata.name}: created ResourceQuota ${namespace}/${name}`);
        await c.event(project, {
          type: 'Normal',
          reason: 'DefaultQuotaCreated',
          message:
            `created ResourceQuota ${namespace}/${name} from ` +
            `${scopeSelector ? "the project's tiers" : 'namespaceDefaults'} ` +
            `(${Object.entries(hard)
              .map(([r, q]) => `${r} ${q}`)
              .join(', ')})`,
        });
      }
    } catch (err) {
      failures.push(`creating ResourceQuota ${namespace}/${name}: ${describeError(err)}`);
    }
  }
  for (const desired of plan.replace) {
    const where = `ResourceQuota ${desired.metadata.namespace}/${desired.metadata.name}`;
    signal.throwIfAborted();
    try {
      const written = await c.api.replaceQuota(desired, TIERS_FIELD_MANAGER);
      c.informers.applyWritten('ResourceQuota', written as never);
      c.log(`project ${project.metadata.name}: repaired ${where} (the project's tiers)`);
      await c.event(project, {
        type: 'Normal',
        reason: 'OtherTiersQuotaRepaired',
        message: `repaired ${where}: pods 0 for every PriorityClass but the tiers ${tierNames(project).join(', ')}`,
      });
    } catch (err) {
      failures.push(`repairing ${where}: ${describeError(err)}`);
    }
  }
};
