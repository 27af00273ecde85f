/** kubectl tenantgate deletions (src/kubectl/deletions.ts): where each deleting Project stands, from its conditions. */
import { describe, expect, it } from 'vitest';
import { deletionRows, deletionsText } from '../../src/kubectl/deletions.js';
import type { Project, ProjectCondition } from '../../src/validate/types.js';

const project = (name: string, conditions: Array<Partial<ProjectCondition>>, deleting = true): Project => ({
  metadata: { name, uid: `uid-${name}`, ...(deleting ? { deletionTimestamp: '2026-12-07T13:00:00Z' } : {}) },
  spec: { tenant: 'acme' } as Project['spec'],
  status: { conditions: conditions.map((c) => ({ reason: 'r', message: 'm', status: 'True', type: 'X', ...c })) },
});

describe('kubectl tenantgate deletions', () => {
  it('paused by the breaker, waiting with the confirm command, or deleting; live Projects left out', () => {
    const rows = deletionRows([
      project('wait', [
        { type: 'DeletionConfirmed', status: 'False', message: 'not deleted until … wait-data: 1 Pod' },
      ]),
      project('pause', [
        { type: 'DeletionConfirmed', status: 'False', message: 'waiting' },
        { type: 'DeletionPaused', status: 'True', message: '[D2] the deletion breaker tripped' },
      ]),
      project('go', [
        { type: 'NamespacesRemaining', status: 'True', message: 'waiting for 1 namespace to be deleted: go-a' },
      ]),
      project('live', [], false),
    ]);
    expect(rows.map((r) => [r.project, r.state])).toEqual([
      ['go', 'Deleting'],
      ['pause', 'Paused'],
      ['wait', 'AwaitingConfirmation'],
    ]);
    expect(rows[2]!.confirm).toBe('kubectl annotate project wait tenantgate.io/deletion-confirmed=uid-wait');
    const text = deletionsText(rows);
    expect(text).toContain(
      'wait: AwaitingConfirmation (deleting since 2026-12-07T13:00:00Z)\n  not deleted until … wait-data: 1 Pod\n',
    );
    expect(text).toContain(
      'a platform admin confirms with: kubectl annotate project wait tenantgate.io/deletion-confirmed=uid-wait',
    );
    expect(text).toContain('pause: Paused');
    expect(text).toContain('an operator resumes with: kubectl tenantgate resume-deletions');
    expect(deletionsText([])).toBe('No Project is being deleted.\n');
  });
});
