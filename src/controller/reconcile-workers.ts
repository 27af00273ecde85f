/**
 * The reconcilers: a runnable that needs the lease (manager.ts). Each leadership term has its own work
 * queue keyed by project name and N workers running the Reconciler, and a periodic resync through the
 * same queue; the term ends when the lease is lost (reconciles in flight stop at their next step) or
 * at shutdown (they finish).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { describeError } from '../kube/errors.js';
import type { Informers } from '../kube/informers.js';
import type { Runnable, StopReason } from './manager.js';
import type { ControllerMetrics } from './metrics.js';
import type { Reconciler } from './reconcile.js';
import { WorkQueue, defaultControllerRateLimiter, type RateLimiterOptions } from './workqueue.js';

/** Where the leader queues the projects to reconcile (its term's work queue). */
export interface ProjectQueue {
  add(key: string): void;
  addAfter(key: string, delayMs: number): void;
}

export interface ReconcileWorkersConfig {
  reconciler: Reconciler;
  metrics: ControllerMetrics;
  informers: Informers;
  log: (m: string, fields?: Record<string, unknown>) => void;
  workers: number;
  resyncMs: number;
  rateLimiter?: RateLimiterOptions;
}

/** One leadership term: its own queue and workers, shut down when the term ends. */
class Term {
  readonly queue: WorkQueue<string>;
  /** Aborted when the lease is lost: reconciles in flight stop at their next step. */
  private readonly abort = new AbortController();
  private readonly workers: Promise<void>[] = [];
  private resyncTimer: ReturnType<typeof setInterval> | undefined;

  constructor(private readonly c: ReconcileWorkersConfig) {
    this.queue = new WorkQueue<string>({ rateLimiter: defaultControllerRateLimiter<string>(c.rateLimiter ?? {}) });
  }

  start(): void {
    this.enqueueAll();
    for (let i = 0; i < this.c.workers; i++) this.workers.push(this.work());
    if (this.c.resyncMs > 0) {
      this.resyncTimer = setInterval(() => this.enqueueAll(), this.c.resyncMs);
      this.resyncTimer.unref();
    }
  }

  enqueueAll(): void {
    for (const p of this.c.informers.snapshot.projects()) if (p.metadata.name) this.queue.add(p.metadata.name);
    this.updateDepth();
  }

  addAfter(key: string, delayMs: number): void {
    this.queue.addAfter(key, delayMs);
  }

  add(key: string): void {
    this.queue.add(key);
    this.updateDepth();
  }

  private updateDepth(): void {
    this.c.metrics.queueDepth.set(this.queue.len());
    this.c.metrics.queueWaiting.set(this.queue.waitingLen());
  }

  private async work(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      this.updateDepth();
      const end = this.c.metrics.reconcileDuration.startTimer();
      const reconcileId = randomUUID().slice(0, 8);
      // How long the reconcile took (its log line): a duration, on the monotonic clock.
      const started = performance.now();
      const ms = () => Math.round((performance.now() - started) * 1000) / 1000;
      try {
        const result = await reconcileScope.run({ project: key, reconcileId }, () =>
          this.c.reconciler.reconcile(key, this.abort.signal),
        );
        if (result.kind === 'Requeue') {
          this.c.metrics.reconcileTotal.inc({ result: 'requeue' });
          // Progress is not failure: the error backoff starts again, and the key comes back after afterMs.
          this.queue.forget(key);
          this.queue.addAfter(key, result.afterMs);
          this.c.log('reconciled', { project: key, reconcileId, result: 'requeue', reason: result.reason, ms: ms() });
        } else {
          this.c.metrics.reconcileTotal.inc({ result: 'done' });
          this.queue.forget(key);
          this.c.log('reconciled', { project: key, reconcileId, result: 'done', ms: ms() });
        }
      } catch (err) {
        if (this.abort.signal.aborted) {
          this.c.log('reconcile stopped: this replica no longer leads', {
            project: key,
            reconcileId,
            result: 'aborted',
            ms: ms(),
          });
          continue;
        }
        this.c.metrics.reconcileTotal.inc({ result: 'error' });
        this.c.metrics.reconcileErrors.inc();
        const delay = this.queue.addRateLimited(key);
        this.c.log(`reconcile failed: ${describeError(err)}`, {
          project: key,
          reconcileId,
          result: 'error',
          retry: this.queue.numRequeues(key),
          retryInMs: delay,
          ms: ms(),
        });
      } finally {
        end();
        this.queue.done(key);
        this.updateDepth();
      }
    }
  }

  /**
   * Stops handing out keys and waits for the reconciles in flight: they finish (a graceful shutdown
   * while leading) or, with `abort` (the lease is lost), stop at their next step.
   */
  async stop(options: { abort?: boolean } = {}): Promise<void> {
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    if (options.abort) this.abort.abort();
    await this.queue.shutDownWithDrain();
    await Promise.all(this.workers);
    this.updateDepth();
  }
}

/** The reconcile a log line belongs to, across the awaits of one reconcile (workers run several at once). */
export const reconcileScope = new AsyncLocalStorage<{ project: string; reconcileId: string }>();

/** The reconcilers as a runnable that needs the lease; `queue()` is the current term's, undefined between terms. */
export class ReconcileWorkers implements Runnable {
  readonly name = 'reconcilers';
  readonly needsLeaderElection = true;
  private term: Term | undefined;

  constructor(private readonly c: ReconcileWorkersConfig) {}

  queue(): ProjectQueue | undefined {
    return this.term;
  }

  start(): void {
    this.term = new Term(this.c);
    this.term.start();
    this.c.log(`reconciling (${this.c.workers} workers, resync every ${this.c.resyncMs / 1000} s)`);
  }

  async stop(reason: StopReason): Promise<void> {
    const old = this.term;
    this.term = undefined;
    if (old) await old.stop({ abort: reason === 'lease-lost' });
  }
}
