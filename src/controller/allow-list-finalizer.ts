/**
 * The AllowList's finalizer (FINALIZER_ALLOW_LIST): the allow-list policies refuse every write of an
 * object they judge while its namespace's AllowList is missing (their parameters are not found: Deny).
 * When a namespace is deleted, its AllowList goes with everything else, and a PersistentVolumeClaim whose
 * protection finalizer is taken off after it would be refused, keeping the namespace Terminating. So the
 * AllowList is held until nothing else is left in its namespace, then let go here.
 *
 * `releaseDecision` is the decision (pure); `AllowListFinalizers` is the runnable that applies it to every
 * AllowList being deleted (needs the lease), on each change of the cache, and while one is held again after
 * 250 ms, doubling up to `recheckMs` (a namespace empties within seconds; each look lists every resource).
 */
import { describeError } from '../kube/errors.js';
import { FINALIZER_ALLOW_LIST } from '../validate/allow-list-params.js';
import type { CachedObject, ManagedKind, ObjectCache } from './managed-objects.js';
import type { Runnable } from './manager.js';

/** The first look again at a held AllowList. */
const FIRST_RECHECK_MS = 250;
/** The longest wait between looks at a held AllowList, unless the controller is given its own recheck interval. */
export const DEFAULT_RECHECK_MS = 5_000;

export type ReleaseDecision = { release: true; why: string } | { release: false; why: string };

/** What the decision reads: the AllowList, its namespace, and what else the namespace still holds. */
export interface ReleaseInput {
  allowList: Pick<CachedObject, 'metadata'>;
  /** Undefined: the namespace is not in the cache (gone, or not seen yet). */
  namespace: { deletionTimestamp?: unknown } | undefined;
  /** What the namespace holds besides the AllowList (resources with objects, or whose list failed). */
  remaining: () => Promise<string[]>;
}

export async function releaseDecision(input: ReleaseInput): Promise<ReleaseDecision | undefined> {
  const { metadata } = input.allowList;
  if (!metadata.deletionTimestamp || !(metadata.finalizers ?? []).includes(FINALIZER_ALLOW_LIST)) return undefined;
  if (input.namespace && !input.namespace.deletionTimestamp)
    return { release: true, why: 'deleted in a live namespace (the controller makes it again)' };
  const remaining = await input.remaining();
  if (remaining.length > 0) return { release: false, why: `its namespace still holds ${remaining.join(', ')}` };
  return { release: true, why: 'nothing it judges is left in its terminating namespace' };
}

export interface AllowListFinalizerIo {
  cache: Pick<ObjectCache<ManagedKind>, 'list' | 'onChange'>;
  namespace(name: string): ReleaseInput['namespace'];
  remaining(namespace: string): Promise<string[]>;
  release(allowList: CachedObject): Promise<void>;
  log(message: string): void;
}

/** Lets go of the AllowLists whose namespace no longer needs them (runs while this replica leads). */
export class AllowListFinalizers implements Runnable {
  readonly name = 'allow-list-finalizers';
  readonly needsLeaderElection = true;
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private pass: Promise<void> = Promise.resolve();
  private heldDelayMs = FIRST_RECHECK_MS;

  constructor(
    private readonly io: AllowListFinalizerIo,
    private readonly recheckMs: number,
  ) {
    io.cache.onChange(() => this.schedule(0));
  }

  start(): void {
    this.running = true;
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.running = false;
    clearTimeout(this.timer);
    await this.pass;
  }

  private schedule(afterMs: number): void {
    if (!this.running) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.pass = this.pass.then(() => this.runPass());
    }, afterMs);
  }

  /** One look at every AllowList being deleted; comes back while one is still held. */
  private async runPass(): Promise<void> {
    let held = false;
    for (const allowList of this.io.cache.list()) {
      if (!this.running) return;
      const where = `AllowList ${allowList.metadata.namespace}/${allowList.metadata.name}`;
      try {
        const decision = await releaseDecision({
          allowList,
          namespace: this.io.namespace(allowList.metadata.namespace ?? ''),
          remaining: () => this.io.remaining(allowList.metadata.namespace ?? ''),
        });
        if (!decision) continue;
        if (!decision.release) {
          held = true;
          continue;
        }
        await this.io.release(allowList);
        this.io.log(`${where}: finalizer ${FINALIZER_ALLOW_LIST} removed: ${decision.why}`);
      } catch (err) {
        held = true;
        this.io.log(`${where}: could not decide or remove its finalizer: ${describeError(err)}`);
      }
    }
    if (!held) {
      this.heldDelayMs = FIRST_RECHECK_MS;
      return;
    }
    this.schedule(this.heldDelayMs);
    this.heldDelayMs = Math.min(this.heldDelayMs * 2, Math.max(this.recheckMs, FIRST_RECHECK_MS));
  }
}
