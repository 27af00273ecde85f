import { describe, expect, it } from 'vitest';
import { onlyUsageChanged } from '../../src/controller/controller.js';
import type { CacheEvent } from '../../src/kube/informers.js';

const quota = (used: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'v1',
  kind: 'ResourceQuota',
  metadata: { name: 'q', namespace: 'payments-api', resourceVersion: used, labels: { team: 'a' } },
  spec: { hard: { 'requests.cpu': '4' } },
  status: { hard: { 'requests.cpu': '4' }, used: { 'requests.cpu': used } },
  ...extra,
});
const update = (old: object, object: object, kind: CacheEvent['kind'] = 'ResourceQuota'): CacheEvent => ({ kind, type: 'update', old, object } as CacheEvent);

describe('the controller settles usage-only quota changes', () => {
  it('a pod started or gone (status.used alone) settles; anything else reconciles at once', () => {
    expect(onlyUsageChanged(update(quota('1'), quota('2')))).toBe(true);
    expect(onlyUsageChanged(update(quota('1'), quota('2', { spec: { hard: { 'requests.cpu': '5' } } })))).toBe(false);
    expect(onlyUsageChanged(update(quota('1'), quota('1', { status: { hard: { 'requests.cpu': '5' }, used: { 'requests.cpu': '1' } } })))).toBe(false);
    const relabelled = quota('1');
    relabelled.metadata.labels = { team: 'b' };
    expect(onlyUsageChanged(update(quota('1'), relabelled))).toBe(false);
    const deleting = quota('1');
    (deleting.metadata as Record<string, unknown>).deletionTimestamp = '2026-11-27T00:00:00Z';
    expect(onlyUsageChanged(update(quota('1'), deleting))).toBe(false);
    expect(onlyUsageChanged({ kind: 'ResourceQuota', type: 'add', object: quota('1') } as CacheEvent)).toBe(false);
    expect(onlyUsageChanged(update({ metadata: { name: 'n' } }, { metadata: { name: 'n' } }, 'Namespace'))).toBe(false);
  });
});
