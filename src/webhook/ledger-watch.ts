/**
 * One watch on the headroom ledgers' ConfigMaps (docs/adr/0057-ledger-watch-and-contention.md). It
 * starts from the collection's current resourceVersion (a list of at most one object, so 10,000
 * ledgers are not replayed), resumes from the last version it saw when the stream ends, starts afresh
 * after a 410 Gone, and retries failures with backoff (0.5 s doubling up to 30 s), forever. Nothing
 * depends on it for safety: a write it misses only makes the next compare-and-swap of that project
 * lose once and read again.
 */
import * as k8s from '@kubernetes/client-node';
import type { LeanApiClient } from '../kube/lean-client.js';
import { describeError } from '../kube/errors.js';
import { resumable } from '../kube/informers.js';

/** A ledger ConfigMap as the API serves it (ledger.ts reads and writes it). */
export interface ConfigMapJson {
  apiVersion: 'v1';
  kind: 'ConfigMap';
  metadata: { name: string; namespace: string; labels?: Record<string, string>; resourceVersion?: string; finalizers?: string[]; deletionTimestamp?: string };
  data?: Record<string, string>;
}

/** The ledger ConfigMaps' labels (ConfigMapLedger writes both). */
export const LEDGER_SELECTOR = 'app.kubernetes.io/managed-by=tenantgate,tenantgate.io/project';

const BASE_DELAY_MS = 500;
const MAX_DELAY_MS = 30_000;

export type LedgerEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export class LedgerWatch {
  private readonly watch: k8s.Watch;
  private readonly listeners: Array<(cm: ConfigMapJson, type: LedgerEventType) => void> = [];
  private controller: AbortController | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private delayMs = BASE_DELAY_MS;
  private stopped = false;

  constructor(
    kc: k8s.KubeConfig,
    private readonly api: LeanApiClient,
    /** The ConfigMaps' collection path in tenantgate's namespace. */
    private readonly path: string,
    private readonly log: (message: string) => void,
  ) {
    this.watch = new k8s.Watch(kc);
    void this.run(undefined);
  }

  listen(listener: (cm: ConfigMapJson, type: LedgerEventType) => void): void {
    this.listeners.push(listener);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.controller?.abort();
  }

  /** Watches from `from`, or from the collection's current version when undefined. */
  private async run(from: string | undefined): Promise<void> {
    if (this.stopped) return;
    try {
      const start = from ?? (await this.currentVersion());
      let last = start;
      let gone = false;
      const began = Date.now();
      const controller = await this.watch.watch(
        this.path,
        { labelSelector: LEDGER_SELECTOR, resourceVersion: start, allowWatchBookmarks: true },
        (type: string, object: unknown) => {
          if (type === 'ERROR') {
            gone ||= (object as { code?: number }).code === 410;
            return;
          }
          const cm = object as ConfigMapJson;
          if (cm.metadata?.resourceVersion) last = cm.metadata.resourceVersion;
          if (type !== 'ADDED' && type !== 'MODIFIED' && type !== 'DELETED') return;
          this.delayMs = BASE_DELAY_MS;
          for (const listener of this.listeners) listener(cm, type);
        },
        (err: unknown) => {
          if (this.stopped) return;
          if (!resumable(err)) return this.retry(`the ledger watch ended: ${describeError(err)}`);
          // The apiserver closed the stream (its watch timeout), client-node's inactivity timeout (30 s
          // without a ledger write), or the version is too old (410): go on, at once after a long
          // watch, with backoff after one that ended at once.
          this.schedule(gone ? undefined : last, gone || Date.now() - began < 1000 ? this.nextDelay() : 0);
        },
      );
      if (this.stopped) controller.abort();
      this.controller = controller;
    } catch (err) {
      this.retry(`the ledger watch could not start: ${describeError(err)}`);
    }
  }

  private async currentVersion(): Promise<string | undefined> {
    const list = await this.api.call<{ metadata?: { resourceVersion?: string } }>('GET', `${this.path}?labelSelector=${encodeURIComponent(LEDGER_SELECTOR)}&limit=1`);
    return list.metadata?.resourceVersion;
  }

  private retry(reason: string): void {
    const delay = this.nextDelay();
    this.log(`${reason}; retrying in ${delay} ms (until then each replica learns of the others' ledger writes from a lost compare-and-swap)`);
    this.schedule(undefined, delay);
  }

  private nextDelay(): number {
    const delay = this.delayMs;
    this.delayMs = Math.min(this.delayMs * 2, MAX_DELAY_MS);
    return delay;
  }

  private schedule(from: string | undefined, delayMs: number): void {
    if (this.stopped || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.run(from);
    }, delayMs);
  }
}
