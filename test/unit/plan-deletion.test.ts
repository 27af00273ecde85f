/**
 * D4 (docs/deletion.md): a change that removes a Project says, as a warning that never fails the plan,
 * which namespaces go with what they hold and that confirmations will be asked; Orphan says they are
 * released. The holdings come from the objects read with the cluster, else from the quotas' usage.
 */
import { TEST_NOW } from '../support/instant.js';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { planChange, planFails } from '../../src/plan/plan.js';
import { planMarkdown, planTable } from '../../src/plan/format.js';
import type { LiveState } from '../../src/plan/types.js';
import type { Project } from '../../src/validate/types.js';
import { aNamespace, aProject, aQuota } from '../support/fixtures.js';

const shop = (extra: Record<string, unknown> = {}): Project =>
  aProject('shop', {
    quota: { hard: { pods: '20', persistentvolumeclaims: '5' } },
    namespaceDefaults: { quota: { hard: { pods: '10', persistentvolumeclaims: '5' } } },
    namespaces: [{ name: 'shop-data' }, { name: 'shop-empty' }],
    ...extra,
  } as Partial<Project['spec']>);

function live(project: Project, objects?: LiveState['objects']): LiveState {
  return {
    cluster: 'local',
    projects: [project],
    namespaces: ['shop-data', 'shop-empty'].map((n) => aNamespace(n, { project: 'shop' })),
    quotas: [
      aQuota(
        'shop-data',
        { pods: '10', persistentvolumeclaims: '5' },
        { used: { pods: '2', persistentvolumeclaims: '1' } },
      ),
      aQuota(
        'shop-empty',
        { pods: '10', persistentvolumeclaims: '5' },
        { used: { pods: '0', persistentvolumeclaims: '0' } },
      ),
    ],
    ...(objects ? { objects } : {}),
  };
}

const removal = (project: Project, objects?: LiveState['objects']) =>
  planChange({
    at: TEST_NOW,
    config: DEFAULT_CONFIG,
    base: { ref: 'main', projects: [project] },
    after: [],
    live: [live(project, objects)],
  });

describe('D4: what removing a Project deletes', () => {
  it("names each namespace and what its quotas count, says a platform admin's confirmation will be asked; not a failure", () => {
    const plan = removal(shop());
    const entry = plan.entries.find((e) => e.project === 'shop')!;
    expect(entry.change).toBe('removed');
    expect(entry.warnings?.map((w) => w.rule)).toEqual(['D4']);
    const message = entry.warnings![0]!.message;
    expect(message).toContain(
      'shop-data (persistentvolumeclaims 1 in use, pods 2 in use), shop-empty (nothing seen in it)',
    );
    expect(message).toContain('Argo CD asks before it prunes the Project (Prune=confirm)');
    expect(message).toContain("wait for a platform admin's confirmation (tenantgate.io/deletion-confirmed)");
    expect(planTable(plan)).toContain(`  Warning: [D4] ${message}`);
    expect(planMarkdown(plan)).toContain('**[D4]**');
    // Q7 refuses the prune of shop-data (its pods); D4 adds no finding: shop-empty alone would pass.
    expect(entry.findings.map((f) => f.rule)).toEqual(['Q7']);
    expect(plan.findings).toBe(1);
    const quiet = live(shop());
    quiet.quotas = quiet.quotas.filter((q) => q.metadata.namespace === 'shop-empty');
    quiet.namespaces = quiet.namespaces.filter((n) => n.metadata.name === 'shop-empty');
    const emptyOnly = planChange({
      at: TEST_NOW,
      config: DEFAULT_CONFIG,
      base: { ref: 'main', projects: [shop()] },
      after: [],
      live: [quiet],
    });
    expect(emptyOnly.entries.find((e) => e.project === 'shop')!.warnings?.map((w) => w.rule)).toEqual(['D4']);
    expect(planFails(emptyOnly)).toBe(false);
  });

  it('counts PersistentVolumeClaims and running pods from the objects read with the cluster', () => {
    const objects = [
      { kind: 'PersistentVolumeClaim', metadata: { namespace: 'shop-data', name: 'db' } },
      { kind: 'PersistentVolumeClaim', metadata: { namespace: 'shop-data', name: 'logs' } },
      { kind: 'Pod', metadata: { namespace: 'shop-data', name: 'a' }, status: { phase: 'Running' } },
      { kind: 'Pod', metadata: { namespace: 'shop-data', name: 'done' }, status: { phase: 'Succeeded' } },
    ];
    const message = removal(shop(), objects).entries.find((e) => e.project === 'shop')!.warnings![0]!.message;
    expect(message).toContain('shop-data (2 PersistentVolumeClaims, 1 running Pod), shop-empty (nothing seen in it)');
  });

  it('deletionPolicy Orphan: released, not deleted', () => {
    const message = removal(shop({ deletionPolicy: 'Orphan' })).entries.find((e) => e.project === 'shop')!.warnings![0]!
      .message;
    expect(message).toMatch(/^project shop on cluster local is removed: its namespaces are released, not deleted/);
  });

  it('a Project that stays gives no D4', () => {
    const plan = planChange({
      at: TEST_NOW,
      config: DEFAULT_CONFIG,
      base: { ref: 'main', projects: [shop()] },
      after: [shop()],
      live: [live(shop())],
      all: true,
    });
    expect(plan.entries.flatMap((e) => e.warnings ?? [])).toEqual([]);
  });
});
