import { TEST_NOW } from '../support/instant.js';
import { describe, expect, it } from 'vitest';
import {
  fleetBudgetFor,
  parseFleetBudget,
  withShareRecordStatus,
  FLEET_NAMESPACE,
  type FleetBudgetObject,
} from '../../src/fleet/fleet-budget-object.js';
import { releaseMember, requestGrowth } from '../../src/fleet/shares.js';
import { parseResources } from '../../src/validate/resource-lists.js';
import type { Project } from '../../src/validate/types.js';

const project: Project = {
  apiVersion: 'tenantgate.io/v1alpha1',
  kind: 'Project',
  metadata: { name: 'web' },
  spec: {
    tenant: 'acme',
    quota: { hard: { 'requests.cpu': '20', 'requests.memory': '64Gi' } },
    clusters: { 'prod-eu': { quota: { hard: { 'requests.cpu': '30', pods: '100' } } } },
    fleet: { quota: { hard: { 'requests.cpu': '40' } }, clusters: ['prod-eu', 'prod-us', 'prod-us'] },
  },
};

describe('FleetBudget object', () => {
  it('is built from the Project: budget, members once each, bounds restricted to the fleet-budgeted resources', () => {
    const object = fleetBudgetFor(project, TEST_NOW)!;
    expect(object.metadata).toMatchObject({ name: 'web', namespace: FLEET_NAMESPACE });
    expect(object.spec).toEqual({
      budget: { 'requests.cpu': '40' },
      members: ['prod-eu', 'prod-us'],
      bounds: { 'prod-eu': { 'requests.cpu': '30' }, 'prod-us': { 'requests.cpu': '20' } },
    });
  });

  it('has none without spec.fleet', () => {
    expect(fleetBudgetFor({ ...project, spec: { ...project.spec, fleet: undefined } }, TEST_NOW)).toBeUndefined();
  });

  it('round-trips a ledger through its status, keeping release records', () => {
    const object = fleetBudgetFor(project, TEST_NOW)!;
    const parsed = parseFleetBudget(object);
    if (!parsed.ok) throw new Error(parsed.problems.join('; '));
    const grown = requestGrowth(parsed.record, 'prod-eu', { id: 'k1', need: parseResources({ 'requests.cpu': '12' }) });
    if (!grown.ok) throw new Error(grown.reason);
    const stored = withShareRecordStatus(object, grown.record);
    expect(stored.status?.members?.['prod-eu']).toEqual({
      share: { 'requests.cpu': '12' },
      lendable: {},
      lastRequest: 'k1',
    });
    const reread = parseFleetBudget(stored);
    if (!reread.ok) throw new Error(reread.problems.join('; '));
    expect(reread.record.shares.get('prod-eu')?.share.get('requests.cpu')?.toString()).toBe('12');

    const released = releaseMember(reread.record, 'prod-eu');
    const record = { at: '2026-11-25T10:00:00Z', by: 'ops' };
    const afterRelease = withShareRecordStatus(stored, released.record, record);
    expect(afterRelease.status?.released).toEqual({ 'prod-eu': record });
    expect(afterRelease.status?.members).toEqual({});
    const again = parseFleetBudget(afterRelease);
    if (!again.ok) throw new Error(again.problems.join('; '));
    // A later write keeps the record it did not make.
    expect(withShareRecordStatus(afterRelease, again.record).status?.released).toEqual({ 'prod-eu': record });
  });

  it('fails closed on a status it cannot read, naming the object and the field', () => {
    const object: FleetBudgetObject = {
      ...fleetBudgetFor(project, TEST_NOW)!,
      status: { members: { 'prod-eu': { share: { 'requests.cpu': 'lots' } } } },
    };
    const parsed = parseFleetBudget(object);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok)
      expect(parsed.problems.join()).toMatch(
        /FleetBudget tenantgate-fleet\/web: status\.members\.prod-eu\.share\.requests\.cpu is "lots"/,
      );
  });
});
