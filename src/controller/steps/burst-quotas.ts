/**
 * Step (bursts): the quotas a burst raises and lowers (src/controller/burst-quotas.ts plans them).
 */
import type { Project } from '../../validate/types.js';
import { BURST_FIELD_MANAGER, describeAbove, planBurstQuotas } from '../burst-quotas.js';
import { describeGiveBack, describeStillOver } from '../burst-budget-restore.js';
import { describeError } from '../../kube/errors.js';
import type { StepContext } from './context.js';

/**
 * Step (bursts, docs/budgets.md#bursts): the quota of a namespace a burst names is raised while the
 * burst is active and lowered when it ends, never below what the namespace uses (burst-quotas.ts);
 * once every burst ended, quotas above the budget are lowered until the project is within it
 * (burst-budget-restore.ts).
 */
export async function applyBurstQuotas(
  c: StepContext,
  project: Project,
  failures: string[],
  signal: AbortSignal,
): Promise<void> {
  const plan = planBurstQuotas(project, c.informers.snapshot, c.config.clusterName, c.clock.now());
  const projectName = project.metadata.name ?? '';
  for (const w of plan.writes) {
    signal.throwIfAborted();
    const where = `ResourceQuota ${w.namespace}/${w.quota.metadata.name}`;
    const above = plan.above.filter((a) => a.namespace === w.namespace);
    try {
      const written = await c.api.replaceQuota(w.desired, BURST_FIELD_MANAGER);
      c.informers.applyWritten('ResourceQuota', written as never);
      const change = w.changes.join(', ') || 'no resource changed';
      c.log(`project ${projectName}: ${w.kind === 'raise' ? 'raised' : 'lowered'} ${where} (${change})`);
      if (w.kind === 'raise') {
        await c.event(project, {
          type: 'Normal',
          reason: 'BurstQuotaRaised',
          message: `raised ${where} for burst ${w.bursts.join(', ')}: ${change}`,
        });
      } else if (w.giveBacks.length > 0) {
        await c.event(project, {
          type: 'Normal',
          reason: 'BurstBudgetRestored',
          message:
            `lowered ${where} to bring the project within its budget after its bursts ended: ` +
            `${w.giveBacks.map(describeGiveBack).join(', ')}`,
        });
      } else if (w.changes.length > 0) {
        await c.event(project, {
          type: 'Normal',
          reason: 'BurstQuotaLowered',
          message: `lowered ${where}, its bursts have ended: ${change}`,
        });
      }
      if (above.length > 0 && w.changes.length > 0) {
        await c.event(project, {
          type: 'Warning',
          reason: 'BurstEndedAboveQuota',
          message: `a burst has ended but ${describeAbove(above)}`,
        });
      }
    } catch (err) {
      failures.push(`${w.kind === 'raise' ? 'raising' : 'lowering'} ${where} for a burst: ${describeError(err)}`);
    }
  }
  // What could not be lowered yet (used above the floor): said once per reconcile that lowered something.
  if (plan.stillOver.length > 0 && plan.writes.some((w) => w.giveBacks.length > 0)) {
    await c.event(project, {
      type: 'Warning',
      reason: 'OverBudgetAfterBurst',
      message:
        `its bursts have ended but the project still allocates more than its budget: ` +
        `${plan.stillOver.map(describeStillOver).join('; ')}; quotas are lowered further as usage falls`,
    });
  }
}
