/**
 * The controller's manager (src/controller/manager.ts): the runnables that need no lease start at once
 * (servers, then caches; the others once the caches have synced), those that need it only once the
 * caches have synced and the lease is won; they stop when it is lost (reason lease-lost) and start
 * again when it is won back; shutdown stops what needs the lease first, releases the lease after
 * the other `others`, and the servers last.
 */
import { describe, expect, it } from 'vitest';
import { Manager, type LeaseCampaign, type Runnable, type RunnableGroup } from '../../src/controller/manager.js';

function recorder() {
  const events: string[] = [];
  const runnable = (name: string, needsLeaderElection: boolean, group?: RunnableGroup): Runnable => ({
    name,
    needsLeaderElection,
    ...(group ? { group } : {}),
    start: () => {
      events.push(`start ${name}`);
    },
    stop: async (reason) => {
      events.push(`stop ${name} (${reason})`);
    },
  });
  const campaign: LeaseCampaign = {
    start: () => events.push('campaign start'),
    stop: async () => {
      events.push('campaign stop');
    },
    release: async () => {
      events.push('release');
      return true;
    },
  };
  return { events, runnable, campaign };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('Manager', () => {
  it('starts servers, caches and the campaign at once; the others after the sync; the leader runnables only once synced and leading', async () => {
    const { events, runnable, campaign } = recorder();
    const leading: boolean[] = [];
    const m = new Manager({ leaderElection: true, onLeading: (l) => leading.push(l) });
    m.add(runnable('reconcilers', true))
      .add(runnable('fleet-loop', false))
      .add(runnable('probes', false, 'servers'))
      .add(runnable('metrics', false, 'servers'))
      .add(runnable('caches', false, 'caches'))
      .useLeaseCampaign(campaign);
    await m.start();
    expect(events).toEqual(['start probes', 'start metrics', 'start caches', 'campaign start']);
    m.wonLease();
    await settle();
    expect(m.isLeading()).toBe(false); // not before the caches have synced
    expect(events).not.toContain('start reconcilers');
    m.cachesSynced();
    await settle();
    expect(events.slice(4)).toEqual(['start fleet-loop', 'start reconcilers']);
    expect(m.isLeading()).toBe(true);
    expect(leading).toEqual([true]);

    m.lostLease();
    await settle();
    expect(events.at(-1)).toBe('stop reconcilers (lease-lost)');
    expect(m.isLeading()).toBe(false);
    m.wonLease();
    await settle();
    expect(events.at(-1)).toBe('start reconcilers');
    expect(leading).toEqual([true, false, true]);

    events.length = 0;
    await m.stop();
    expect(events).toEqual([
      'campaign stop',
      'stop reconcilers (shutdown)',
      'stop fleet-loop (shutdown)',
      'release',
      'stop caches (shutdown)',
      'stop metrics (shutdown)',
      'stop probes (shutdown)',
    ]);
    expect(leading.at(-1)).toBe(false);
  });

  it('without leader election leads once the caches have synced; a stop before the sync starts nothing more', async () => {
    const { events, runnable } = recorder();
    const m = new Manager({ leaderElection: false });
    m.add(runnable('reconcilers', true));
    await m.start();
    m.cachesSynced();
    await settle();
    expect(m.isLeading()).toBe(true);
    await m.stop();
    expect(events).toEqual(['start reconcilers', 'stop reconcilers (shutdown)']);

    const late = recorder();
    const n = new Manager({ leaderElection: false });
    n.add(late.runnable('reconcilers', true)).add(late.runnable('fleet-loop', false));
    await n.start();
    await n.stop();
    n.cachesSynced();
    await settle();
    expect(late.events).toEqual([]);
  });

  it('refuses a runnable that needs the lease outside the group "others"', () => {
    const { runnable } = recorder();
    expect(() => new Manager({ leaderElection: true }).add(runnable('view', true, 'servers'))).toThrow(
      'runnable view: one that needs the lease belongs to the group "others", not "servers"',
    );
  });
});
