/**
 * `tenantgate render --fleet-hub` (ARGOCD_ENV_FLEET_HUB=true in the plugin, the hub's Application): each
 * Project with spec.fleet also yields its FleetBudget in tenantgate-fleet, with the finalizer
 * tenantgate.io/fleet-shares and the Projects' sync wave; a Project without spec.fleet yields none, and a
 * render that is not for the hub is unchanged.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import { FLEET_HUB_ENV, renderDirectory } from '../../src/cli/render.js';

interface Obj {
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    finalizers?: string[];
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec?: Record<string, unknown>;
}

const PROJECTS = [
  {
    apiVersion: 'tenantgate.io/v1alpha1',
    kind: 'Project',
    metadata: { name: 'web' },
    spec: {
      tenant: 'acme',
      quota: { hard: { 'requests.cpu': '20', pods: '50' } },
      clusters: { 'prod-eu': { quota: { hard: { 'requests.cpu': '30' } } } },
      fleet: { quota: { hard: { 'requests.cpu': '40' } }, clusters: ['prod-eu', 'prod-us'] },
      namespaces: [{ name: 'web-frontend', cluster: 'prod-eu', quota: { hard: { 'requests.cpu': '2', pods: '10' } } }],
    },
  },
  {
    apiVersion: 'tenantgate.io/v1alpha1',
    kind: 'Project',
    metadata: { name: 'data' },
    spec: { tenant: 'acme', quota: { hard: { 'requests.cpu': '4' } } },
  },
];

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'tenantgate-fleet-hub-'));
  writeFileSync(join(dir, 'projects.yaml'), PROJECTS.map((p) => stringify(p)).join('---\n'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function render(env: Record<string, string>, flags: { fleetHub?: boolean } = {}): Promise<Obj[]> {
  const result = await renderDirectory(dir, env, 'yaml', flags);
  expect(result.errors.join('\n')).toBe('');
  return parseAllDocuments(result.output!).map((d) => d.toJS() as Obj);
}

describe('render for the fleet hub', () => {
  it('FLEET_HUB=true: the FleetBudget of each fleet-budgeted Project, with its finalizer, after the Projects', async () => {
    const objects = await render({ [FLEET_HUB_ENV]: 'True', ARGOCD_ENV_CLUSTER: 'hub' });
    const budgets = objects.filter((o) => o.kind === 'FleetBudget');
    expect(budgets).toHaveLength(1);
    const [budget] = budgets;
    expect(budget!.metadata).toMatchObject({
      name: 'web',
      namespace: 'tenantgate-fleet',
      finalizers: ['tenantgate.io/fleet-shares'],
    });
    expect(budget!.metadata.annotations?.['argocd.argoproj.io/sync-wave']).toBe('-2');
    expect(budget!.metadata.labels?.['app.kubernetes.io/managed-by']).toBeDefined();
    expect(budget!.spec).toEqual({
      budget: { 'requests.cpu': '40' },
      members: ['prod-eu', 'prod-us'],
      bounds: { 'prod-eu': { 'requests.cpu': '30' }, 'prod-us': { 'requests.cpu': '20' } },
    });
    expect(objects.findIndex((o) => o.kind === 'FleetBudget')).toBeGreaterThan(
      objects.findLastIndex((o) => o.kind === 'Project'),
    );
    expect(objects.filter((o) => o.kind === 'Namespace')).toEqual([]);
  });

  it('--fleet-hub is the same as the env; without either, no FleetBudget', async () => {
    expect(await render({}, { fleetHub: true })).toEqual(await render({ [FLEET_HUB_ENV]: 'true' }));
    for (const env of [{}, { [FLEET_HUB_ENV]: 'false' }, { [FLEET_HUB_ENV]: '' }] as Record<string, string>[])
      expect((await render(env)).map((o) => o.kind)).not.toContain('FleetBudget');
  });

  it('any other value is an error naming the variable', async () => {
    const bad = await renderDirectory(dir, { [FLEET_HUB_ENV]: 'hub' });
    expect(bad.output).toBeUndefined();
    expect(bad.errors).toEqual([
      `ARGOCD_ENV_FLEET_HUB is "hub"; allowed: "true" or "false" (the Application's plugin env FLEET_HUB)`,
    ]);
  });
});
