/**
 * Two replicas writing one project's headroom ledger take turns on the watch's events
 * (docs/adr/0003-headroom-ledger.md): a writer's own answer comes before the watch event that
 * tells the other replica, so a writer that went on at once would win every round and the other
 * replica's batch would lose until its deadline ([Q5], outcome "exhausted").
 */
import { describe, expect, it, vi } from 'vitest';
import { TEST_NOW } from '../support/instant.js';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import type { LedgerChange, LedgerEntry, LedgerState, LedgerStore, StreamMarks } from '../../src/ledger/ledger.js';
import type { ReviewContext, Verdict } from '../../src/validate/admission.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import { HeadroomGuard } from '../../src/webhook/headroom/guard.js';
import { LedgerCache } from '../../src/webhook/headroom/ledger-cache.js';
import { aNamespaceCreateRequest } from '../support/fixtures.js';
import { MemoryLedger } from '../support/memory-ledger.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A ledger as the apiserver serves it: a write answers its writer `writeMs` after it is sent, and the
 * watch brings it to every replica (the writer included) `watchLagMs` after that.
 */
class ApiserverLikeLedger implements LedgerStore {
  private readonly listeners: Array<(change: LedgerChange) => void> = [];
  constructor(
    private readonly writeMs: number,
    private readonly watchLagMs: number,
    private readonly inner = new MemoryLedger(),
    /** How much later than the others this replica's writes reach the store (a slower replica). */
    private readonly arriveLateMs = 0,
  ) {
    this.inner.subscribe((change) =>
      setTimeout(() => this.listeners.forEach((l) => l(change)), this.writeMs + this.watchLagMs),
    );
  }
  /** The same store as another replica sees it, its writes arriving `arriveLateMs` after the others'. */
  replica(arriveLateMs: number): ApiserverLikeLedger {
    return new ApiserverLikeLedger(this.writeMs, this.watchLagMs, this.inner, arriveLateMs);
  }
  read(project: string): Promise<LedgerState> {
    return this.inner.read(project);
  }
  async write(
    project: string,
    state: LedgerState,
    entries: LedgerEntry[],
    settledThrough?: StreamMarks,
  ): Promise<LedgerState> {
    if (this.arriveLateMs > 0) await sleep(this.arriveLateMs);
    const written = await this.inner.write(project, state, entries, settledThrough);
    await sleep(this.writeMs);
    return written;
  }
  async announce(project: string): Promise<LedgerState | undefined> {
    if (this.arriveLateMs > 0) await sleep(this.arriveLateMs);
    const moved = await this.inner.announce(project);
    await sleep(this.writeMs);
    return moved;
  }
  release(project: string, state: LedgerState): Promise<void> {
    return this.inner.release(project, state);
  }
  subscribe(listener: (change: LedgerChange) => void): void {
    this.listeners.push(listener);
  }
}

const hotSnapshot = () =>
  MemorySnapshot.of({
    projects: [
      {
        metadata: { name: 'hot', uid: 'u' },
        spec: {
          tenant: 'acme',
          owners: [{ kind: 'User', name: 'alice' }],
          quota: { hard: { 'requests.cpu': '100000' } },
          namespaceDefaults: { quota: { hard: { 'requests.cpu': '1' } } },
        },
      },
    ],
  });
const ctx = (s: MemorySnapshot): ReviewContext => ({
  at: TEST_NOW,
  config: DEFAULT_CONFIG,
  snapshot: s,
  user: { username: 'alice', groups: [] },
});

describe("two replicas writing one project's ledger take turns", () => {
  it('a continuous stream of namespace creates through two replicas: no decision loses until its deadline', async () => {
    vi.useFakeTimers();
    try {
      const ledger = new ApiserverLikeLedger(4, 2);
      const outcomes = new Map<string, number>();
      const count = (o: string) => outcomes.set(o, (outcomes.get(o) ?? 0) + 1);
      const replicas = [0, 1].map(() => ({
        s: hotSnapshot(),
        guard: new HeadroomGuard({ ttlMs: 60_000, ledger, deadlineMs: 250, onReservation: count }),
      }));
      const decisions: Array<Promise<Verdict>> = [];
      // Two creates per millisecond for 400 ms, one to each replica (round-robin behind a Service).
      for (let ms = 0; ms < 400; ms++) {
        for (const [i, replica] of replicas.entries())
          decisions.push(
            Promise.resolve(replica.guard.decide(ctx(replica.s), aNamespaceCreateRequest(`hot-n${ms}-${i}`, 'hot'))),
          );
        await vi.advanceTimersByTimeAsync(1);
      }
      await vi.advanceTimersByTimeAsync(1000);
      const verdicts = await Promise.all(decisions);
      const refused = verdicts.filter((v) => v.violations.length > 0);
      expect(
        refused.map((v) => v.violations[0]!.message).slice(0, 2),
        JSON.stringify(Object.fromEntries(outcomes)),
      ).toEqual([]);
      expect(outcomes.get('reserved')).toBe(800);
      // The replicas did contend: rounds were lost, and won again.
      expect(outcomes.get('conflict') ?? 0).toBeGreaterThan(0);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('a replica that starts losing when a contention starts', () => {
  /**
   * Replica A decides alone (a change every 2 ms) for longer than the contention window (400 ms, the
   * window being the 250 ms deadline), then for 400 ms replica B gets half of the changes, B whose
   * writes reach the store 3 ms after A's (a slower node, a larger batch to decide).
   * B's first rounds lose to A's; as A has seen no write of B's within the window, A never yields, and
   * a B that never wins is never yielded to, unless B makes itself seen (LedgerStore.announce).
   */
  async function run(
    announce: boolean,
  ): Promise<{ refused: string[]; reserved: number; announced: number; outcomes: Record<string, number> }> {
    vi.useFakeTimers();
    try {
      const a = new ApiserverLikeLedger(4, 2);
      const b = a.replica(3);
      const announced = { count: 0 };
      const withoutAnnounce = (l: ApiserverLikeLedger): LedgerStore => ({
        read: (p) => l.read(p),
        write: (p, s, e, m) => l.write(p, s, e, m),
        release: (p, s) => l.release(p, s),
        subscribe: (x) => l.subscribe(x),
      });
      const counting = (l: ApiserverLikeLedger): LedgerStore =>
        Object.assign(withoutAnnounce(l), { announce: (p: string) => (announced.count++, l.announce(p)) });
      const outcomes = new Map<string, number>();
      const count = (o: string) => outcomes.set(o, (outcomes.get(o) ?? 0) + 1);
      const replicas = [a, b].map((ledger, i) => ({
        s: hotSnapshot(),
        guard: new HeadroomGuard({
          ttlMs: 60_000,
          ledger: announce ? counting(ledger) : withoutAnnounce(ledger),
          deadlineMs: 250,
          onReservation: (o) => count(`${['a', 'b'][i]}:${o}`),
        }),
      }));
      const decisions: Array<Promise<Verdict>> = [];
      for (let ms = 0; ms < 800; ms += 2) {
        const busy = ms < 400 ? [replicas[0]!] : replicas;
        for (const [i, replica] of busy.entries())
          decisions.push(
            Promise.resolve(replica.guard.decide(ctx(replica.s), aNamespaceCreateRequest(`hot-n${ms}-${i}`, 'hot'))),
          );
        await vi.advanceTimersByTimeAsync(2);
      }
      await vi.advanceTimersByTimeAsync(1000);
      const verdicts = await Promise.all(decisions);
      const refused = verdicts.filter((v) => v.violations.length > 0).map((v) => v.violations[0]!.message);
      return {
        refused,
        reserved: (outcomes.get('a:reserved') ?? 0) + (outcomes.get('b:reserved') ?? 0),
        announced: announced.count,
        outcomes: Object.fromEntries(outcomes),
      };
    } finally {
      vi.useRealTimers();
    }
  }

  it('without announcing itself, the slower replica loses round after round and its decisions are refused at their deadline', async () => {
    const { refused, reserved } = await run(false);
    expect(refused.length).toBeGreaterThan(0);
    expect(refused[0]).toMatch(/updated by another webhook replica first/);
    expect(reserved).toBeLessThan(600);
  }, 60_000);

  it('announcing itself after two lost rounds, it gets its turn: nothing is refused', async () => {
    const { refused, reserved, announced, outcomes } = await run(true);
    expect(refused.slice(0, 2), JSON.stringify(outcomes)).toEqual([]);
    expect(reserved).toBe(600);
    expect(announced).toBeGreaterThan(0);
  }, 60_000);
});

describe('LedgerCache.seen', () => {
  const change = (project: string, resourceVersion: string): LedgerChange => ({
    project,
    resourceVersion,
    state: () => ({ resourceVersion, entries: [] }),
  });

  it("resolves when the watch brings the version (or a later one), and not for another project's", async () => {
    const cache = new LedgerCache();
    cache.set('a', { resourceVersion: '10', entries: [] }, 0);
    cache.set('b', { resourceVersion: '10', entries: [] }, 0);
    let done = false;
    const waiting = cache.seen('a', '12', 10_000).then(() => (done = true));
    cache.observe(change('b', '13'));
    cache.observe(change('a', '11'));
    await sleep(5);
    expect(done).toBe(false);
    cache.observe(change('a', '13'));
    await waiting;
    expect(done).toBe(true);
    // Already brought: at once.
    await cache.seen('a', '12', 10_000);
  });

  it('strictly newer waits past the version itself; without the watch it gives up after its time', async () => {
    const cache = new LedgerCache();
    cache.set('a', { resourceVersion: '10', entries: [] }, 0);
    cache.observe(change('a', '12'));
    let done = false;
    const waiting = cache.seen('a', '12', 10_000, true).then(() => (done = true));
    await sleep(5);
    expect(done).toBe(false);
    cache.observe(change('a', '14'));
    await waiting;
    vi.useFakeTimers();
    try {
      let gaveUp = false;
      const giving = cache.seen('a', '20', 30).then(() => (gaveUp = true));
      await vi.advanceTimersByTimeAsync(29);
      expect(gaveUp, 'still waiting at 29 ms').toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      await giving;
      expect(gaveUp).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });
});
