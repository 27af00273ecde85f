/** Q5 in one process and across "replicas" sharing a ledger: concurrent growing decisions never overspend. */
import { fakeNow, TEST_NOW } from '../support/instant.js';
import { describe, expect, it, vi } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import type { ReviewContext, Verdict } from '../../src/validate/admission.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import { HeadroomGuard } from '../../src/webhook/headroom/guard.js';
import type { RoundPhase } from '../../src/webhook/headroom/group-commit.js';
import {
  LedgerConflict,
  type LedgerChange,
  type LedgerEntry,
  type LedgerState,
  type LedgerStore,
} from '../../src/ledger/ledger.js';
import { MemoryLedger } from '../support/memory-ledger.js';
import { aNamespaceCreateRequest, aQuotaCreateRequest } from '../support/fixtures.js';
import type { AdmissionRequest } from '../../src/webhook/review.js';

const NAMESPACES = Array.from({ length: 20 }, (_, i) => `race-n${i}`);

function snapshot(): MemorySnapshot {
  return MemorySnapshot.of({
    projects: [
      {
        metadata: { name: 'race', uid: 'u' },
        spec: { tenant: 'acme', owners: [{ kind: 'User', name: 'alice' }], quota: { hard: { 'requests.cpu': '10' } } },
      },
    ],
    namespaces: NAMESPACES.map((name) => ({
      metadata: { name, labels: { 'tenantgate.io/project': 'race', 'tenantgate.io/tenant': 'acme' } },
    })),
  });
}

const ctx = (s: MemorySnapshot): ReviewContext => ({
  at: TEST_NOW,
  config: DEFAULT_CONFIG,
  snapshot: s,
  user: { username: 'alice', groups: [] },
});

const createQuota = (ns: string, dryRun = false): AdmissionRequest => aQuotaCreateRequest(ns, { dryRun });

/** A ledger whose writes take a while, so decisions of two replicas really interleave. */
class SlowLedger implements LedgerStore {
  constructor(private readonly inner: MemoryLedger) {}
  read(project: string): Promise<LedgerState> {
    return this.inner.read(project);
  }
  async write(project: string, state: LedgerState, entries: LedgerEntry[]): Promise<LedgerState> {
    await new Promise((r) => setTimeout(r, Math.random() * 3));
    return this.inner.write(project, state, entries);
  }
  release(project: string, state: LedgerState): Promise<void> {
    return this.inner.release(project, state);
  }
}

describe('HeadroomGuard', () => {
  it('serialises one process: 20 concurrent requests for 1 CPU of 10 admit exactly 10', async () => {
    const s = snapshot();
    const guard = new HeadroomGuard({ ttlMs: 60_000 });
    const verdicts = await Promise.all(NAMESPACES.map((ns) => guard.decide(ctx(s), createQuota(ns))));
    expect(verdicts.filter((v) => v.violations.length === 0)).toHaveLength(10);
    expect(verdicts.filter((v) => v.violations.some((x) => x.rule === 'Q1'))).toHaveLength(10);
  });

  it('two replicas (separate caches and guards) sharing a ledger admit at most 10; without it they overspend', async () => {
    for (const shared of [true, false]) {
      const ledger = new MemoryLedger();
      const replicas = [0, 1].map(() => ({
        s: snapshot(),
        guard: new HeadroomGuard({ ttlMs: 60_000, ...(shared ? { ledger: new SlowLedger(ledger) } : {}) }),
      }));
      const verdicts = await Promise.all(
        NAMESPACES.map((ns, i) => replicas[i % 2]!.guard.decide(ctx(replicas[i % 2]!.s), createQuota(ns))),
      );
      const admitted = verdicts.filter((v) => v.violations.length === 0).length;
      if (shared) expect(admitted).toBe(10);
      else expect(admitted).toBe(20);
    }
  });

  it('counts admitted namespaces the cache does not show yet (a burst of Namespace CREATEs)', async () => {
    for (const ledger of [undefined, new MemoryLedger()]) {
      const s = MemorySnapshot.of({
        projects: [
          {
            metadata: { name: 'burst', uid: 'u' },
            spec: {
              tenant: 'acme',
              owners: [{ kind: 'User', name: 'alice' }],
              quota: { hard: { 'requests.cpu': '2' } },
              namespaceDefaults: { quota: { hard: { 'requests.cpu': '1' } } },
            },
          },
        ],
      });
      const guard = new HeadroomGuard({ ttlMs: 60_000, ...(ledger ? { ledger } : {}) });
      const create = (name: string) => aNamespaceCreateRequest(name, 'burst');
      const verdicts = await Promise.all(
        ['burst-a', 'burst-b', 'burst-c', 'burst-d'].map((n) => guard.decide(ctx(s), create(n))),
      );
      expect(
        verdicts.filter((v) => v.violations.length === 0),
        ledger ? 'with ledger' : 'one process',
      ).toHaveLength(2);
      expect(verdicts[3]!.violations[0]?.message).toMatch(
        /Namespace burst-d asks requests\.cpu 1 \(namespaceDefaults\), project burst has 2 of which 2 are allocated/,
      );
    }
  });

  it('dry runs reserve nothing', async () => {
    const ledger = new MemoryLedger();
    const guard = new HeadroomGuard({ ttlMs: 60_000, ledger });
    const verdict = await guard.decide(ctx(snapshot()), createQuota('race-n0', true));
    expect(verdict.violations).toEqual([]);
    expect(ledger.writes).toBe(0);
    expect(guard.pendingCount).toBe(0);
  });

  it("a reservation counts until it expires, even once this replica's cache shows its object", async () => {
    let now = 1_000;
    const ledger = new MemoryLedger();
    const guard = new HeadroomGuard({ ttlMs: 5_000, ledger, now: () => now });
    const s = snapshot();
    const big = (ns: string, cpu: string): AdmissionRequest => aQuotaCreateRequest(ns, { cpu });
    expect((await guard.decide(ctx(s), big('race-n0', '8'))).violations).toEqual([]);
    // The object never appears: 8 of 10 stay held until the TTL.
    expect((await guard.decide(ctx(s), big('race-n1', '3'))).violations[0]?.rule).toBe('Q1');
    now += 5_001;
    expect((await guard.decide(ctx(s), big('race-n1', '3'))).violations).toEqual([]);
    // race-n1's quota appears in this cache: this process forgets its own pending allocation, but the
    // ledger's entry counts on (another replica's cache may not show it yet); max(3 observed, 3 reserved).
    s.upsertQuota({
      metadata: { name: 'q', namespace: 'race-n1', resourceVersion: '5' },
      spec: { hard: { 'requests.cpu': '3' } },
    });
    guard.observe(ctx(s), 'race-n1');
    expect(guard.pendingCount).toBe(0);
    expect((await ledger.read('race')).entries.map((e) => e.namespace)).toEqual(['race-n1']);
    expect((await guard.decide(ctx(s), big('race-n2', '7'))).violations).toEqual([]);
    expect((await guard.decide(ctx(s), big('race-n3', '1'))).violations[0]?.message).toMatch(
      /of which 10 are allocated to other namespaces: nothing fits/,
    );
  });

  it('denies with Q5 when the ledger keeps colliding', async () => {
    const always: LedgerStore = {
      read: async () => ({ entries: [] }),
      write: async () => Promise.reject(new LedgerConflict('x')),
      release: async () => {},
    };
    const guard = new HeadroomGuard({ ttlMs: 1000, ledger: always, maxAttempts: 3 });
    const verdict = await guard.decide(ctx(snapshot()), createQuota('race-n0'));
    expect(verdict.violations[0]?.rule).toBe('Q5');
    expect(verdict.violations[0]?.message).toMatch(/updated by another webhook replica first 3 times in a row/);
  });
});

describe('HeadroomGuard with a watched ledger', () => {
  /** The same store without its watch (what a replica whose watch is down sees). */
  const unwatched = (inner: MemoryLedger): LedgerStore => ({
    read: (p) => inner.read(p),
    write: (p, st, e) => inner.write(p, st, e),
    release: (p, st) => inner.release(p, st),
  });

  it("two replicas taking turns on one project lose no compare-and-swap when each sees the other's writes; without the watch every turn loses one", async () => {
    const conflicts: Record<string, number> = {};
    for (const watched of [true, false]) {
      const inner = new MemoryLedger();
      const key = watched ? 'watched' : 'unwatched';
      conflicts[key] = 0;
      const replicas = [0, 1].map(() => ({
        s: snapshot(),
        guard: new HeadroomGuard({
          ttlMs: 60_000,
          ledger: watched ? inner : unwatched(inner),
          backoff: { baseMs: 1, maxMs: 2 },
          onReservation: (o) => o === 'conflict' && (conflicts[key]! += 1),
        }),
      }));
      // One decision at a time, alternating replicas (round-robin behind a Service).
      const verdicts = [];
      for (const [i, ns] of NAMESPACES.slice(0, 12).entries())
        verdicts.push(await replicas[i % 2]!.guard.decide(ctx(replicas[i % 2]!.s), createQuota(ns)));
      expect(
        verdicts.filter((v) => v.violations.length === 0),
        key,
      ).toHaveLength(10);
      expect(
        verdicts.slice(10).map((v) => v.violations[0]?.rule),
        key,
      ).toEqual(['Q1', 'Q1']);
    }
    expect(conflicts.watched).toBe(0);
    // Every turn after the first two finds its cached ledger one write behind.
    expect(conflicts.unwatched).toBeGreaterThanOrEqual(9);
  });

  it("after a lost round, decides against the winner's write the watch brought instead of reading the ledger again", async () => {
    await withFakeTimers(async () => {
      const inner = new MemoryLedger();
      const ledger = new ControlledLedger(inner);
      const guard = new HeadroomGuard({ ttlMs: 60_000, ledger, deadlineMs: 2000, backoff: { baseMs: 5, maxMs: 5 } });
      const s = snapshot();
      expect((await guard.decide(ctx(s), createQuota('race-n0'))).violations).toEqual([]);
      ledger.delayMs = 40;
      const decision = guard.decide(ctx(s), createQuota('race-n1'));
      await vi.advanceTimersByTimeAsync(10); // its write is on its way (40 ms)
      // Another replica writes first.
      const theirs = await inner.read('race');
      await inner.write('race', theirs, [
        ...theirs.entries,
        {
          namespace: 'race-n2',
          allocation: { 'requests.cpu': '1' },
          created: fakeNow(),
          expires: fakeNow() + 60_000,
        },
      ]);
      await vi.advanceTimersByTimeAsync(30 + 5 + 40); // the lost write, the pause, the winning write
      expect((await decision).violations).toEqual([]);
      expect(ledger.calls.map((c) => c.op)).toEqual(['read', 'write', 'write', 'write']); // first decision; lost; won without a read
      expect(
        inner
          .entries('race')!
          .map((e) => e.namespace)
          .sort(),
      ).toEqual(['race-n0', 'race-n1', 'race-n2']);
    });
  });

  it('ignores a change older than its cached ledger, and forgets a deleted one', async () => {
    const inner = new MemoryLedger();
    const guard = new HeadroomGuard({ ttlMs: 60_000, ledger: inner });
    expect((await guard.decide(ctx(snapshot()), createQuota('race-n0'))).violations).toEqual([]);
    const stale = { project: 'race', resourceVersion: '0', state: () => ({ resourceVersion: '0', entries: [] }) };
    guard.observeLedger(stale);
    // Still counts race-n0's reservation from its cached (newer) ledger: 10 − 1 = 9 fit, not 10.
    const big = aQuotaCreateRequest('race-n1', { cpu: '10' });
    expect((await guard.decide(ctx(snapshot()), big)).violations[0]?.message).toMatch(
      /of which 1 are allocated to other namespaces: at most 9 fits/,
    );
    expect(guard.sizes.ledgerCache).toBe(1);
    guard.observeLedger({ project: 'race', deleted: true });
    expect(guard.sizes.ledgerCache).toBe(0);
  });

  it('parses a watched ledger only for a cached project at a newer version, and drops one that turns out not to be the ledger', async () => {
    const inner = new MemoryLedger();
    const guard = new HeadroomGuard({ ttlMs: 60_000, ledger: inner });
    expect((await guard.decide(ctx(snapshot()), createQuota('race-n0'))).violations).toEqual([]);
    const own = (await inner.read('race')).resourceVersion!;
    let parsed = 0;
    const change = (project: string, resourceVersion: string, state: LedgerState | undefined) => ({
      project,
      resourceVersion,
      state: () => (parsed++, state),
    });
    // Its own write coming back on the watch, and another project's ledger: never parsed.
    guard.observeLedger(change('race', own, { resourceVersion: own, entries: [] }));
    guard.observeLedger(
      change('uncached', String(Number(own) + 5), { resourceVersion: String(Number(own) + 5), entries: [] }),
    );
    expect(parsed).toBe(0);
    expect(guard.sizes.ledgerCache).toBe(1);
    // Another replica's newer write: parsed once and taken.
    const newer = String(Number(own) + 1);
    guard.observeLedger(change('race', newer, { resourceVersion: newer, entries: [] }));
    expect(parsed).toBe(1);
    // A newer change that is not the project's ledger after all: the cache is dropped (read next time).
    guard.observeLedger(change('race', String(Number(own) + 2), undefined));
    expect(parsed).toBe(2);
    expect(guard.sizes.ledgerCache).toBe(0);
  });
});

/** Runs `fn` on vitest's clock (setTimeout and Date): what it asserts about time is the code's, not the machine's. */
async function withFakeTimers<T>(fn: () => Promise<T>): Promise<T> {
  vi.useFakeTimers();
  try {
    return await fn();
  } finally {
    vi.useRealTimers();
  }
}

/** A ledger the test controls: each call waits `delayMs` (or forever), optionally fails with a conflict. */
class ControlledLedger implements LedgerStore {
  delayMs = 0;
  hang = false;
  conflicts = 0;
  readonly calls: Array<{ op: 'read' | 'write'; at: number }> = [];
  constructor(private readonly inner = new MemoryLedger()) {}
  private async wait(op: 'read' | 'write'): Promise<void> {
    this.calls.push({ op, at: fakeNow() }); // every test of this ledger runs on fake timers
    if (this.hang) await new Promise(() => {});
    if (this.delayMs) await new Promise((r) => setTimeout(r, this.delayMs));
  }
  async read(project: string): Promise<LedgerState> {
    await this.wait('read');
    return this.inner.read(project);
  }
  async write(project: string, state: LedgerState, entries: LedgerEntry[]): Promise<LedgerState> {
    await this.wait('write');
    if (this.conflicts > 0) {
      this.conflicts -= 1;
      throw new LedgerConflict('another replica wrote first');
    }
    return this.inner.write(project, state, entries);
  }
  release(project: string, state: LedgerState): Promise<void> {
    return this.inner.release(project, state);
  }
  subscribe(listener: (change: LedgerChange) => void): void {
    this.inner.subscribe(listener);
  }
}

describe('HeadroomGuard under a slow or failing ledger (deadline and backoff)', () => {
  it('refuses with [Q5] once the deadline passes while the ledger does not answer, naming the project', async () => {
    const ledger = new ControlledLedger();
    ledger.hang = true;
    const outcomes: string[] = [];
    await withFakeTimers(async () => {
      const guard = new HeadroomGuard({
        ttlMs: 60_000,
        ledger,
        deadlineMs: 150,
        onReservation: (o) => outcomes.push(o),
      });
      let verdict: Verdict | undefined;
      void Promise.resolve(guard.decide(ctx(snapshot()), createQuota('race-n0'))).then((v) => (verdict = v));
      await vi.advanceTimersByTimeAsync(149);
      expect(verdict, 'not answered before its deadline').toBeUndefined();
      await vi.advanceTimersByTimeAsync(1);
      expect(verdict?.violations.map((v) => v.rule)).toEqual(['Q5']);
      expect(verdict!.violations[0]!.message).toBe(
        'project race: the headroom ledger did not answer within 150 ms (the API server is slow or unreachable); nothing was reserved, retry the request',
      );
      expect(outcomes).toEqual(['timeout']);
    });
  });

  it("does not let one stalled decision hold the project's later decisions past their own deadline, and recovers when the ledger does", async () => {
    await withFakeTimers(async () => {
      const ledger = new ControlledLedger();
      ledger.delayMs = 400; // each call slower than the whole deadline
      const guard = new HeadroomGuard({ ttlMs: 60_000, ledger, deadlineMs: 200 });
      const s = snapshot();
      const started = fakeNow();
      const answeredAfter: number[] = [];
      const verdicts = Promise.all(
        NAMESPACES.slice(0, 5).map((ns) =>
          Promise.resolve(guard.decide(ctx(s), createQuota(ns))).then(
            (v) => (answeredAfter.push(fakeNow() - started), v),
          ),
        ),
      );
      await vi.advanceTimersByTimeAsync(200);
      // Five decisions queued at once, each answered at its own deadline from arrival: the four behind
      // the first do not wait for its batch (200 ms), nor for the ledger (400 ms each).
      expect(answeredAfter).toEqual([200, 200, 200, 200, 200]);
      for (const v of await verdicts) expect(v.violations.map((x) => x.rule)).toEqual(['Q5']);
      ledger.delayMs = 0;
      const after = guard.decide(ctx(s), createQuota('race-n9'));
      await vi.advanceTimersByTimeAsync(0);
      expect((await after).violations).toEqual([]);
    });
  });

  it('backs off between conflicts (growing, bounded) and still admits within the deadline', async () => {
    await withFakeTimers(async () => {
      const ledger = new ControlledLedger();
      ledger.conflicts = 4;
      const guard = new HeadroomGuard({ ttlMs: 60_000, ledger, deadlineMs: 2000, backoff: { baseMs: 20, maxMs: 60 } });
      let verdict: Verdict | undefined;
      void Promise.resolve(guard.decide(ctx(snapshot()), createQuota('race-n0'))).then((v) => (verdict = v));
      // The four pauses are at most 20 + 40 + 60 + 60 ms: admitted by then.
      await vi.advanceTimersByTimeAsync(20 + 40 + 60 + 60);
      expect(verdict?.violations, 'admitted within 180 ms').toEqual([]);
      const writes = ledger.calls.filter((c) => c.op === 'write').map((c) => c.at);
      expect(writes).toHaveLength(5);
      // On the fake clock a gap is the pause alone: jittered between half and all of 20, 40, 60 (capped), 60 ms.
      const gaps = writes.slice(1).map((t, i) => t - writes[i]!);
      for (const [i, cap] of [20, 40, 60, 60].entries()) {
        expect(gaps[i]!, `pause ${i + 1}`).toBeGreaterThanOrEqual(Math.floor(cap / 2));
        expect(gaps[i]!, `pause ${i + 1}`).toBeLessThanOrEqual(cap);
      }
    });
  });

  it('keeps retrying a contended ledger until the deadline, not for a fixed number of rounds', async () => {
    const ledger = new ControlledLedger();
    ledger.conflicts = 15; // more rounds than the old fixed cap of 10
    const outcomes: string[] = [];
    const guard = new HeadroomGuard({
      ttlMs: 60_000,
      ledger,
      deadlineMs: 2000,
      backoff: { baseMs: 1, maxMs: 4 },
      onReservation: (o) => outcomes.push(o),
    });
    const verdict = await withFakeTimers(async () => {
      const decision = Promise.resolve(guard.decide(ctx(snapshot()), createQuota('race-n0')));
      await vi.advanceTimersByTimeAsync(15 * 4); // fifteen pauses of at most 4 ms, well within the deadline
      return decision;
    });
    expect(verdict.violations).toEqual([]);
    expect(ledger.calls.filter((c) => c.op === 'write')).toHaveLength(16);
    expect(outcomes.filter((o) => o === 'conflict')).toHaveLength(15);
    expect(outcomes.at(-1)).toBe('reserved');
  });

  it('tells where a batch spent its time, phase by phase: a lost round as `lost`, each write as `write`', async () => {
    const ledger = new ControlledLedger();
    ledger.conflicts = 2;
    const phases: Array<[RoundPhase, number]> = [];
    const elapsed = await withFakeTimers(async () => {
      // Made under fake timers: the guard's clock (Date.now) is the fake one, which the back-offs advance.
      const guard = new HeadroomGuard({
        ttlMs: 60_000,
        ledger,
        deadlineMs: 2000,
        backoff: { baseMs: 20, maxMs: 20 },
        onRoundPhase: (p, ms) => phases.push([p, ms]),
      });
      const started = fakeNow();
      const decision = Promise.resolve(guard.decide(ctx(snapshot()), createQuota('race-n0')));
      await vi.advanceTimersByTimeAsync(2 * 20);
      expect((await decision).violations).toEqual([]);
      return fakeNow() - started;
    });
    const count = (p: RoundPhase) => phases.filter(([q]) => q === p).length;
    expect(count('queued')).toBe(1);
    expect(count('turn')).toBe(1);
    expect(count('write')).toBe(3); // two lost, one won
    expect(count('lost')).toBe(2);
    expect(count('decide')).toBe(3);
    // Two back-offs of 10–20 ms each (jittered) are in `lost`; the phases add up to the batch's time.
    expect(phases.filter(([q]) => q === 'lost').reduce((a, [, ms]) => a + ms, 0)).toBeGreaterThanOrEqual(19);
    expect(phases.reduce((a, [, ms]) => a + ms, 0)).toBeLessThanOrEqual(elapsed + 1);
  });

  it('refuses a decision that never wins the ledger at its deadline, saying it lost to another replica', async () => {
    const always: LedgerStore = {
      read: async () => ({ entries: [] }),
      write: async () => Promise.reject(new LedgerConflict('x')),
      release: async () => {},
    };
    const outcomes: string[] = [];
    const guard = new HeadroomGuard({
      ttlMs: 60_000,
      ledger: always,
      deadlineMs: 150,
      backoff: { baseMs: 2, maxMs: 10 },
      onReservation: (o) => outcomes.push(o),
    });
    const verdict = await withFakeTimers(async () => {
      let answered: Verdict | undefined;
      void Promise.resolve(guard.decide(ctx(snapshot()), createQuota('race-n0'))).then((v) => (answered = v));
      await vi.advanceTimersByTimeAsync(149);
      expect(answered, 'still trying before its deadline').toBeUndefined();
      await vi.advanceTimersByTimeAsync(1);
      return answered!;
    });
    expect(verdict.violations.map((v) => v.rule)).toEqual(['Q5']);
    expect(verdict.violations[0]!.message).toMatch(
      /^project race: the headroom ledger was updated by another webhook replica first \d+ times in a row and no update of this replica won within 150 ms; nothing was reserved, retry the request$/,
    );
    expect(outcomes.filter((o) => o === 'conflict').length).toBeGreaterThan(3);
    expect(outcomes.at(-1)).toBe('exhausted');
  });

  it('a batch that lost a round takes in the decisions that queued meanwhile: one write records them all', async () => {
    await withFakeTimers(async () => {
      const inner = new MemoryLedger();
      const ledger = new ControlledLedger(inner);
      ledger.conflicts = 2;
      const guard = new HeadroomGuard({ ttlMs: 60_000, ledger, deadlineMs: 2000, backoff: { baseMs: 30, maxMs: 30 } });
      const s = snapshot();
      const first = guard.decide(ctx(s), createQuota('race-n0'));
      await vi.advanceTimersByTimeAsync(5); // the first batch is backing off (15–30 ms) after its first conflict
      const later = NAMESPACES.slice(1, 4).map((ns) => guard.decide(ctx(s), createQuota(ns)));
      await vi.advanceTimersByTimeAsync(2 * 30);
      const verdicts = await Promise.all([first, ...later]);
      for (const v of verdicts) expect(v.violations).toEqual([]);
      expect(inner.writes).toBe(1);
      expect((await inner.read('race')).entries.map((e) => e.namespace).sort()).toEqual([
        'race-n0',
        'race-n1',
        'race-n2',
        'race-n3',
      ]);
    });
  });

  it('dry runs never touch the ledger, slow or not', async () => {
    const ledger = new ControlledLedger();
    ledger.hang = true;
    const guard = new HeadroomGuard({ ttlMs: 60_000, ledger, deadlineMs: 100 });
    // The ledger is read to see other replicas' reservations, but nothing is written on a dry run.
    const verdict = await guard.decide(ctx(snapshot()), createQuota('race-n0', true));
    expect(ledger.calls.filter((c) => c.op === 'write')).toEqual([]);
    expect(verdict.violations.map((v) => v.rule)).toEqual(['Q5']);
  });
});

describe('HeadroomGuard when the caller has gone', () => {
  it("stops waiting for the ledger as soon as the request's signal aborts, and reserves nothing", async () => {
    const ledger = new ControlledLedger();
    ledger.hang = true;
    const guard = new HeadroomGuard({ ttlMs: 60_000, ledger, deadlineMs: 60_000 });
    const gone = new AbortController();
    const verdict = guard.decide(ctx(snapshot()), createQuota('race-n0'), gone.signal);
    setTimeout(() => gone.abort(), 20);
    const v = await verdict;
    expect(v.violations.map((x) => x.rule)).toEqual(['Q5']);
    expect(ledger.calls.filter((c) => c.op === 'write')).toEqual([]);
  });
});

describe('HeadroomGuard group commit', () => {
  /** A ledger whose writes take `ms`, counting them. */
  class TimedLedger extends MemoryLedger {
    constructor(private readonly ms: number) {
      super();
    }
    override async write(project: string, state: LedgerState, entries: LedgerEntry[]): Promise<LedgerState> {
      await new Promise((r) => setTimeout(r, this.ms));
      return super.write(project, state, entries);
    }
  }
  const namespaceCreate = (name: string) => aNamespaceCreateRequest(name, 'burst');
  const burstSnapshot = () =>
    MemorySnapshot.of({
      projects: [
        {
          metadata: { name: 'burst', uid: 'u' },
          spec: {
            tenant: 'acme',
            owners: [{ kind: 'User', name: 'alice' }],
            quota: { hard: { 'requests.cpu': '150' } },
            namespaceDefaults: { quota: { hard: { 'requests.cpu': '1' } } },
          },
        },
      ],
    });

  it('200 concurrent namespace creates with room for 150: exactly 150 admitted, no [Q5], far fewer writes than admissions', async () => {
    const ledger = new TimedLedger(20);
    const sizes: number[] = [];
    const guard = new HeadroomGuard({ ttlMs: 60_000, ledger, onLedgerWrite: (n) => sizes.push(n) });
    const s = burstSnapshot();
    const verdicts = await Promise.all(
      Array.from({ length: 200 }, (_, i) => guard.decide(ctx(s), namespaceCreate(`burst-n${i}`))),
    );
    expect(verdicts.filter((v) => v.violations.length === 0)).toHaveLength(150);
    expect(verdicts.filter((v) => v.violations.some((x) => x.rule === 'Q5'))).toHaveLength(0);
    expect(verdicts.filter((v) => v.violations.some((x) => x.rule === 'Q1'))).toHaveLength(50);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(150);
    expect(ledger.writes).toBe(sizes.length);
    expect(ledger.writes / 150).toBeLessThanOrEqual(0.25);
    // The ledger holds one entry per admitted namespace.
    expect((await ledger.read('burst')).entries).toHaveLength(150);
  });

  it('two replicas group-committing on one ledger never overspend (conflicts re-decide the whole batch)', async () => {
    for (let round = 0; round < 5; round++) {
      const ledger = new TimedLedger(3);
      const outcomes: string[] = [];
      const replicas = [0, 1].map(() => ({
        s: burstSnapshot(),
        guard: new HeadroomGuard({ ttlMs: 60_000, ledger, onReservation: (o) => outcomes.push(o) }),
      }));
      const verdicts = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          replicas[i % 2]!.guard.decide(ctx(replicas[i % 2]!.s), namespaceCreate(`burst-n${i}`)),
        ),
      );
      expect(verdicts.filter((v) => v.violations.length === 0)).toHaveLength(150);
      expect(outcomes.filter((o) => o === 'reserved')).toHaveLength(150);
    }
  });

  it('a failed write denies the whole batch with [Q5] and remembers nothing', async () => {
    const failing: LedgerStore = {
      read: async () => ({ entries: [] }),
      write: () => new Promise((_, reject) => setTimeout(() => reject(new Error('etcd unavailable')), 5)),
      release: async () => {},
    };
    const guard = new HeadroomGuard({ ttlMs: 60_000, ledger: failing });
    const s = burstSnapshot();
    const verdicts = await Promise.all(
      Array.from({ length: 10 }, (_, i) => guard.decide(ctx(s), namespaceCreate(`burst-n${i}`))),
    );
    for (const v of verdicts)
      expect(v.violations.map((x) => x.message)).toEqual([
        'could not reserve headroom in the ledger of project burst: etcd unavailable',
      ]);
    expect(guard.pendingCount).toBe(0);
  });
});

describe('HeadroomGuard: entries leave the ledger only by expiry, and never shrink', () => {
  it('a later write of the same quota keeps the larger reservation of every resource (two writes at one resourceVersion)', async () => {
    const now = 1_000;
    const ledger = new MemoryLedger();
    const s = MemorySnapshot.of({
      projects: [
        {
          metadata: { name: 'race', uid: 'u' },
          spec: {
            tenant: 'acme',
            owners: [{ kind: 'User', name: 'alice' }],
            quota: { hard: { 'requests.cpu': '10', 'requests.memory': '10' } },
          },
        },
      ],
      namespaces: [
        { metadata: { name: 'race-n0', labels: { 'tenantgate.io/project': 'race', 'tenantgate.io/tenant': 'acme' } } },
      ],
      quotas: [
        {
          metadata: { name: 'q', namespace: 'race-n0', resourceVersion: '7' },
          spec: { hard: { 'requests.cpu': '1', 'requests.memory': '1' } },
        },
      ],
    });
    const guard = new HeadroomGuard({ ttlMs: 30_000, ledger, now: () => now });
    const update = (cpu: string, memory: string): AdmissionRequest => ({
      uid: `${cpu}-${memory}`,
      kind: { group: '', version: 'v1', kind: 'ResourceQuota' },
      operation: 'UPDATE',
      namespace: 'race-n0',
      name: 'q',
      userInfo: { username: 'alice', groups: [] },
      object: {
        metadata: { name: 'q', namespace: 'race-n0', resourceVersion: '7' },
        spec: { hard: { 'requests.cpu': cpu, 'requests.memory': memory } },
      },
      oldObject: {
        metadata: { name: 'q', namespace: 'race-n0', resourceVersion: '7' },
        spec: { hard: { 'requests.cpu': '1', 'requests.memory': '1' } },
      },
    });
    expect((await guard.decide(ctx(s), update('4', '1'))).violations).toEqual([]);
    expect((await guard.decide(ctx(s), update('1', '4'))).violations).toEqual([]);
    // Either may be the one the apiserver stores: the entry holds both maxima, and both versions.
    const entries = (await ledger.read('race')).entries;
    expect(entries).toHaveLength(1);
    expect(entries[0]!.allocation).toEqual({ 'requests.cpu': '4', 'requests.memory': '4' });
    expect(entries[0]!.versions).toHaveLength(3);
  });

  it('keeps using a deleted ledger while an entry in it is live, and releases it (finalizer) once none is', async () => {
    let now = 1_000;
    const ledger = new MemoryLedger();
    const s = snapshot();
    const guard = new HeadroomGuard({ ttlMs: 5_000, ledger, now: () => now });
    expect((await guard.decide(ctx(s), aQuotaCreateRequest('race-n0', { cpu: '8' }))).violations).toEqual([]);
    ledger.delete('race');
    // A fresh replica (nothing cached) still reads the marked ledger and counts its entry.
    const fresh = new HeadroomGuard({ ttlMs: 5_000, ledger, now: () => now });
    expect((await fresh.decide(ctx(s), aQuotaCreateRequest('race-n1', { cpu: '3' }))).violations[0]?.rule).toBe('Q1');
    expect(ledger.releases).toBe(0);
    now += 5_001;
    const later = new HeadroomGuard({ ttlMs: 5_000, ledger, now: () => now });
    expect((await later.decide(ctx(s), aQuotaCreateRequest('race-n1', { cpu: '3' }))).violations).toEqual([]);
    expect(ledger.releases).toBe(1);
    expect((await ledger.read('race')).deleting).toBeUndefined();
    expect((await ledger.read('race')).entries.map((e) => e.namespace)).toEqual(['race-n1']);
  });
});

describe('HeadroomGuard with a cache that is not current', () => {
  it("refuses decisions that take the project's turn with [Q5], lets the others through", async () => {
    let current = false;
    const guard = new HeadroomGuard({ ttlMs: 30_000, ledger: new MemoryLedger(), cacheCurrent: () => current });
    const s = snapshot();
    const refused = await guard.decide(ctx(s), createQuota('race-n0'));
    expect(refused.violations.map((v) => v.message)).toEqual([
      "project race: this webhook replica's watch cache is re-listing or its watch is broken, so it cannot see recent changes; nothing was reserved, retry the request",
    ]);
    // A namespace update takes no turn: decided as ever.
    const relabel: AdmissionRequest = {
      uid: 'u',
      kind: { group: '', version: 'v1', kind: 'Namespace' },
      operation: 'UPDATE',
      name: 'race-n0',
      userInfo: { username: 'alice', groups: [] },
      object: {
        metadata: {
          name: 'race-n0',
          labels: { 'tenantgate.io/project': 'race', 'tenantgate.io/tenant': 'acme', team: 'a' },
        },
      },
      oldObject: {
        metadata: { name: 'race-n0', labels: { 'tenantgate.io/project': 'race', 'tenantgate.io/tenant': 'acme' } },
      },
    };
    expect((await guard.decide(ctx(s), relabel)).violations).toEqual([]);
    current = true;
    expect((await guard.decide(ctx(s), createQuota('race-n0'))).violations).toEqual([]);
  });
});

describe('HeadroomGuard keeps its per-process structures bounded', () => {
  it('drops expired entries on its own, and everything of a project when the project is deleted', async () => {
    let now = 1_000;
    const ledger = new MemoryLedger();
    const guard = new HeadroomGuard({ ttlMs: 5_000, ledger, now: () => now });
    const s = snapshot();
    for (const ns of NAMESPACES.slice(0, 4))
      expect((await guard.decide(ctx(s), createQuota(ns))).violations).toEqual([]);
    await new Promise((r) => setImmediate(r)); // the batch's queue goes once the batch has finished
    expect(guard.sizes).toEqual({ pending: 4, writes: 4, ledgerCache: 1, queues: 0, turns: 1 });
    guard.forgetProject('race');
    expect(guard.sizes).toEqual({ pending: 0, writes: 0, ledgerCache: 0, queues: 0, turns: 0 });
    for (const ns of NAMESPACES.slice(4, 6))
      expect((await guard.decide(ctx(s), createQuota(ns))).violations).toEqual([]);
    await new Promise((r) => setImmediate(r));
    expect(guard.sizes.pending).toBe(2);
    // Never asked about these namespaces again: a cache event elsewhere after the TTL sweeps them.
    now += 5_001;
    guard.observe(ctx(s), 'elsewhere');
    expect(guard.sizes).toEqual({ pending: 0, writes: 0, ledgerCache: 0, queues: 0, turns: 0 });
  });
});

describe('HeadroomGuard: "growing" is judged against the lowest count any replica may hold', () => {
  it('a quota delete that looks non-growing to a replica that has not seen the quota yet is still checked (Q1)', async () => {
    const ledger = new MemoryLedger();
    const project = {
      metadata: { name: 'race', uid: 'u' },
      spec: {
        tenant: 'acme',
        owners: [{ kind: 'User' as const, name: 'alice' }],
        quota: { hard: { 'requests.cpu': '2' } },
      },
    };
    const labels = { 'tenantgate.io/project': 'race', 'tenantgate.io/tenant': 'acme' };
    const q1 = {
      metadata: { name: 'q1', namespace: 'race-a', resourceVersion: '5' },
      spec: { hard: { 'requests.cpu': '1' } },
    };
    const q2 = {
      metadata: { name: 'q2', namespace: 'race-a', resourceVersion: '9' },
      spec: { hard: { 'requests.cpu': '0' } },
    };
    const cache = (quotas: (typeof q1)[]) =>
      MemorySnapshot.of({
        projects: [project],
        namespaces: ['race-a', 'race-b'].map((name) => ({ metadata: { name, labels } })),
        quotas,
      });
    const [r1, r2, r3] = [0, 1, 2].map(() => new HeadroomGuard({ ttlMs: 30_000, ledger }));
    // Replica 1 adds q2 (cpu 0) to race-a: race-a now holds 0. Replica 3's cache shows it, replica 2's not yet.
    expect(
      (await r1!.decide(ctx(cache([q1])), aQuotaCreateRequest('race-a', { name: 'q2', cpu: '0' }))).violations,
    ).toEqual([]);
    const seesQ2 = cache([q1, q2]);
    const lags = cache([q1]);
    // Replica 3 counts race-a at 0 and gives its CPU to race-b.
    expect((await r3!.decide(ctx(seesQ2), aQuotaCreateRequest('race-b', { cpu: '2' }))).violations).toEqual([]);
    // Replica 2 deletes q2: by its cache race-a keeps holding 1 (q1), but in truth it goes from 0 to 1.
    const deleteQ2: AdmissionRequest = {
      uid: 'd',
      kind: { group: '', version: 'v1', kind: 'ResourceQuota' },
      operation: 'DELETE',
      namespace: 'race-a',
      name: 'q2',
      userInfo: { username: 'alice', groups: [] },
      oldObject: q2,
    };
    const verdict = await r2!.decide(ctx(lags), deleteQ2);
    expect(verdict.violations.map((v) => v.rule)).toEqual(['Q1']);
    expect(verdict.violations[0]!.message).toMatch(
      /ResourceQuota race-a\/q2 asks requests\.cpu 1, project race has 2 of which 2 are allocated to other namespaces/,
    );
  });
});
