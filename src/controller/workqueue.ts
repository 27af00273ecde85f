/**
 * A rate-limited work queue in the manner of client-go's `workqueue`: keys, not objects; a key is
 * never handed to two workers at once (dirty/processing sets); delayed adds wait in one map served by
 * a single timer (no per-item timers that could die silently); failures come back with per-item
 * exponential backoff and an overall token bucket. No I/O; the clock is injectable for tests.
 */

/**
 * The system clock and its timers, for backoffs and delays: timeouts, never decisions (those read
 * src/clock.ts's Clock). Injectable for tests.
 */
export interface TimerClock {
  now(): number;
  setTimer(fn: () => void, ms: number): unknown;
  clearTimer(handle: unknown): void;
}

const realClock: TimerClock = {
  now: () => Date.now(),
  setTimer: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref?.();
    return t;
  },
  clearTimer: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

export interface RateLimiter<K> {
  /** How long to wait before the key may be processed again; records one more failure. */
  when(key: K): number;
  /** Forgets the key's failures (after a success). */
  forget(key: K): void;
  /** How many failures are recorded for the key. */
  retries(key: K): number;
}

/** Per-item exponential backoff: base, 2×base, 4×base … capped at max (client-go: 5 ms … 1000 s; ours caps at 60 s). */
export class ItemExponentialRateLimiter<K> implements RateLimiter<K> {
  private readonly failures = new Map<K, number>();
  constructor(
    readonly baseMs = 5,
    readonly maxMs = 60_000,
  ) {}

  when(key: K): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    // 2 ** 60 overflows nothing in JS but keep the exponent small anyway.
    const delay = this.baseMs * 2 ** Math.min(n, 40);
    return Math.min(delay, this.maxMs);
  }
  forget(key: K): void {
    this.failures.delete(key);
  }
  retries(key: K): number {
    return this.failures.get(key) ?? 0;
  }
}

/**
 * An overall token bucket (qps refill, burst capacity), shared by all keys. Like Go's rate.Limiter
 * `Reserve`: a request always gets a slot, possibly in the future, and the delay to it is returned.
 */
export class TokenBucketRateLimiter<K> implements RateLimiter<K> {
  private tokens: number;
  private last: number;
  constructor(
    readonly qps = 10,
    readonly burst = 100,
    private readonly clock: TimerClock = realClock,
  ) {
    this.tokens = burst;
    this.last = clock.now();
  }

  when(_key: K): number {
    const now = this.clock.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) * this.qps) / 1000);
    this.last = now;
    this.tokens -= 1;
    if (this.tokens >= 0) return 0;
    return Math.ceil((-this.tokens * 1000) / this.qps);
  }
  forget(_key: K): void {}
  retries(_key: K): number {
    return 0;
  }
}

/** The longest delay of several limiters (client-go's MaxOfRateLimiter). */
export class MaxOfRateLimiter<K> implements RateLimiter<K> {
  private readonly limiters: RateLimiter<K>[];
  constructor(...limiters: RateLimiter<K>[]) {
    this.limiters = limiters;
  }
  when(key: K): number {
    let max = 0;
    for (const l of this.limiters) max = Math.max(max, l.when(key));
    return max;
  }
  forget(key: K): void {
    for (const l of this.limiters) l.forget(key);
  }
  retries(key: K): number {
    let max = 0;
    for (const l of this.limiters) max = Math.max(max, l.retries(key));
    return max;
  }
}

export interface RateLimiterOptions {
  baseDelayMs?: number;
  maxDelayMs?: number;
  qps?: number;
  burst?: number;
}

/** 5 ms doubling up to 60 s per item, and 10 qps with a burst of 100 overall. */
export function defaultControllerRateLimiter<K>(
  options: RateLimiterOptions = {},
  clock: TimerClock = realClock,
): RateLimiter<K> {
  return new MaxOfRateLimiter<K>(
    new ItemExponentialRateLimiter<K>(options.baseDelayMs ?? 5, options.maxDelayMs ?? 60_000),
    new TokenBucketRateLimiter<K>(options.qps ?? 10, options.burst ?? 100, clock),
  );
}

export interface WorkQueueOptions<K> {
  rateLimiter?: RateLimiter<K>;
  clock?: TimerClock;
}

/**
 * The queue. `get()` hands out a key and marks it processing; the worker must call `done(key)`.
 * A key added while processing is remembered (dirty) and queued again on `done`, so it is processed
 * once more but never concurrently.
 */
export class WorkQueue<K> {
  private readonly items: K[] = [];
  private head = 0;
  private readonly dirty = new Set<K>();
  private readonly processing = new Set<K>();
  private readonly waiting = new Map<K, number>();
  private timer: unknown;
  private timerAt = Infinity;
  private readonly getters: Array<(key: K | undefined) => void> = [];
  private drainWaiters: Array<() => void> = [];
  private shuttingDown = false;
  private readonly clock: TimerClock;
  readonly rateLimiter: RateLimiter<K>;

  constructor(options: WorkQueueOptions<K> = {}) {
    this.clock = options.clock ?? realClock;
    this.rateLimiter = options.rateLimiter ?? defaultControllerRateLimiter<K>({}, this.clock);
  }

  /** Keys ready to be handed out (not counting those processing or waiting for a delay). */
  len(): number {
    return this.items.length - this.head;
  }
  /** Keys waiting for their delay to pass. */
  waitingLen(): number {
    return this.waiting.size;
  }
  processingLen(): number {
    return this.processing.size;
  }
  isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  add(key: K): void {
    if (this.shuttingDown) return;
    if (this.dirty.has(key)) return;
    this.dirty.add(key);
    if (this.processing.has(key)) return;
    this.push(key);
  }

  /** Adds the key after a delay; an earlier pending delay for the same key wins. */
  addAfter(key: K, delayMs: number): void {
    if (this.shuttingDown) return;
    if (!(delayMs > 0)) {
      this.add(key);
      return;
    }
    const readyAt = this.clock.now() + delayMs;
    const prev = this.waiting.get(key);
    if (prev !== undefined && prev <= readyAt) return;
    this.waiting.set(key, readyAt);
    this.schedule(readyAt);
  }

  /** Adds the key after the rate limiter's delay (a failure or "not finished yet"); `minDelayMs` is a floor. */
  addRateLimited(key: K, minDelayMs = 0): number {
    const delay = Math.max(this.rateLimiter.when(key), minDelayMs);
    this.addAfter(key, delay);
    return delay;
  }

  /** The key succeeded: its backoff starts again from the base delay. */
  forget(key: K): void {
    this.rateLimiter.forget(key);
  }
  numRequeues(key: K): number {
    return this.rateLimiter.retries(key);
  }

  /** The next key, or undefined once the queue is shut down. */
  get(): Promise<K | undefined> {
    const key = this.pop();
    if (key !== undefined) return Promise.resolve(key);
    if (this.shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.getters.push(resolve));
  }

  done(key: K): void {
    this.processing.delete(key);
    if (this.dirty.has(key) && !this.shuttingDown) this.push(key);
    if (this.processing.size === 0 && this.drainWaiters.length > 0) {
      const waiters = this.drainWaiters;
      this.drainWaiters = [];
      for (const w of waiters) w();
    }
  }

  /** Stops handing out keys; getters waiting receive undefined. Keys in hand may still call done(). */
  shutDown(): void {
    this.shuttingDown = true;
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
    this.waiting.clear();
    for (const g of this.getters.splice(0)) g(undefined);
  }

  /** Shuts down and resolves once every key in hand is done. */
  shutDownWithDrain(): Promise<void> {
    this.shutDown();
    if (this.processing.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  private push(key: K): void {
    const getter = this.getters.shift();
    if (getter) {
      this.dirty.delete(key);
      this.processing.add(key);
      getter(key);
      return;
    }
    this.items.push(key);
  }

  private pop(): K | undefined {
    if (this.head >= this.items.length) return undefined;
    const key = this.items[this.head] as K;
    this.head += 1;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items.splice(0, this.head);
      this.head = 0;
    }
    this.dirty.delete(key);
    this.processing.add(key);
    return key;
  }

  private schedule(readyAt: number): void {
    if (readyAt >= this.timerAt && this.timer !== undefined) return;
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    this.timerAt = readyAt;
    this.timer = this.clock.setTimer(() => this.fire(), Math.max(0, readyAt - this.clock.now()));
  }

  private fire(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = this.clock.now();
    let next = Infinity;
    for (const [key, at] of this.waiting) {
      if (at <= now) {
        this.waiting.delete(key);
        this.add(key);
      } else if (at < next) {
        next = at;
      }
    }
    if (next !== Infinity && !this.shuttingDown) this.schedule(next);
  }
}
