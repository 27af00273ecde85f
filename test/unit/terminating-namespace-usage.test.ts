/**
 * A terminating namespace whose quotas are gone while its pods still run (Kubernetes before 1.33
 * deletes a namespace's content in no particular order) keeps counting what its pods last used
 * (ADR 0077): in the shares Q1 and the controller's status read, and in Q1's message.
 */
import { TEST_NOW } from '../support/instant.js';
import { describe, expect, it } from 'vitest';
import { reviewResourceQuota } from '../../src/validate/admission.js';
import { projectBudget, projectBudgetJson } from '../../src/validate/budget.js';
import { formatResources } from '../../src/validate/resource-lists.js';
import { namespaceShare } from '../../src/validate/shares.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import { aNamespace, aProject, aQuota, aUser, reviewContext } from '../support/fixtures.js';

const pay = aProject('pay', {
  tenant: 'acme',
  owners: [{ kind: 'User', name: 'alice' }],
  quota: { hard: { 'requests.cpu': '10' } },
  namespaceDefaults: { quota: { hard: { 'requests.cpu': '1' } } },
});

/** pay-old (quota 8, its pods use 6) is being deleted; pay-new has a quota of 2. */
function snapshot(): MemorySnapshot {
  return MemorySnapshot.of({
    projects: [pay],
    namespaces: [
      aNamespace('pay-old', { project: 'pay', terminating: true }),
      aNamespace('pay-new', { project: 'pay' }),
    ],
    quotas: [
      aQuota('pay-old', { 'requests.cpu': '8' }, { used: { 'requests.cpu': '6' } }),
      aQuota('pay-new', { 'requests.cpu': '2' }, { used: { 'requests.cpu': '0' } }),
    ],
  });
}

const cpuOf = (s: MemorySnapshot, namespace: string) =>
  formatResources(namespaceShare(s, pay, '', TEST_NOW, namespace).resources)['requests.cpu'];

function growPayNew(s: MemorySnapshot, cpu: string) {
  const quota = aQuota('pay-new', { 'requests.cpu': cpu });
  return reviewResourceQuota(
    reviewContext(aUser('alice'), s),
    'UPDATE',
    'pay-new',
    quota,
    [...s.quotasInNamespace('pay-new')][0],
  );
}

describe('a terminating namespace without quotas', () => {
  it('counts what its pods last used once its quota is deleted, not namespaceDefaults', () => {
    const s = snapshot();
    s.projectSharesOf(pay, '', TEST_NOW); // a memo made before the delete must follow it
    s.deleteQuota('pay-old', 'tenantgate-quota');
    expect(cpuOf(s, 'pay-old')).toBe('6');
    expect(formatResources(s.projectSharesOf(pay, '', TEST_NOW).othersTotal('pay-new'))['requests.cpu']).toBe('6');
  });

  it('keeps another namespace of the project from growing into that room (Q1 names the terminating namespace)', () => {
    const s = snapshot();
    s.deleteQuota('pay-old', 'tenantgate-quota');
    const refused = growPayNew(s, '5');
    expect(refused.violations.map((v) => v.rule)).toEqual(['Q1']);
    expect(refused.violations[0]?.message).toMatch(
      /10 of which 6 are allocated to other namespaces: at most 4 fits; counted by usage: pay-old holds requests\.cpu 6 \(being deleted, its quotas gone while its pods may still run\)/,
    );
    expect(growPayNew(s, '4').violations).toEqual([]);
  });

  it('frees the room when the namespace is gone', () => {
    const s = snapshot();
    s.deleteQuota('pay-old', 'tenantgate-quota');
    s.deleteNamespace('pay-old');
    expect(growPayNew(s, '9').violations).toEqual([]);
    // A namespace of the same name made again starts afresh: no quota yet, so namespaceDefaults.
    s.upsertNamespace(aNamespace('pay-old', { project: 'pay' }));
    expect(cpuOf(s, 'pay-old')).toBe('1');
  });

  it('counts the whole budget when this process never saw its quotas (it cannot know what the pods use)', () => {
    const s = MemorySnapshot.of({
      projects: [pay],
      namespaces: [
        aNamespace('pay-old', { project: 'pay', terminating: true }),
        aNamespace('pay-new', { project: 'pay' }),
      ],
      quotas: [aQuota('pay-new', { 'requests.cpu': '2' })],
    });
    expect(cpuOf(s, 'pay-old')).toBe('10');
    expect(growPayNew(s, '3').violations.map((v) => v.rule)).toEqual(['Q1']);
  });

  it('counts nothing of its own (namespaceDefaults) when this process saw it live and never saw a quota of it go', () => {
    const s = MemorySnapshot.of({
      projects: [pay],
      namespaces: [aNamespace('pay-old', { project: 'pay' }), aNamespace('pay-new', { project: 'pay' })],
      quotas: [aQuota('pay-new', { 'requests.cpu': '2' })],
    });
    s.upsertNamespace(aNamespace('pay-old', { project: 'pay', terminating: true }));
    expect(cpuOf(s, 'pay-old')).toBe('1');
  });

  it('counts, for a decision that deletes its last quota, what that quota reports in use', () => {
    const s = snapshot();
    const afterDelete = namespaceShare(s, pay, '', TEST_NOW, 'pay-old', {
      change: { namespace: 'pay-old', name: 'tenantgate-quota' },
    });
    expect(formatResources(afterDelete.resources)['requests.cpu']).toBe('6');
    // The same for a namespace this process saw live before it started terminating.
    const seenLive = MemorySnapshot.of({
      projects: [pay],
      namespaces: [aNamespace('pay-old', { project: 'pay' })],
      quotas: [...s.quotasInNamespace('pay-old')],
    });
    seenLive.upsertNamespace(aNamespace('pay-old', { project: 'pay', terminating: true }));
    expect(
      formatResources(
        namespaceShare(seenLive, pay, '', TEST_NOW, 'pay-old', {
          change: { namespace: 'pay-old', name: 'tenantgate-quota' },
        }).resources,
      )['requests.cpu'],
    ).toBe('6');
  });

  it('recounts when the namespace starts terminating after its quotas went, and forgets the usage when a quota comes back', () => {
    const s = MemorySnapshot.of({
      projects: [pay],
      namespaces: [aNamespace('pay-old', { project: 'pay' }), aNamespace('pay-new', { project: 'pay' })],
      quotas: [
        aQuota('pay-old', { 'requests.cpu': '8' }, { used: { 'requests.cpu': '6' } }),
        aQuota('pay-new', { 'requests.cpu': '2' }),
      ],
    });
    s.projectSharesOf(pay, '', TEST_NOW);
    // Watches are separate streams: the quota's delete may arrive before the namespace's deletionTimestamp.
    s.deleteQuota('pay-old', 'tenantgate-quota');
    expect(cpuOf(s, 'pay-old')).toBe('1'); // a live namespace without quota: namespaceDefaults (the controller adds its default quota)
    s.upsertNamespace(aNamespace('pay-old', { project: 'pay', terminating: true }));
    expect(formatResources(s.projectSharesOf(pay, '', TEST_NOW).othersTotal('pay-new'))['requests.cpu']).toBe('6');
    s.upsertQuota(aQuota('pay-old', { 'requests.cpu': '3' }, { used: { 'requests.cpu': '0' } }));
    expect(s.lastQuotaUsageOf('pay-old')?.size).toBe(0);
    expect(cpuOf(s, 'pay-old')).toBe('3');
  });
});

describe('the budget report (controller status, budget view) of a terminating namespace without quotas', () => {
  it('counts what its pods last used as used and as allocated', () => {
    const s = snapshot();
    s.deleteQuota('pay-old', 'tenantgate-quota');
    const b = projectBudgetJson(projectBudget(s, pay, '', TEST_NOW));
    expect(b.resources).toEqual([{ resource: 'requests.cpu', budget: '10', allocated: '8', used: '6', headroom: '2' }]);
  });
});
