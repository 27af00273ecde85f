/**
 * CR5: leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it:
 * acquire or renew is a compare-and-swap (create, or update with the resourceVersion read); a lease
 * held by someone else counts as expired only when this replica has seen it unchanged for
 * leaseDurationSeconds on its own clock (no comparison of clocks across machines). The leader renews
 * every renewPeriod and gives up when it could not renew within renewDeadline; on shutdown it
 * releases the lease (empty holder, 1 s duration) so a standby takes over at once.
 */
import type { LeaseRecord } from './kube.js';
import { describeError, isConflict, isNotFound } from '../kube/errors.js';

export interface LeaseStore {
  getLease(namespace: string, name: string): Promise<LeaseRecord | undefined>;
  createLease(lease: LeaseRecord): Promise<LeaseRecord>;
  replaceLease(lease: LeaseRecord): Promise<LeaseRecord>;
}

/** The timings `tenantgate controller` runs with (client-go's defaults). */
export const LEADER_ELECTION_DEFAULTS = {
  leaseDurationSeconds: 15,
  renewPeriodMs: 5_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
} as const;

export interface LeaderElectionConfig {
  namespace: string;
  name: string;
  identity: string;
  leaseDurationSeconds?: number;
  /** How often the leader renews (5 s). */
  renewPeriodMs?: number;
  /** The leader steps down when it has not renewed for this long (10 s; < lease duration). */
  renewDeadlineMs?: number;
  /** How often a standby tries to acquire (2 s). */
  retryPeriodMs?: number;
}

export interface LeaderCallbacks {
  onStartedLeading(): void;
  onStoppedLeading(): void;
  log?: (message: string) => void;
  now?: () => number;
}

export class LeaderElector {
  private leading = false;
  private stopped = false;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private wake: (() => void) | undefined;
  private observed: { key: string; at: number } | undefined;
  private lastRenew = 0;
  private standingBy: string | undefined;
  private current: LeaseRecord | undefined;
  private loop: Promise<void> | undefined;
  readonly leaseDurationSeconds: number;
  private readonly renewPeriodMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private readonly now: () => number;
  private readonly log: (message: string) => void;

  constructor(
    private readonly store: LeaseStore,
    readonly config: LeaderElectionConfig,
    private readonly callbacks: LeaderCallbacks,
  ) {
    this.leaseDurationSeconds = config.leaseDurationSeconds ?? LEADER_ELECTION_DEFAULTS.leaseDurationSeconds;
    this.renewPeriodMs = config.renewPeriodMs ?? LEADER_ELECTION_DEFAULTS.renewPeriodMs;
    this.renewDeadlineMs = config.renewDeadlineMs ?? LEADER_ELECTION_DEFAULTS.renewDeadlineMs;
    this.retryPeriodMs = config.retryPeriodMs ?? LEADER_ELECTION_DEFAULTS.retryPeriodMs;
    this.now = callbacks.now ?? Date.now;
    this.log = callbacks.log ?? (() => {});
  }

  get isLeader(): boolean {
    return this.leading;
  }

  /** Healthy unless this replica believes it leads but has not renewed for longer than the lease. */
  healthy(): boolean {
    return !this.leading || this.now() - this.lastRenew < this.leaseDurationSeconds * 1000 + this.renewDeadlineMs;
  }

  start(): void {
    if (this.loop) return;
    this.stopped = false;
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const ok = await this.tryAcquireOrRenew();
      if (this.stopped) break;
      if (ok) {
        this.lastRenew = this.now();
        if (!this.leading) {
          this.leading = true;
          this.log(
            `became leader (lease ${this.config.namespace}/${this.config.name}, identity ${this.config.identity})`,
          );
          this.safely(() => this.callbacks.onStartedLeading());
        }
      } else if (this.leading && this.now() - this.lastRenew >= this.renewDeadlineMs) {
        this.stepDown(`could not renew the lease within ${this.renewDeadlineMs} ms`);
      }
      await this.sleep(this.leading ? this.renewPeriodMs : this.retryPeriodMs);
    }
  }

  private stepDown(why: string): void {
    if (!this.leading) return;
    this.leading = false;
    this.log(`lost leadership: ${why}`);
    this.safely(() => this.callbacks.onStoppedLeading());
  }

  private safely(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.log(`leader callback failed: ${describeError(err)}`);
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.wake = resolve;
      this.timer = setTimeout(resolve, ms);
    });
  }

  /** One attempt. True when this replica holds the lease afterwards. */
  async tryAcquireOrRenew(): Promise<boolean> {
    const { namespace, name, identity } = this.config;
    const now = this.now();
    const nowIso = new Date(now).toISOString();
    let lease: LeaseRecord | undefined;
    try {
      lease = await this.store.getLease(namespace, name);
    } catch (err) {
      this.log(`reading lease ${namespace}/${name}: ${describeError(err)}`);
      return false;
    }
    if (!lease) {
      try {
        this.current = await this.store.createLease({
          metadata: { name, namespace },
          spec: {
            holderIdentity: identity,
            leaseDurationSeconds: this.leaseDurationSeconds,
            acquireTime: nowIso,
            renewTime: nowIso,
            leaseTransitions: 0,
          },
        });
        this.observe(this.current, now);
        return true;
      } catch (err) {
        if (isNotFound(err))
          this.log(
            `cannot create lease ${namespace}/${name}: namespace ${namespace} does not exist (create it, or pass ` +
              `--lease-namespace)`,
          );
        else if (!isConflict(err)) this.log(`creating lease ${namespace}/${name}: ${describeError(err)}`);
        return false;
      }
    }
    this.current = lease;
    this.observe(lease, now);
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? '';
    const duration = (spec.leaseDurationSeconds ?? this.leaseDurationSeconds) * 1000;
    if (holder !== '' && holder !== identity && this.observed && this.observed.at + duration > now) {
      if (this.standingBy !== holder) this.log(`not leader: lease ${namespace}/${name} held by ${holder}; standing by`);
      this.standingBy = holder;
      return false; // held by another replica and not expired on our clock
    }
    this.standingBy = undefined;
    const mine = holder === identity;
    const next: LeaseRecord = {
      metadata: {
        name,
        namespace,
        ...(lease.metadata.resourceVersion ? { resourceVersion: lease.metadata.resourceVersion } : {}),
      },
      spec: {
        holderIdentity: identity,
        leaseDurationSeconds: this.leaseDurationSeconds,
        acquireTime: mine && spec.acquireTime ? spec.acquireTime : nowIso,
        renewTime: nowIso,
        leaseTransitions: mine ? (spec.leaseTransitions ?? 0) : (spec.leaseTransitions ?? 0) + 1,
      },
    };
    try {
      this.current = await this.store.replaceLease(next);
      this.observe(this.current, now);
      return true;
    } catch (err) {
      if (!isConflict(err)) this.log(`updating lease ${namespace}/${name}: ${describeError(err)}`);
      return false;
    }
  }

  /** Remembers when (on our clock) the lease record last changed. */
  private observe(lease: LeaseRecord, now: number): void {
    const key = [lease.spec?.holderIdentity, lease.spec?.renewTime, lease.metadata.resourceVersion]
      .map((part) => part ?? '')
      .join('|');
    if (!this.observed || this.observed.key !== key) this.observed = { key, at: now };
  }

  /**
   * Stops campaigning. When leading, steps down (callbacks run first, so the caller can finish the
   * work in hand before calling release()).
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.wake?.();
    await this.loop;
    this.loop = undefined;
  }

  /** Gives the lease up if this replica holds it: empty holder, 1 s duration (client-go's ReleaseOnCancel). */
  async release(): Promise<boolean> {
    const wasLeading = this.leading;
    this.leading = false;
    const { namespace, name, identity } = this.config;
    try {
      const lease = await this.store.getLease(namespace, name);
      if (!lease || lease.spec?.holderIdentity !== identity) return false;
      const nowIso = new Date(this.now()).toISOString();
      await this.store.replaceLease({
        metadata: {
          name,
          namespace,
          ...(lease.metadata.resourceVersion ? { resourceVersion: lease.metadata.resourceVersion } : {}),
        },
        spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: nowIso },
      });
      this.log(`released lease ${namespace}/${name}${wasLeading ? '' : ' (was not leading)'}`);
      return true;
    } catch (err) {
      this.log(`releasing lease ${namespace}/${name}: ${describeError(err)}`);
      return false;
    }
  }
}
