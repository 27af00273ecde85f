/**
 * Leader election (CR5) against the real Lease API, with short durations: compare-and-swap on create
 * and update, expiry judged on the standby's own clock, stepping down when renewals fail, release.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ControllerApi, type LeaseRecord } from '../../src/controller/kube.js';
import { LeaderElector, type LeaseStore } from '../../src/controller/leader.js';
import { ControllerMetrics } from '../../src/controller/metrics.js';
import { eventually, kubeConfig, uniqueName } from '../support/cluster.js';

const NS = 'kube-system';
const electors: LeaderElector[] = [];

function api(): ControllerApi {
  return new ControllerApi(kubeConfig('admin'), new ControllerMetrics());
}

/** A store that can be made to fail, like a replica cut off from the API server. */
class FlakyStore implements LeaseStore {
  failing = false;
  constructor(private readonly inner: LeaseStore) {}
  private check(): void {
    if (this.failing) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
  }
  async getLease(namespace: string, name: string) {
    this.check();
    return this.inner.getLease(namespace, name);
  }
  async createLease(lease: LeaseRecord) {
    this.check();
    return this.inner.createLease(lease);
  }
  async replaceLease(lease: LeaseRecord) {
    this.check();
    return this.inner.replaceLease(lease);
  }
}

/** A store that records who held the lease at each read: one read per attempt of its elector. */
class RecordingStore implements LeaseStore {
  readonly holders: string[] = [];
  constructor(private readonly inner: LeaseStore) {}
  async getLease(namespace: string, name: string) {
    const lease = await this.inner.getLease(namespace, name);
    this.holders.push(lease?.spec.holderIdentity ?? '');
    return lease;
  }
  createLease(lease: LeaseRecord) {
    return this.inner.createLease(lease);
  }
  replaceLease(lease: LeaseRecord) {
    return this.inner.replaceLease(lease);
  }
}

function elector(name: string, identity: string, store: LeaseStore = api(), events: string[] = []): LeaderElector {
  const e = new LeaderElector(
    store,
    {
      namespace: NS,
      name,
      identity,
      leaseDurationSeconds: 2,
      renewPeriodMs: 500,
      renewDeadlineMs: 1200,
      retryPeriodMs: 300,
    },
    {
      onStartedLeading: () => events.push(`${identity} started`),
      onStoppedLeading: () => events.push(`${identity} stopped`),
    },
  );
  electors.push(e);
  return e;
}

afterEach(async () => {
  for (const e of electors.splice(0)) await e.stop();
});

describe('leader election on a real Lease', () => {
  it('two replicas racing for a new lease: exactly one wins, every time (create and update are compare-and-swap)', async () => {
    for (let i = 0; i < 10; i++) {
      const name = uniqueName('race');
      const [a, b] = [elector(name, 'a'), elector(name, 'b')];
      const results = await Promise.all([a.tryAcquireOrRenew(), b.tryAcquireOrRenew()]);
      expect(results.filter(Boolean)).toHaveLength(1);
      const winner = results[0] ? 'a' : 'b';
      expect((await api().getLease(NS, name))?.spec.holderIdentity).toBe(winner);
      // The loser keeps losing while the lease is fresh on its clock.
      expect(await (results[0] ? b : a).tryAcquireOrRenew()).toBe(false);
    }
  });

  it('a holder that stops renewing loses the lease only after the lease duration, measured on the standby clock', async () => {
    const name = uniqueName('expire');
    const events: string[] = [];
    const a = elector(name, 'a', api(), events);
    a.start();
    await eventually(async () => expect(a.isLeader).toBe(true), { intervalMs: 50 });
    await a.stop(); // dies without releasing
    const stoppedAt = Date.now();
    const store = new RecordingStore(api());
    const b = elector(name, 'b', store, events);
    b.start();
    await eventually(async () => expect(b.isLeader).toBe(true), { intervalMs: 50, timeoutMs: 10_000 });
    const waited = Date.now() - stoppedAt;
    expect(waited).toBeGreaterThanOrEqual(2000); // not before the lease duration
    // Taken at b's first attempt once the lease had been unchanged for its duration on b's clock. b's
    // attempts (each one read, seeing a's lease until it takes it) are at least a retry period (300 ms)
    // apart: the first sees the lease, the 8th comes ≥ 7 × 300 ms ≥ 2 s later. A slow API server makes
    // the attempts fewer, never more: a count, not a time the machine's load can stretch.
    const attempts = store.holders.filter((h) => h === 'a').length;
    expect(attempts).toBeGreaterThanOrEqual(2);
    expect(attempts).toBeLessThanOrEqual(1 + Math.ceil(2000 / 300));
    const lease = await api().getLease(NS, name);
    expect(lease?.spec).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1, leaseDurationSeconds: 2 });
    expect(events).toEqual(['a started', 'b started']);
  });

  it('a leader that cannot renew steps down after the renew deadline, and another takes over', async () => {
    const name = uniqueName('cutoff');
    const events: string[] = [];
    const store = new FlakyStore(api());
    const a = elector(name, 'a', store, events);
    a.start();
    await eventually(async () => expect(a.isLeader).toBe(true), { intervalMs: 50 });
    const b = elector(name, 'b', api(), events);
    b.start();
    await new Promise((r) => setTimeout(r, 1000));
    expect(b.isLeader).toBe(false);
    store.failing = true;
    await eventually(async () => expect(events).toContain('a stopped'), { intervalMs: 50, timeoutMs: 5000 });
    await eventually(async () => expect(b.isLeader).toBe(true), { intervalMs: 50, timeoutMs: 10_000 });
    expect(events.indexOf('a stopped')).toBeLessThan(events.indexOf('b started'));
    expect(a.isLeader).toBe(false);
  });

  it('release hands the lease over within the standby retry period', async () => {
    const name = uniqueName('release');
    const a = elector(name, 'a');
    a.start();
    await eventually(async () => expect(a.isLeader).toBe(true), { intervalMs: 50 });
    const store = new RecordingStore(api());
    const b = elector(name, 'b', store);
    b.start();
    await new Promise((r) => setTimeout(r, 700));
    await a.stop();
    expect(await a.release()).toBe(true);
    expect((await api().getLease(NS, name))?.spec).toMatchObject({ holderIdentity: '', leaseDurationSeconds: 1 });
    await eventually(async () => expect(b.isLeader).toBe(true), { intervalMs: 20, timeoutMs: 5000 });
    // b took the lease at the first of its attempts (one every retry period) that saw it released: one
    // read of the released lease, then b's own. An order, which a loaded machine cannot stretch as it can a time.
    expect(store.holders.filter((h) => h === '')).toHaveLength(1);
  });

  it('the same identity takes its own lease back at once (a restarted container of the same pod)', async () => {
    const name = uniqueName('same');
    const a = elector(name, 'pod-1');
    expect(await a.tryAcquireOrRenew()).toBe(true);
    const again = elector(name, 'pod-1');
    expect(await again.tryAcquireOrRenew()).toBe(true);
    expect((await api().getLease(NS, name))?.spec.leaseTransitions).toBe(0);
  });
});
