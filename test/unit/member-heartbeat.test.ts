/**
 * The member's heartbeat Lease and the liveness `kubectl tenantgate fleet release` reads from it
 * (src/fleet/member-heartbeat.ts), and the give-back loop renewing it on the leader only.
 */
import { describe, expect, it } from 'vitest';
import { FleetLoop, FleetObservations } from '../../src/controller/fleet-loop.js';
import { heartbeatLeaseName, livenessOf, microTime, renewedLease } from '../../src/fleet/member-heartbeat.js';
import { Quantity } from '../../src/quantity/quantity.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import { MemoryHub } from '../support/memory-hub.js';
import { MemoryLedger } from '../support/memory-ledger.js';

const at = new Date('2026-11-27T10:00:00.123Z');

describe('the heartbeat Lease', () => {
  it('is member-<cluster> in tenantgate-fleet, held by the cluster, renewed at a MicroTime; a renewal keeps the resourceVersion it read (a CAS)', () => {
    const lease = renewedLease('prod-eu', at, 30);
    expect(lease.metadata).toMatchObject({ name: 'member-prod-eu', namespace: 'tenantgate-fleet' });
    expect(lease.metadata.resourceVersion).toBeUndefined();
    expect(lease.spec).toEqual({
      holderIdentity: 'prod-eu',
      renewTime: '2026-11-27T10:00:00.123000Z',
      leaseDurationSeconds: 30,
    });
    const renewed = renewedLease('prod-eu', new Date(at.getTime() + 1000), 30, {
      ...lease,
      metadata: { ...lease.metadata, resourceVersion: '42' },
    });
    expect(renewed.metadata.resourceVersion).toBe('42');
    expect(renewed.spec.renewTime).toBe('2026-11-27T10:00:01.123000Z');
    expect(heartbeatLeaseName('x')).toBe('member-x');
    expect(microTime(new Date('2026-01-02T03:04:05.000Z'))).toBe('2026-01-02T03:04:05.000000Z');
  });

  it('alive within the window (its end included), silent after it, never heard without a Lease or a renewTime', () => {
    const lease = renewedLease('eu', at, 30);
    expect(livenessOf(lease, new Date(at.getTime() + 600_000), 600)).toEqual({
      alive: true,
      ageSeconds: 600,
      renewTime: lease.spec.renewTime,
    });
    expect(livenessOf(lease, new Date(at.getTime() + 601_000), 600)).toEqual({
      alive: false,
      why: 'silent',
      ageSeconds: 601,
    });
    expect(livenessOf(lease, new Date(at.getTime() - 5_000), 0)).toMatchObject({ alive: true, ageSeconds: 0 });
    expect(livenessOf(undefined, at, 600)).toEqual({ alive: false, why: 'never-heard' });
    expect(livenessOf({ ...lease, spec: {} }, at, 600)).toEqual({ alive: false, why: 'never-heard' });
    expect(livenessOf({ ...lease, spec: { renewTime: 'yesterday' } }, at, 600)).toEqual({
      alive: false,
      why: 'never-heard',
    });
  });
});

describe('the give-back loop renews the heartbeat', () => {
  const loop = (hub: MemoryHub, acts: boolean, lines: string[]) =>
    new FleetLoop({
      acts: () => acts,
      cluster: 'eu',
      hub,
      ledger: new MemoryLedger(),
      snapshot: () => MemorySnapshot.of({}),
      policy: {
        keep: new Map([['requests.cpu', Quantity.parse('1')]]),
        above: new Map([['requests.cpu', Quantity.parse('2')]]),
        offerAfterMs: 60_000,
        giveBackAfterMs: 300_000,
      },
      checkEveryMs: 10_000,
      observations: new FleetObservations(),
      log: (m, f) => lines.push(`${m} ${JSON.stringify(f)}`),
      now: () => at.getTime(),
    });

  it('on the leader at every round, not on a standby; a hub that does not answer is logged, not thrown', async () => {
    const hub = new MemoryHub();
    const lines: string[] = [];
    const leader = loop(hub, true, lines);
    leader.start();
    await leader.stop();
    expect(hub.heartbeats.get('eu')).toEqual(at);
    const quiet = new MemoryHub();
    const standby = loop(quiet, false, lines);
    standby.start();
    await standby.stop();
    expect(quiet.heartbeats.size).toBe(0);
    quiet.down = true;
    await loop(quiet, true, lines).heartbeat();
    expect(lines.at(-1)).toContain('fleet heartbeat failed: ');
    expect(lines.at(-1)).toContain('"fleet":"heartbeat-failed"');
  });
});
