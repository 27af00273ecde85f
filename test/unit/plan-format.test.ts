/**
 * The plan's three formats on examples/gitops: a change that raises web-frontend's quota on a cluster
 * where a tenant made a self-service namespace (refused, Q1) and where none did (admitted), with the
 * roll-up across both. The Markdown is a reviewed golden file (test/golden/plan/); `UPDATE_GOLDEN=1 npx
 * vitest run --project unit plan-format` rewrites it: review the diff before committing it.
 */
import { TEST_NOW } from '../support/instant.js';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readSources } from '../../src/cli/sources.js';
import { parseConfig } from '../../src/config/config.js';
import { formatPlan, headroomBar, planMarkdown, planTable } from '../../src/plan/format.js';
import { planChange } from '../../src/plan/plan.js';
import type { LiveState, Plan } from '../../src/plan/types.js';
import { renderProjectsLazily } from '../../src/render/render.js';
import { isProjectObject } from '../../src/validate/source.js';
import type { NamespaceObject, Project, ResourceQuotaObject } from '../../src/validate/types.js';
import { aNamespace, aQuota } from '../support/fixtures.js';

const ROOT = join(import.meta.dirname, '..', '..');
const GOLDEN = join(ROOT, 'test', 'golden', 'plan');
const UPDATE = process.env.UPDATE_GOLDEN === '1';
/** examples/gitops/tenantgate.yaml: its price sheet gives every entry a cost line (docs/budgets.md#cost). */
const CONFIG = parseConfig(readFileSync(join(ROOT, 'examples', 'gitops', 'tenantgate.yaml'), 'utf8'));

async function examples(): Promise<Project[]> {
  const { documents } = await readSources([join(ROOT, 'examples', 'gitops')], ROOT);
  return documents.map((d) => d.object).filter(isProjectObject);
}

/** What a sync of `projects` left on `cluster`, every quota reporting a third of its pods and CPU in use. */
function synced(cluster: string, projects: Project[]): LiveState {
  const namespaces: NamespaceObject[] = [];
  const quotas: ResourceQuotaObject[] = [];
  for (const o of renderProjectsLazily(projects, CONFIG, { at: TEST_NOW, cluster })) {
    if (o.kind === 'Namespace') namespaces.push(o as unknown as NamespaceObject);
    if (o.kind === 'ResourceQuota') {
      const q = o as unknown as ResourceQuotaObject;
      const hard = q.spec!.hard!;
      const used: Record<string, string> = { 'requests.cpu': '100m', pods: '1' };
      // A tier quota (docs/budgets.md#priority-tiers) reports only what it counts: no pods in the other-tiers quota (pods 0).
      const reported = q.spec!.scopeSelector
        ? Object.fromEntries(Object.entries(used).filter(([r]) => Object.hasOwn(hard, r) && String(hard[r]) !== '0'))
        : used;
      quotas.push({ ...q, status: { hard, used: reported } });
    }
  }
  return { cluster, projects, namespaces, quotas };
}

async function gitopsPlan(): Promise<Plan> {
  const before = await examples();
  const after = structuredClone(before);
  const web = after.find((p) => p.metadata.name === 'web')!;
  web.spec.namespaces!.find((n) => n.name === 'web-frontend')!.quota!.hard!['requests.cpu'] = '4500m';
  const local = synced('local', before);
  // carol made web-extra; the controller gave it namespaceDefaults.quota.
  local.namespaces.push(aNamespace('web-extra', { project: 'web' }));
  local.quotas.push(
    aQuota(
      'web-extra',
      { 'requests.cpu': '1', 'requests.memory': '2Gi', pods: '10' },
      { used: { 'requests.cpu': '0', 'requests.memory': '0', pods: '0' } },
    ),
  );
  return planChange({
    at: TEST_NOW,
    config: CONFIG,
    base: { ref: 'origin/main', projects: before },
    after,
    live: [local, { ...synced('prod-eu', before), takenAt: '2026-01-05T06:00:00.000Z' }],
  });
}

describe('plan formats', () => {
  it('headroom bars: ten cells, the share of the budget left', () => {
    expect(headroomBar(52)).toBe('█████░░░░░ 52%');
    expect(headroomBar(100)).toBe('██████████ 100%');
    expect(headroomBar(0)).toBe('░░░░░░░░░░ 0%');
    expect(headroomBar(-8)).toBe('░░░░░░░░░░ -8%');
    expect(headroomBar(4)).toBe('░░░░░░░░░░ 4%');
    expect(headroomBar(undefined)).toBe('');
  });

  it('markdown: the reviewed golden file, byte for byte', async () => {
    const md = planMarkdown(await gitopsPlan());
    const file = join(GOLDEN, 'gitops-web-frontend.md');
    if (UPDATE) {
      mkdirSync(GOLDEN, { recursive: true });
      writeFileSync(file, md);
    }
    if (!existsSync(file))
      throw new Error(`${file} is missing: UPDATE_GOLDEN=1 npx vitest run --project unit plan-format, and review it`);
    expect(md).toBe(readFileSync(file, 'utf8'));
    // What a reviewer looks for, independent of the golden file.
    expect(md).toMatch(/^### ❌ web on local \(tenant acme\) — changed$/m);
    expect(md).toMatch(/^\| requests\.cpu \| 6 \| 5 → 6500m \| 200m \| `-500m ░░░░░░░░░░ -8% over budget` \|$/m);
    expect(md).toMatch(/^- \*\*\[Q1\]\*\* ResourceQuota web-frontend\/tenantgate-quota asks requests\.cpu 4500m/m);
    expect(md).toMatch(/^### ✅ web on prod-eu \(tenant acme\) — changed$/m);
    expect(md).toMatch(/^### Σ web on local \+ prod-eu$/m);
  });

  it('markdown is stable: the same plan gives the same text', async () => {
    expect(planMarkdown(await gitopsPlan())).toBe(planMarkdown(await gitopsPlan()));
  });

  it('table: one block per project × cluster, the refusal under it, the roll-up at the end', async () => {
    const text = planTable(await gitopsPlan());
    const lines = text.split('\n');
    expect(lines[0]).toBe(
      'tenantgate plan: 2 project × cluster change(s) against base origin/main on local, prod-eu: 1 sync(s) would be refused or lose pods (1 finding(s))',
    );
    const start = lines.indexOf('✗ web on local (tenant acme) — changed');
    expect(start).toBeGreaterThan(0);
    expect(lines[start + 1]).toMatch(/^ {2}RESOURCE +BUDGET +ALLOCATED +USED +HEADROOM AFTER$/);
    expect(lines.slice(start, start + 8).join('\n')).toMatch(
      /requests\.cpu +6 +5 → 6500m +200m +-500m ░░░░░░░░░░ -8% over budget/,
    );
    expect(text).toMatch(/^ {2}namespaces: quota changed web-frontend; self-service web-extra; count 3$/m);
    expect(text).toMatch(/^ {2}\[Q1\] ResourceQuota web-frontend\/tenantgate-quota asks requests\.cpu 4500m/m);
    expect(text).toMatch(/^✓ web on prod-eu \(tenant acme\) — changed$/m);
    expect(text).toMatch(/^Σ web on local \+ prod-eu$/m);
  });

  it('json: the Plan itself', async () => {
    const plan = await gitopsPlan();
    expect(JSON.parse(formatPlan(plan, 'json'))).toEqual(JSON.parse(JSON.stringify(plan)));
    expect(formatPlan(plan, 'markdown')).toBe(planMarkdown(plan));
    expect(formatPlan(plan, 'table')).toBe(planTable(plan));
  });
});
