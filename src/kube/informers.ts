/**
 * Informers on Projects, Namespaces and ResourceQuotas (client-node `makeInformer`: list, then watch,
 * relist on 410) keeping one MemorySnapshot up to date. client-node's informer stops for good after
 * an error that is not a 410 or a client timeout (e.g. the API server went away); here such an
 * informer is restarted with exponential backoff (0.5 s doubling up to 30 s), forever. Every object
 * is slimmed (`slim` in lists.ts: no managedFields, no last-applied annotation…) before anything keeps
 * it: listed ones by the list functions, watched ones in place by the informer's first handler.
 */
import * as k8s from '@kubernetes/client-node';
import { MemorySnapshot } from '../validate/snapshot.js';
import type { NamespaceObject, Project, ResourceQuotaObject } from '../validate/types.js';
import type { Counter, Gauge } from 'prom-client';
import { describeError } from './errors.js';
import { PROJECTS_PATH, slim, type ClusterLists, type OnPage } from './lists.js';

/** The metrics the informers keep (the controller's and the webhook's registries both have them). */
export interface InformerMetrics {
  informerRestarts: Counter<'resource'>;
  informerSynced: Gauge<'resource'>;
  cacheObjects: Gauge<'kind'>;
}

type ObjectLists = Pick<ClusterLists, 'listProjects' | 'listNamespaces' | 'listQuotas'>;

export type Kind = 'Project' | 'Namespace' | 'ResourceQuota';
/**
 * What a ResilientInformer may watch: the snapshot's kinds, the objects the controller puts in project namespaces, and
 * the per-project ClusterRoles (visibility: own).
 */
export type WatchedKind =
  Kind | 'RoleBinding' | 'LimitRange' | 'NetworkPolicy' | 'AllowList' | 'ClusterRole' | 'ClusterRoleBinding';
export type EventType = 'add' | 'update' | 'delete';

/** One cache event, with the object it replaced (for label changes). */
export interface CacheEvent {
  kind: Kind;
  type: EventType;
  object: k8s.KubernetesObject;
  old?: k8s.KubernetesObject;
}

export interface ResilientInformerOptions {
  log: (message: string) => void;
  metrics: InformerMetrics;
  baseDelayMs?: number;
  maxDelayMs?: number;
  /**
   * A list that makes no progress for this long fails (and is retried), so a hung request cannot
   * freeze the cache. Progress is a page: a paged list of 50,000 objects from a busy apiserver may
   * take longer than this in all and is not restarted from scratch for it (P3).
   */
  listTimeoutMs?: number;
  labelSelector?: string;
  /** Asks the apiserver to end each watch after this many seconds (tests: watches that end often). */
  watchTimeoutSeconds?: number;
}

/**
 * How long a watch that ended cleanly or by client-node's inactivity timeout, and is being resumed
 * from the last resourceVersion it delivered, still counts as current. Resuming replays everything
 * after that version, so the cache only lags meanwhile (a few ms); an idle watch ends this way every
 * 30 s, and refusing growth with [Q5] each time would refuse real requests for nothing. A resumption
 * that fails, or takes longer than this, makes the cache not current.
 */
const RESUME_GRACE_MS = 5000;

/**
 * client-node's Watch, telling when a watch is connected (the apiserver answered the watch request)
 * and when its stream ended, and how (cleanly, by error or by client-node's inactivity timeout).
 */
class TrackedWatch extends k8s.Watch {
  constructor(
    kc: k8s.KubeConfig,
    private readonly connected: () => void,
    private readonly ended: (err: unknown) => void,
    private readonly timeoutSeconds?: number,
  ) {
    super(kc);
  }

  override async watch(...[path, params, callback, done]: Parameters<k8s.Watch['watch']>): Promise<AbortController> {
    let ended = false;
    // Bookmarks carry the watch's progress while its resource is idle (the streams' watermarks, ADR 0003).
    const query = {
      ...params,
      allowWatchBookmarks: true,
      ...(this.timeoutSeconds === undefined ? {} : { timeoutSeconds: this.timeoutSeconds }),
    };
    const controller = await super.watch(path, query, callback, (err: unknown) => {
      ended = true;
      this.ended(err);
      done(err);
    });
    if (!ended) this.connected();
    return controller;
  }
}

/**
 * A watch end after which client-node resumes from the last resourceVersion (no error, or its own inactivity timeout).
 */
export function resumable(err: unknown): boolean {
  return !err || (err instanceof Error && err.name === 'TimeoutError');
}

/** One informer that never stays down: every error schedules a restart with backoff. */
export class ResilientInformer<K extends WatchedKind = Kind> {
  readonly informer: k8s.ListWatch<k8s.KubernetesObject>;
  private delayMs: number;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stopped = true;
  private hasSynced = false;
  /** Whether the watch is connected (false while listing, reconnecting or broken). */
  private watching = false;
  /** Since when the watch is being resumed from its last resourceVersion (RESUME_GRACE_MS). */
  private resumingSince: number | undefined;
  /** Watch ends resumed from the last resourceVersion so far (tests and logs). */
  resumptions = 0;
  private syncWaiters: Array<() => void> = [];
  restarts = 0;

  constructor(
    readonly kind: K,
    kc: k8s.KubeConfig,
    path: string,
    list: (onPage?: OnPage) => Promise<k8s.KubernetesListObject<k8s.KubernetesObject>>,
    private readonly options: ResilientInformerOptions,
  ) {
    this.delayMs = options.baseDelayMs ?? 500;
    const timeoutMs = options.listTimeoutMs ?? 60_000;
    const timedList = async () => {
      const result = await withProgressTimeout(list, timeoutMs, `list ${kind}`);
      // The informer adds the items synchronously once this promise resolves; mark synced after that.
      setImmediate(() => this.markSynced());
      return result;
    };
    // makeInformer's ListWatch, with a Watch that tells when it is connected and how it ended.
    const watch = new TrackedWatch(
      kc,
      () => {
        this.watching = true;
        this.resumingSince = undefined;
      },
      (err) => {
        this.watching = false;
        this.resumingSince = resumable(err) ? Date.now() : undefined;
        if (this.resumingSince !== undefined) this.resumptions += 1;
      },
      options.watchTimeoutSeconds,
    );
    this.informer = new k8s.ListWatch(path, watch, timedList, false, options.labelSelector);
    // client-node connects again: from the last resourceVersion (resuming), or with a new list.
    this.informer.on('connect', () => {
      this.watching = false;
      if (this.informer.latestResourceVersion() === '') this.resumingSince = undefined;
    });
    // First of all handlers: a watched object is slimmed in place (the list function slims listed
    // ones). It is the very object the informer's own cache stores, and the one every later handler
    // (and the snapshot) gets, so only one slim copy of each object stays alive.
    this.informer.on('add', slim);
    this.informer.on('update', slim);
    this.informer.on('error', (err) => {
      this.watching = false;
      this.resumingSince = undefined;
      this.onError(err);
    });
    // Any event proves the watch works: the next failure starts backing off from the base delay again.
    for (const verb of ['add', 'update', 'delete'] as const)
      this.informer.on(verb, () => (this.delayMs = options.baseDelayMs ?? 500));
  }

  get synced(): boolean {
    return this.hasSynced;
  }

  /**
   * The highest resourceVersion this cache has applied on its stream (the list's, then each event's
   * and bookmark's: client-node records it after the handlers ran); undefined while not up to date or
   * when it is not an etcd revision.
   */
  get watermark(): string | undefined {
    if (!this.upToDate) return undefined;
    const rv = this.informer.latestResourceVersion();
    return /^\d+$/.test(rv) ? rv : undefined;
  }

  /**
   * Synced, and the watch connected or being resumed from its last resourceVersion for less than
   * RESUME_GRACE_MS: the cache misses nothing but what is in flight.
   */
  get upToDate(): boolean {
    if (!this.hasSynced) return false;
    return this.watching || (this.resumingSince !== undefined && Date.now() - this.resumingSince < RESUME_GRACE_MS);
  }

  /** Resolves once the first list has been applied. */
  waitSynced(): Promise<void> {
    if (this.hasSynced) return Promise.resolve();
    return new Promise((r) => this.syncWaiters.push(r));
  }

  start(): void {
    this.stopped = false;
    void this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.informer.stop();
  }

  private markSynced(): void {
    this.delayMs = this.options.baseDelayMs ?? 500;
    if (this.hasSynced) return;
    this.hasSynced = true;
    this.options.metrics.informerSynced.set({ resource: this.kind }, 1);
    for (const w of this.syncWaiters.splice(0)) w();
  }

  private async run(): Promise<void> {
    if (this.stopped) return;
    try {
      await this.informer.start();
    } catch (err) {
      this.onError(err);
    }
  }

  private onError(err: unknown): void {
    if (this.stopped || this.timer) return;
    const delay = this.delayMs;
    this.delayMs = Math.min(this.delayMs * 2, this.options.maxDelayMs ?? 30_000);
    this.restarts += 1;
    this.options.metrics.informerRestarts.inc({ resource: this.kind });
    this.options.log(`${this.kind} informer: ${describeError(err)}; restarting in ${delay} ms`);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.run();
    }, delay);
  }
}

export interface InformersOptions {
  log: (message: string) => void;
  metrics: InformerMetrics;
  /** Only Projects matching this label selector are watched (sharding, tests). */
  projectSelector?: string;
  baseDelayMs?: number;
  /** Asks the apiserver to end each watch after this many seconds (tests). */
  watchTimeoutSeconds?: number;
  /**
   * Offer the Namespace and ResourceQuota streams' watermarks to the headroom guard (`streams`, ADR 0003),
   * with the probe that makes idle streams advance.
   */
  streams?: {
    probe: () => Promise<void>;
    onCatchUp?: (outcome: CatchUpOutcome) => void;
    /** Default PROBE_AFTER_MS. */ probeAfterMs?: number;
  };
}

/** Per stream, a watermark (structurally the ledger's StreamMarks). */
export interface Watermarks {
  Namespace: string;
  ResourceQuota: string;
}

/** How often a catch-up looks at the watermarks again (bookmarks fire no handler; events wake it at once). */
const CATCH_UP_POLL_MS = 5;

/**
 * How long a catch-up lets its streams advance by themselves before it probes. A replica behind the
 * marks is usually behind by the events the settling replica's watch brought a moment earlier: its own
 * watch brings them within milliseconds, and a probe (three requests, two writes) would only add load
 * to a busy apiserver. Only a stream with nothing to bring (idle: bookmarks come about once a minute)
 * needs the probe, and then this is what the catch-up costs on top.
 */
const PROBE_AFTER_MS = 20;

/** How a catch-up ended (`tenantgate_webhook_catch_ups_total`): by itself, after a probe, or not in time. */
export type CatchUpOutcome = 'streamed' | 'probed' | 'behind';

/** What an InformerGroup runs together: an informer, or a cache one feeds. */
interface GroupMember {
  start(): void;
  waitSynced(): Promise<void>;
  readonly synced: boolean;
  readonly upToDate: boolean;
  stop(): Promise<void>;
}

/** Informers, or caches they feed, started, synced and stopped together. */
export abstract class InformerGroup {
  /** The members, in the order they are started. */
  protected abstract get members(): readonly GroupMember[];

  start(): void {
    for (const m of this.members) m.start();
  }

  async waitSynced(): Promise<void> {
    await Promise.all(this.members.map((m) => m.waitSynced()));
  }

  get synced(): boolean {
    return this.members.every((m) => m.synced);
  }

  /**
   * Every member synced and watching (or resuming its watch, RESUME_GRACE_MS): false while one re-lists, cannot
   * reconnect or is broken.
   */
  get upToDate(): boolean {
    return this.members.every((m) => m.upToDate);
  }

  async stop(): Promise<void> {
    await Promise.all(this.members.map((m) => m.stop()));
  }
}

/**
 * The three informers and the snapshot they feed. `onEvent` listeners run after the snapshot was
 * updated. Updates older than a write its owner made itself (its own response, applied with
 * `applyWritten`) are held back until the watch catches up, like client-go's mutation cache.
 */
export class Informers extends InformerGroup {
  readonly snapshot = new MemorySnapshot();
  readonly informers: ResilientInformer[];
  private readonly listeners: Array<(e: CacheEvent) => void> = [];
  /** Objects this controller wrote, by cache key, until the watch delivers them (or something newer). */
  private readonly written = new Map<string, number>();
  /**
   * Recently deleted objects and the resourceVersion of their deletion, so a late write response cannot resurrect them.
   */
  private readonly tombstones = new Map<string, number>();
  /**
   * Catch-ups waiting for the watermarks: woken after each event (client-node records its version
   * once the handlers ran).
   */
  private readonly markWaiters = new Set<() => void>();

  constructor(
    kc: k8s.KubeConfig,
    api: ObjectLists,
    private readonly options: InformersOptions,
  ) {
    super();
    const common = {
      log: options.log,
      metrics: options.metrics,
      ...(options.baseDelayMs !== undefined ? { baseDelayMs: options.baseDelayMs } : {}),
      ...(options.watchTimeoutSeconds !== undefined ? { watchTimeoutSeconds: options.watchTimeoutSeconds } : {}),
    };
    this.informers = [
      new ResilientInformer(
        'Project',
        kc,
        PROJECTS_PATH,
        (onPage) => api.listProjects(options.projectSelector, onPage),
        { ...common, ...(options.projectSelector ? { labelSelector: options.projectSelector } : {}) },
      ),
      new ResilientInformer(
        'Namespace',
        kc,
        '/api/v1/namespaces',
        (onPage) => api.listNamespaces(undefined, onPage),
        common,
      ),
      new ResilientInformer('ResourceQuota', kc, '/api/v1/resourcequotas', (onPage) => api.listQuotas(onPage), common),
    ];
    for (const inf of this.informers) {
      inf.informer.on('add', (o) => this.apply(inf.kind, 'add', o));
      inf.informer.on('update', (o) => this.apply(inf.kind, 'update', o));
      inf.informer.on('delete', (o) => this.apply(inf.kind, 'delete', o));
    }
  }

  onEvent(listener: (e: CacheEvent) => void): void {
    this.listeners.push(listener);
  }

  /** The streams' watermarks and catch-up for the headroom guard (ADR 0003); absent unless asked for. */
  get streams():
    | {
        marks(): Watermarks | undefined;
        catchUp(needed: Watermarks, ms: number, signal: AbortSignal): Promise<boolean>;
      }
    | undefined {
    const probe = this.options.streams?.probe;
    if (!probe) return undefined;
    return { marks: () => this.marks(), catchUp: (needed, ms, signal) => this.catchUp(needed, ms, signal, probe) };
  }

  private marks(): Watermarks | undefined {
    const ns = this.informers.find((i) => i.kind === 'Namespace')?.watermark;
    const quotas = this.informers.find((i) => i.kind === 'ResourceQuota')?.watermark;
    return ns !== undefined && quotas !== undefined ? { Namespace: ns, ResourceQuota: quotas } : undefined;
  }

  /**
   * Waits until the watermarks reach `needed`, `ms` pass or `signal` aborts: first for the streams to
   * advance by themselves, then (after PROBE_AFTER_MS) with one probe.
   */
  private async catchUp(
    needed: Watermarks,
    ms: number,
    signal: AbortSignal,
    probe: () => Promise<void>,
  ): Promise<boolean> {
    const reached = () => {
      const m = this.marks();
      return (
        m !== undefined &&
        BigInt(m.Namespace) >= BigInt(needed.Namespace) &&
        BigInt(m.ResourceQuota) >= BigInt(needed.ResourceQuota)
      );
    };
    if (!/^\d+$/.test(needed.Namespace) || !/^\d+$/.test(needed.ResourceQuota)) return false;
    if (reached()) return true;
    const started = Date.now();
    const deadline = started + ms;
    let probed = false;
    while (!signal.aborted && Date.now() < deadline) {
      if (!probed && Date.now() - started >= (this.options.streams?.probeAfterMs ?? PROBE_AFTER_MS)) {
        probed = true;
        probe().catch((err: unknown) => this.options.log(`watermark probe failed: ${describeError(err)}`));
      }
      await this.nextEvent(Math.min(CATCH_UP_POLL_MS, Math.max(0, deadline - Date.now())));
      if (reached()) {
        this.options.streams?.onCatchUp?.(probed ? 'probed' : 'streamed');
        return true;
      }
    }
    this.options.streams?.onCatchUp?.('behind');
    return false;
  }

  /** Resolves after the next event of any stream has been recorded, or after `ms`. */
  private nextEvent(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.markWaiters.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.markWaiters.add(wake);
    });
  }

  protected get members(): readonly ResilientInformer[] {
    return this.informers;
  }

  /** Puts an object the controller just wrote (the API server's response) into the snapshot; it is slimmed in place. */
  applyWritten(kind: Kind, object: k8s.KubernetesObject): void {
    slim(object);
    const key = cacheKey(kind, object);
    const rv = resourceVersionNumber(object);
    // Without comparable versions, leave the cache to the watch.
    if (rv === undefined) return;
    const deletedAt = this.tombstones.get(key);
    if (deletedAt !== undefined && rv <= deletedAt) return;
    // The watch may have delivered this version, or a newer one, before the response arrived.
    const current = this.current(kind, object);
    const currentRv = current ? resourceVersionNumber(current) : undefined;
    if (current && (currentRv === undefined || currentRv >= rv)) return;
    this.written.set(key, rv);
    this.upsert(kind, object);
  }

  /** Removes an object the controller knows is gone (e.g. a Project whose last finalizer it removed). */
  forget(kind: Kind, object: k8s.KubernetesObject): void {
    const key = cacheKey(kind, object);
    this.written.delete(key);
    this.remember(key, resourceVersionNumber(object) ?? Number.MAX_SAFE_INTEGER);
    this.remove(kind, object);
  }

  private remember(key: string, rv: number): void {
    this.tombstones.delete(key);
    this.tombstones.set(key, rv);
    if (this.tombstones.size > 10_000) {
      const oldest = this.tombstones.keys().next().value;
      if (oldest !== undefined) this.tombstones.delete(oldest);
    }
  }

  private apply(kind: Kind, type: EventType, object: k8s.KubernetesObject): void {
    const key = cacheKey(kind, object);
    const old = this.current(kind, object);
    if (type === 'delete') {
      this.written.delete(key);
      this.remember(key, resourceVersionNumber(object) ?? Number.MAX_SAFE_INTEGER);
      this.remove(kind, object);
    } else {
      if (type === 'add') this.tombstones.delete(key);
      const mine = this.written.get(key);
      const rv = resourceVersionNumber(object);
      if (mine !== undefined && rv !== undefined && rv < mine) {
        // An older version than the one we wrote: keep ours; the newer event is on its way.
      } else {
        this.written.delete(key);
        this.upsert(kind, object);
      }
    }
    this.countObjects();
    // client-node records the event's version once every handler ran: look at the marks after that.
    if (this.markWaiters.size > 0) queueMicrotask(() => this.markWaiters.forEach((wake) => wake()));
    const event: CacheEvent = { kind, type, object, ...(old ? { old } : {}) };
    for (const l of this.listeners) {
      try {
        l(event);
      } catch (err) {
        this.options.log(`event handler failed: ${describeError(err)}`);
      }
    }
  }

  private current(kind: Kind, object: k8s.KubernetesObject): k8s.KubernetesObject | undefined {
    const name = object.metadata?.name ?? '';
    if (kind === 'Project') return this.snapshot.project(name) as k8s.KubernetesObject | undefined;
    if (kind === 'Namespace') return this.snapshot.namespace(name) as k8s.KubernetesObject | undefined;
    for (const q of this.snapshot.quotasInNamespace(object.metadata?.namespace ?? ''))
      if (q.metadata.name === name) return q as k8s.KubernetesObject;
    return undefined;
  }

  private upsert(kind: Kind, object: k8s.KubernetesObject): void {
    if (kind === 'Project') this.snapshot.upsertProject(object as unknown as Project);
    else if (kind === 'Namespace') this.snapshot.upsertNamespace(object as unknown as NamespaceObject);
    else this.snapshot.upsertQuota(object as unknown as ResourceQuotaObject);
  }

  private remove(kind: Kind, object: k8s.KubernetesObject): void {
    const meta = object.metadata ?? {};
    if (kind === 'Project') this.snapshot.deleteProject(meta.name ?? '');
    else if (kind === 'Namespace') this.snapshot.deleteNamespace(meta.name ?? '');
    else this.snapshot.deleteQuota(meta.namespace ?? '', meta.name ?? '');
  }

  /** O(1): the snapshot keeps its counts as it changes. */
  private countObjects(): void {
    const sizes = this.snapshot.sizes;
    this.options.metrics.cacheObjects.set({ kind: 'Project' }, sizes.projects);
    this.options.metrics.cacheObjects.set({ kind: 'Namespace' }, sizes.namespaces);
    this.options.metrics.cacheObjects.set({ kind: 'ResourceQuota' }, sizes.quotas);
  }
}

function cacheKey(kind: Kind, o: k8s.KubernetesObject): string {
  return `${kind}/${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
}

/**
 * resourceVersion as a number when it is one (etcd revisions are); undefined otherwise, and then no
 * ordering is assumed.
 */
function resourceVersionNumber(o: k8s.KubernetesObject): number | undefined {
  const rv = o.metadata?.resourceVersion;
  if (!rv || !/^[0-9]{1,15}$/.test(rv)) return undefined;
  return Number(rv);
}

/**
 * Runs `run`, failing when `ms` pass without progress (a call of its `onPage`; a list that reports
 * none is timed as a whole). Once failed, the next `onPage` throws, so an abandoned paged list stops
 * at its next page instead of fetching the rest alongside the retry.
 */
export function withProgressTimeout<T>(run: (onPage: OnPage) => Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let failed = false;
    const fail = () => {
      failed = true;
      reject(new Error(`${what} made no progress for ${ms} ms`));
    };
    let t = setTimeout(fail, ms);
    const onPage = () => {
      if (failed) throw new Error(`${what}: abandoned after a timeout`);
      clearTimeout(t);
      t = setTimeout(fail, ms);
    };
    run(onPage).then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(t);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}
