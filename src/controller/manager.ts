/**
 * The controller's runnables and when they run, as controller-runtime's manager does it
 * (docs/adr/0005-controller.md). Each runnable says whether it needs the lease:
 *
 *   servers  (probes, /metrics, the budget view)  no lease  start first, stop last
 *   caches   (informers)                          no lease  start next; the rest waits for their sync
 *   others   not needing the lease (the fleet loop's checks)    start once the caches have synced
 *   others   needing the lease (the reconcilers, the fleet loop's writes)
 *            start once the caches have synced and this replica leads; stop when the lease is lost
 *
 * Shutdown: stop campaigning, stop what needs the lease (finishing the work in hand), stop the other
 * `others`, release the lease (a standby takes over at once), then the caches, then the servers.
 * Leadership starts and stops one after the other, never overlapping.
 */

export type RunnableGroup = 'servers' | 'caches' | 'others';

/** Why a runnable stops: a graceful shutdown finishes the work in hand; a lost lease stops it at its next step. */
export type StopReason = 'shutdown' | 'lease-lost';

export interface Runnable {
  /** For the log. */
  readonly name: string;
  /** true: runs only while this replica holds the lease (controller-runtime's LeaderElectionRunnable). */
  readonly needsLeaderElection: boolean;
  /** Default `others`. A runnable that needs the lease is one of the `others`. */
  readonly group?: RunnableGroup;
  start(): void | Promise<void>;
  stop(reason: StopReason): Promise<void>;
}

/**
 * The lease campaign the manager drives (src/controller/leader.ts), built with the manager's
 * wonLease/lostLease as callbacks.
 */
export interface LeaseCampaign {
  start(): void;
  /** Stops campaigning (no more renewals or acquisitions). */
  stop(): Promise<void>;
  /** Gives the lease up if held. */
  release(): Promise<boolean>;
}

export interface ManagerOptions {
  /** false: this replica leads as soon as the caches have synced (one replica only, tests). */
  leaderElection: boolean;
  /** Leadership began (the runnables that need the lease have started) or ended (they are stopping). */
  onLeading?: (leading: boolean) => void;
}

export class Manager {
  private readonly runnables: Runnable[] = [];
  private campaign: LeaseCampaign | undefined;
  private wantLeading: boolean;
  private synced = false;
  private stopping = false;
  private leading = false;
  private othersStarted = false;
  private transition: Promise<void> = Promise.resolve();

  constructor(private readonly o: ManagerOptions) {
    this.wantLeading = !o.leaderElection;
  }

  add(runnable: Runnable): this {
    if (runnable.needsLeaderElection && (runnable.group ?? 'others') !== 'others')
      throw new Error(
        `runnable ${runnable.name}: one that needs the lease belongs to the group "others", not "${runnable.group}"`,
      );
    this.runnables.push(runnable);
    return this;
  }

  /** The lease campaign (with leader election only). */
  useLeaseCampaign(campaign: LeaseCampaign): this {
    this.campaign = campaign;
    return this;
  }

  private inGroup(group: RunnableGroup, needsLease: boolean): Runnable[] {
    return this.runnables.filter((r) => (r.group ?? 'others') === group && r.needsLeaderElection === needsLease);
  }

  /** Starts the servers (in order, each once it listens), then the caches, then the lease campaign. */
  async start(): Promise<void> {
    for (const r of this.inGroup('servers', false)) await r.start();
    for (const r of this.inGroup('caches', false)) await r.start();
    this.campaign?.start();
  }

  /** The caches have synced: the `others` that need no lease start, and those that do once this replica leads. */
  cachesSynced(): void {
    if (this.stopping) return;
    this.synced = true;
    if (!this.othersStarted) {
      this.othersStarted = true;
      for (const r of this.inGroup('others', false)) void r.start();
    }
    this.lead();
  }

  /** The lease campaign's onStartedLeading. */
  wonLease(): void {
    this.wantLeading = true;
    this.lead();
  }

  /**
   * The lease campaign's onStoppedLeading: another replica may lead already, so what is in flight
   * stops at its next step.
   */
  lostLease(): void {
    this.wantLeading = false;
    void this.stepDown('lease-lost');
  }

  /** Whether the runnables that need the lease run. */
  isLeading(): boolean {
    return this.leading;
  }

  private lead(): void {
    this.transition = this.transition.then(async () => {
      if (this.leading || !this.wantLeading || this.stopping || !this.synced) return;
      this.leading = true;
      for (const r of this.inGroup('others', true)) await r.start();
      this.o.onLeading?.(true);
    });
  }

  private stepDown(reason: StopReason): Promise<void> {
    const t = this.transition.then(async () => {
      const was = this.leading;
      this.leading = false;
      if (!was) return;
      this.o.onLeading?.(false);
      await Promise.all(
        this.inGroup('others', true)
          .reverse()
          .map((r) => r.stop(reason)),
      );
    });
    this.transition = t;
    return t;
  }

  /** Graceful stop, in the order the file comment gives. */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.wantLeading = false;
    await this.campaign?.stop();
    await this.stepDown('shutdown');
    if (this.othersStarted) for (const r of this.inGroup('others', false).reverse()) await r.stop('shutdown');
    if (this.campaign) await this.campaign.release();
    await Promise.all(this.inGroup('caches', false).map((r) => r.stop('shutdown')));
    for (const r of this.inGroup('servers', false).reverse()) await r.stop('shutdown');
  }
}
