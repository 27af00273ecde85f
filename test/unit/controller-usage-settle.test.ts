import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { KeyMapper, onlyUsageChanged, queueCacheEvents } from '../../src/controller/controller.js';
import { WorkQueue } from '../../src/controller/workqueue.js';
import type { CacheEvent, Informers } from '../../src/kube/informers.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';

const quota = (used: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'v1',
  kind: 'ResourceQuota',
  metadata: { name: 'q', namespace: 'payments-api', resourceVersion: used, labels: { team: 'a' } },
  spec: { hard: { 'requests.cpu': '4' } },
  status: { hard: { 'requests.cpu': '4' }, used: { 'requests.cpu': used } },
  ...extra,
});
const update = (old: object, object: object, kind: CacheEvent['kind'] = 'ResourceQuota'): CacheEvent =>
  ({ kind, type: 'update', old, object }) as CacheEvent;

describe('the controller settles usage-only quota changes', () => {
  it('a pod started or gone (status.used alone) settles; anything else reconciles at once', () => {
    expect(onlyUsageChanged(update(quota('1'), quota('2')))).toBe(true);
    expect(onlyUsageChanged(update(quota('1'), quota('2', { spec: { hard: { 'requests.cpu': '5' } } })))).toBe(false);
    expect(
      onlyUsageChanged(
        update(quota('1'), quota('1', { status: { hard: { 'requests.cpu': '5' }, used: { 'requests.cpu': '1' } } })),
      ),
    ).toBe(false);
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

describe('the controller queues usage-only quota changes after the settle interval (the wiring in controller.ts)', () => {
  // What startController does with its informers' events, on the real key mapper and the term's work
  // queue; the informers are a snapshot and a listener list, the clock is vitest's.
  const snapshot = MemorySnapshot.of({
    namespaces: [{ metadata: { name: 'payments-api', labels: { 'tenantgate.io/project': 'payments' } } }],
  });
  function wire(usageSettleMs: number | undefined, leading = true) {
    const listeners: Array<(e: CacheEvent) => void> = [];
    const informers = {
      snapshot,
      onEvent: (l: (e: CacheEvent) => void) => void listeners.push(l),
    } as unknown as Informers;
    const queue = new WorkQueue<string>();
    queueCacheEvents(informers, new KeyMapper(informers), () => (leading ? queue : undefined), usageSettleMs);
    const emit = (e: CacheEvent) => listeners.forEach((l) => l(e));
    /** Keys ready for a worker now, and keys waiting for their delay. */
    const state = () => ({ ready: queue.len(), waiting: queue.waitingLen() });
    return { emit, state, queue };
  }
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it('a burst of usage-only changes queues the project once, a second after the first; nothing before', async () => {
    const { emit, state, queue } = wire(undefined); // the default: 1000 ms
    for (let used = 1; used <= 5; used++) {
      emit(update(quota(String(used)), quota(String(used + 1))));
      await vi.advanceTimersByTimeAsync(100);
    }
    expect(state()).toEqual({ ready: 0, waiting: 1 });
    await vi.advanceTimersByTimeAsync(1000 - 500 - 1);
    expect(state()).toEqual({ ready: 0, waiting: 1 });
    await vi.advanceTimersByTimeAsync(1);
    expect(state()).toEqual({ ready: 1, waiting: 0 });
    expect(await queue.get()).toBe('payments');
  });

  it('a change to a quota’s spec queues the project at once, and so does any change with settling off', () => {
    const spec = wire(1000);
    spec.emit(update(quota('1'), quota('1', { spec: { hard: { 'requests.cpu': '5' } } })));
    expect(spec.state()).toEqual({ ready: 1, waiting: 0 });
    const off = wire(0);
    off.emit(update(quota('1'), quota('2')));
    expect(off.state()).toEqual({ ready: 1, waiting: 0 });
  });

  it('queues nothing while this replica does not lead', async () => {
    const { emit, state } = wire(1000, false);
    emit(update(quota('1'), quota('2')));
    emit(update(quota('1'), quota('1', { spec: { hard: { 'requests.cpu': '5' } } })));
    await vi.advanceTimersByTimeAsync(2000);
    expect(state()).toEqual({ ready: 0, waiting: 0 });
  });
});
