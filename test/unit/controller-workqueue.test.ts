import { describe, expect, it } from 'vitest';
import {
  ItemExponentialRateLimiter,
  MaxOfRateLimiter,
  TokenBucketRateLimiter,
  WorkQueue,
  defaultControllerRateLimiter,
  type TimerClock,
} from '../../src/controller/workqueue.js';

/** A manual clock: timers fire only when advance() passes them. */
class FakeClock implements TimerClock {
  t = 0;
  private timers = new Map<number, { at: number; fn: () => void }>();
  private nextId = 1;
  now(): number {
    return this.t;
  }
  setTimer(fn: () => void, ms: number): unknown {
    const id = this.nextId++;
    this.timers.set(id, { at: this.t + ms, fn });
    return id;
  }
  clearTimer(handle: unknown): void {
    this.timers.delete(handle as number);
  }
  get pending(): number {
    return this.timers.size;
  }
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      let first: [number, { at: number; fn: () => void }] | undefined;
      for (const e of this.timers) if (e[1].at <= end && (!first || e[1].at < first[1].at)) first = e;
      if (!first) break;
      this.timers.delete(first[0]);
      this.t = first[1].at;
      first[1].fn();
    }
    this.t = end;
  }
}

describe('ItemExponentialRateLimiter', () => {
  it('doubles from 5 ms per failure and caps at 60 s; forget starts over', () => {
    const l = new ItemExponentialRateLimiter<string>(5, 60_000);
    const delays = Array.from({ length: 16 }, () => l.when('a'));
    expect(delays.slice(0, 5)).toEqual([5, 10, 20, 40, 80]);
    expect(delays[13]).toBe(40_960);
    expect(delays[14]).toBe(60_000);
    expect(delays[15]).toBe(60_000);
    expect(l.retries('a')).toBe(16);
    expect(l.when('b')).toBe(5); // per item
    l.forget('a');
    expect(l.retries('a')).toBe(0);
    expect(l.when('a')).toBe(5);
  });
});

describe('TokenBucketRateLimiter', () => {
  it('lets a burst through, then spaces requests at 1/qps, refilling with time', () => {
    const clock = new FakeClock();
    const l = new TokenBucketRateLimiter<string>(10, 100, clock);
    for (let i = 0; i < 100; i++) expect(l.when(`k${i}`)).toBe(0);
    expect(l.when('x')).toBe(100);
    expect(l.when('y')).toBe(200);
    clock.advance(1000); // +10 tokens, 2 of them already promised
    expect(l.when('z')).toBe(0);
  });
});

describe('MaxOfRateLimiter / default', () => {
  it('takes the longest delay; the default combines 5 ms backoff with 10 qps / burst 100', () => {
    const clock = new FakeClock();
    const l = defaultControllerRateLimiter<string>({}, clock);
    expect(l.when('a')).toBe(5);
    expect(l.when('a')).toBe(10);
    for (let i = 0; i < 98; i++) l.when(`k${i}`);
    expect(l.when('b')).toBe(100); // the bucket is empty: 1/qps
    const m = new MaxOfRateLimiter<string>(
      new ItemExponentialRateLimiter(1, 4),
      new ItemExponentialRateLimiter(3, 100),
    );
    expect([m.when('a'), m.when('a'), m.when('a')]).toEqual([3, 6, 12]);
    expect(m.retries('a')).toBe(3);
    m.forget('a');
    expect(m.retries('a')).toBe(0);
  });
});

describe('WorkQueue', () => {
  it('deduplicates keys that are waiting and hands them out in FIFO order', async () => {
    const q = new WorkQueue<string>({ clock: new FakeClock() });
    q.add('a');
    q.add('b');
    q.add('a');
    expect(q.len()).toBe(2);
    expect(await q.get()).toBe('a');
    expect(await q.get()).toBe('b');
    expect(q.len()).toBe(0);
  });

  it('never hands one key to two workers: an add while processing is deferred until done', async () => {
    const q = new WorkQueue<string>({ clock: new FakeClock() });
    q.add('a');
    const first = await q.get();
    expect(first).toBe('a');
    q.add('a'); // dirty while processing
    q.add('a');
    expect(q.len()).toBe(0);
    let second: string | undefined;
    void q.get().then((k) => (second = k));
    await Promise.resolve();
    expect(second).toBeUndefined();
    q.done('a');
    await Promise.resolve();
    expect(second).toBe('a'); // exactly once more
    q.done('a');
    expect(q.len()).toBe(0);
    expect(q.processingLen()).toBe(0);
  });

  it('wakes a waiting getter on add', async () => {
    const q = new WorkQueue<string>({ clock: new FakeClock() });
    const got = q.get();
    q.add('x');
    expect(await got).toBe('x');
    expect(q.processingLen()).toBe(1);
  });

  it('addAfter uses one timer for all delayed keys, earliest delay wins, and dedupes on arrival', async () => {
    const clock = new FakeClock();
    const q = new WorkQueue<string>({ clock });
    q.addAfter('a', 100);
    q.addAfter('b', 50);
    q.addAfter('a', 30); // earlier wins
    q.addAfter('a', 500); // later ignored
    expect(clock.pending).toBe(1);
    expect(q.waitingLen()).toBe(2);
    clock.advance(29);
    expect(q.len()).toBe(0);
    clock.advance(1);
    expect(q.len()).toBe(1);
    clock.advance(20);
    expect(q.len()).toBe(2);
    expect(q.waitingLen()).toBe(0);
    expect(clock.pending).toBe(0);
    expect(await q.get()).toBe('a');
    expect(await q.get()).toBe('b');
  });

  it('addRateLimited backs off per key (5, 10, 20 ms), forget resets, a floor can be given', () => {
    const clock = new FakeClock();
    const q = new WorkQueue<string>({ clock });
    expect(q.addRateLimited('a')).toBe(5);
    clock.advance(5);
    expect(q.len()).toBe(1);
    expect(q.addRateLimited('a')).toBe(10);
    expect(q.addRateLimited('a')).toBe(20);
    expect(q.numRequeues('a')).toBe(3);
    q.forget('a');
    expect(q.numRequeues('a')).toBe(0);
    expect(q.addRateLimited('b', 1000)).toBe(1000);
  });

  it('a failing key keeps coming back: nothing stops the loop for it', async () => {
    const clock = new FakeClock();
    const q = new WorkQueue<string>({ clock });
    q.add('bad');
    let attempts = 0;
    for (let i = 0; i < 20; i++) {
      const key = await q.get();
      expect(key).toBe('bad');
      attempts++;
      q.addRateLimited(key!);
      q.done(key!);
      clock.advance(60_000);
    }
    expect(attempts).toBe(20);
  });

  it('shutDown releases waiting getters with undefined and ignores new adds; drain waits for keys in hand', async () => {
    const clock = new FakeClock();
    const q = new WorkQueue<string>({ clock });
    q.add('a');
    const key = await q.get();
    const waiting = q.get();
    q.addAfter('later', 1000);
    let drained = false;
    const drain = q.shutDownWithDrain().then(() => (drained = true));
    expect(await waiting).toBeUndefined();
    expect(await q.get()).toBeUndefined();
    q.add('b');
    expect(q.len()).toBe(0);
    expect(clock.pending).toBe(0);
    await Promise.resolve();
    expect(drained).toBe(false);
    q.done(key!);
    await drain;
    expect(drained).toBe(true);
  });

  it('serves several workers concurrently, each key by one worker at a time', async () => {
    const q = new WorkQueue<string>();
    const active = new Set<string>();
    let overlaps = 0;
    let processed = 0;
    const worker = async () => {
      for (;;) {
        const k = await q.get();
        if (k === undefined) return;
        if (active.has(k)) overlaps++;
        active.add(k);
        await new Promise((r) => setTimeout(r, Math.random() * 3));
        active.delete(k);
        processed++;
        q.done(k);
      }
    };
    const workers = [worker(), worker(), worker(), worker()];
    for (let i = 0; i < 200; i++) {
      q.add(`k${i % 7}`);
      if (i % 10 === 0) await new Promise((r) => setTimeout(r, 1));
    }
    await new Promise((r) => setTimeout(r, 50));
    await q.shutDownWithDrain();
    await Promise.all(workers);
    expect(overlaps).toBe(0);
    expect(processed).toBeGreaterThanOrEqual(7);
  });
});
