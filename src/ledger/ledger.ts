/**
 * The cross-replica headroom ledger: one ConfigMap per project in tenantgate's namespace,
 * written with a resourceVersion precondition (compare-and-swap). Entries leave only by expiry, so a
 * reservation whose object never appeared stops counting; readers ignore expired entries.
 *
 * The ConfigMap carries the finalizer LEDGER_FINALIZER, so deleting it (`kubectl delete`) only marks
 * it for deletion: its entries stay readable and writable until a writer finds none of them live and
 * releases it (removes the finalizer). A ledger that is not found therefore holds nothing live
 * (docs/adr/0003-headroom-ledger.md). A ledger whose data does not read back (hand-edited, truncated) is
 * no ledger read as empty: `read` throws LedgerUnreadable (ledger-format.ts) and the webhook refuses.
 */
import type * as k8s from '@kubernetes/client-node';
import { isConflict, isNotFound } from '../kube/errors.js';
import { LABEL_PROJECT, LEDGER_PREFIX } from '../validate/types.js';
import { LedgerWatch, type ConfigMapJson } from './ledger-watch.js';
import { LeanApiClient } from '../kube/lean-client.js';
import { FLEET_DATA_KEY, holdsEnforcedLimit } from '../fleet/enforced-record.js';
import {
  LedgerUnreadable,
  parseEntries,
  RESERVATIONS_DATA_KEY,
  settledOf,
  SETTLED_DATA_KEY,
  type LedgerEntry,
  type StreamMarks,
} from './ledger-format.js';

export type { LedgerEntry, LedgerQuotaWrite, StreamMarks } from './ledger-format.js';

/** Keeps a ledger ConfigMap readable after a delete until no entry in it is live. */
export const LEDGER_FINALIZER = 'tenantgate.io/ledger';
/** The annotation a replica whose batch keeps losing moves (ConfigMapLedger.announce); the next write drops it. */
const WAITING_ANNOTATION = 'tenantgate.io/waiting';
/** The annotation as the apiserver serializes it, key and the start of its value (a managed field reads `"f:…":{}`). */
const WAITING_MARK = `"${WAITING_ANNOTATION}":"`;

export interface LedgerState {
  resourceVersion?: string;
  entries: LedgerEntry[];
  /** The ledger was deleted and waits for its finalizer to go: its entries still count. */
  deleting?: boolean;
  /**
   * The member's enforced fleet limit record (data key `fleet`, src/fleet/enforced-limit.ts), as text;
   * a write carries it over unchanged unless the caller changed it.
   */
  fleet?: string;
  /**
   * Entries left before their expiry because the writer's cache showed their objects: a replica
   * decides from this ledger only once its own watches have delivered through these marks. Monotonic;
   * a write carries it over unless the caller raised it.
   */
  settledThrough?: StreamMarks;
}

export class LedgerConflict extends Error {}

/**
 * A ledger written (by any replica) as seen on a watch: its resourceVersion, and its state, parsed only
 * when asked for (a replica that has not used the project lately, or wrote this version itself, never
 * asks). `state()` undefined: what the watch delivered is not that project's ledger after all.
 * `announced`: the version is a replica's announcement (LedgerStore.announce), not a write of entries.
 */
export type LedgerChange =
  | { project: string; resourceVersion: string; state: () => LedgerState | undefined; announced?: true }
  | { project: string; deleted: true };

export interface LedgerStore {
  /** The project's ledger (no entries when there is none); throws LedgerUnreadable when it does not read back. */
  read(project: string): Promise<LedgerState>;
  /**
   * Writes `entries` if the ledger is still at `state.resourceVersion`; throws LedgerConflict otherwise.
   * The settled marks written are `settledThrough`, else the state's.
   */
  write(
    project: string,
    state: LedgerState,
    entries: LedgerEntry[],
    settledThrough?: StreamMarks,
  ): Promise<LedgerState>;
  /**
   * Lets a ledger marked for deletion go (removes its finalizer) when it is still at
   * `state.resourceVersion`; the caller has checked that none of its entries is live and that it
   * holds no enforced fleet limit (holdsEnforcedLimit). Throws LedgerConflict when it changed meanwhile.
   */
  release(project: string, state: LedgerState): Promise<void>;
  /**
   * Makes the ledger's version move without changing anything a decision reads, whatever the version
   * now (a write that cannot lose): every other writer's watch brings it as another replica's write.
   * A replica whose batch keeps losing makes itself seen this way (writer-turns.ts). Resolves with the
   * ledger as it now is; undefined when there is no ledger (nothing to contend for).
   */
  announce?(project: string): Promise<LedgerState | undefined>;
  /**
   * Tells `listener` of every ledger write it sees, from any writer, as soon as it can: a cache of the
   * ledger kept current this way makes a compare-and-swap lose only to a write in flight at the same
   * time, not to every write of another replica since this one last wrote. Best effort (a missed change
   * only costs a conflict); absent in stores that cannot watch.
   */
  subscribe?(listener: (change: LedgerChange) => void): void;
}

/**
 * Reading a ledger's ConfigMap: its version, entries, deletion, fleet record and settled marks. Throws
 * LedgerUnreadable (ledger-format.ts) when its reservations or marks do not read back: fail closed.
 */
function stateOf(cm: ConfigMapJson): LedgerState {
  const configMap = `${cm.metadata.namespace ?? ''}/${cm.metadata.name ?? ''}`;
  return {
    resourceVersion: cm.metadata.resourceVersion,
    entries: parseEntries(configMap, cm.data?.[RESERVATIONS_DATA_KEY]),
    ...(cm.metadata.deletionTimestamp ? { deleting: true } : {}),
    ...(cm.data?.[FLEET_DATA_KEY] !== undefined ? { fleet: cm.data[FLEET_DATA_KEY] } : {}),
    ...settledOf(configMap, cm.data?.[SETTLED_DATA_KEY]),
  };
}

/**
 * The ledger's ConfigMaps through the lean client (docs/adr/0003-headroom-ledger.md): one
 * keep-alive connection, plain JSON.
 */
export class ConfigMapLedger implements LedgerStore {
  private readonly api: LeanApiClient;
  private watcher: LedgerWatch | undefined;
  private announcements = 0;
  constructor(
    kc: k8s.KubeConfig,
    private readonly namespace: string,
    private readonly log: (message: string) => void = () => {},
    /** Tests: how long the apiserver keeps each ledger watch open (ledger-watch.ts). */
    private readonly watchSeconds?: number,
  ) {
    this.api = new LeanApiClient(kc);
  }

  /** Ledger watches begun so far (0 before subscribe). */
  get watchesBegun(): number {
    return this.watcher?.watchesBegun ?? 0;
  }

  /**
   * Starts one watch on the namespace's ledger ConfigMaps (ledger-watch.ts) on the first call. A change
   * is parsed only when its `state` is asked for; a ConfigMap that turns out not to be the project's
   * ledger (its project label differs from its name) or that is unreadable gives undefined.
   */
  subscribe(listener: (change: LedgerChange) => void): void {
    this.watcher ??= new LedgerWatch(this.api, this.path(), this.log, this.watchSeconds);
    this.watcher.listen((event) => {
      if (!event.name.startsWith(LEDGER_PREFIX)) return;
      const project = event.name.slice(LEDGER_PREFIX.length);
      if (project === '') return;
      if (event.type === 'DELETED') {
        // Rare, and only acted on when the object is this project's ledger.
        const cm = event.object();
        if (cm && cm.metadata.labels?.[LABEL_PROJECT] === project) listener({ project, deleted: true });
        return;
      }
      listener({
        project,
        resourceVersion: event.resourceVersion,
        // Every write replaces the annotations: only an announcement's version carries the mark.
        ...(event.holds(WAITING_MARK) ? { announced: true as const } : {}),
        state: () => {
          const cm = event.object();
          if (!cm || cm.metadata.name !== this.name(project) || cm.metadata.labels?.[LABEL_PROJECT] !== project)
            return undefined;
          try {
            return stateOf(cm);
          } catch (err) {
            // Unreadable: the cache forgets the project, and its next decision reads the ledger and is refused.
            if (err instanceof LedgerUnreadable) return undefined;
            throw err;
          }
        },
      });
    });
  }

  private name(project: string): string {
    return `${LEDGER_PREFIX}${project}`;
  }

  private path(name?: string): string {
    return (
      `/api/v1/namespaces/${encodeURIComponent(this.namespace)}/configmaps` +
      `${name ? `/${encodeURIComponent(name)}` : ''}`
    );
  }

  async read(project: string): Promise<LedgerState> {
    try {
      return stateOf(await this.api.call<ConfigMapJson>('GET', this.path(this.name(project))));
    } catch (err) {
      // With the finalizer, a ledger is gone only once nothing in it was live (see release).
      if (isNotFound(err)) return { entries: [] };
      throw err;
    }
  }

  private body(
    project: string,
    state: LedgerState,
    entries: LedgerEntry[],
    finalizers: string[],
    settledThrough = state.settledThrough,
  ): ConfigMapJson {
    return {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: this.name(project),
        namespace: this.namespace,
        labels: { 'app.kubernetes.io/managed-by': 'tenantgate', 'tenantgate.io/project': project },
        finalizers,
        ...(state.resourceVersion ? { resourceVersion: state.resourceVersion } : {}),
      },
      data: {
        [RESERVATIONS_DATA_KEY]: JSON.stringify(entries),
        ...(state.fleet !== undefined ? { [FLEET_DATA_KEY]: state.fleet } : {}),
        ...(settledThrough ? { [SETTLED_DATA_KEY]: JSON.stringify(settledThrough) } : {}),
      },
    };
  }

  async write(
    project: string,
    state: LedgerState,
    entries: LedgerEntry[],
    settledThrough = state.settledThrough,
  ): Promise<LedgerState> {
    const name = this.name(project);
    const body = this.body(project, state, entries, [LEDGER_FINALIZER], settledThrough);
    try {
      const out = state.resourceVersion
        ? await this.api.call<ConfigMapJson>('PUT', this.path(name), body)
        : await this.api.call<ConfigMapJson>('POST', this.path(), body);
      return {
        resourceVersion: out.metadata.resourceVersion,
        entries,
        ...(out.metadata.deletionTimestamp ? { deleting: true } : {}),
        ...(state.fleet !== undefined ? { fleet: state.fleet } : {}),
        ...(settledThrough ? { settledThrough } : {}),
      };
    } catch (err) {
      if (isConflict(err)) throw new LedgerConflict(`ledger of project ${project} changed concurrently`);
      // Deleted since it was read (the controller removes a deleted Project's ledger; a Project of the
      // same name may come back): the state in hand is stale like after a conflict, so read again.
      if (state.resourceVersion && isNotFound(err))
        throw new LedgerConflict(`ledger of project ${project} was deleted since it was read`);
      throw err;
    }
  }

  async announce(project: string): Promise<LedgerState | undefined> {
    this.announcements += 1;
    const patch = {
      metadata: { annotations: { [WAITING_ANNOTATION]: `${Date.now()}-${process.pid}-${this.announcements}` } },
    };
    try {
      return stateOf(await this.api.call<ConfigMapJson>('PATCH', this.path(this.name(project)), patch));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async release(project: string, state: LedgerState): Promise<void> {
    // A nonzero enforced fleet limit is room this cluster holds of the fleet: the ledger stays until it is given back.
    if (!state.resourceVersion || holdsEnforcedLimit(state)) return;
    try {
      await this.api.call<ConfigMapJson>(
        'PUT',
        this.path(this.name(project)),
        this.body(project, state, state.entries, []),
      );
    } catch (err) {
      if (isConflict(err)) throw new LedgerConflict(`ledger of project ${project} changed concurrently`);
      if (isNotFound(err)) return;
      throw err;
    }
  }

  close(): void {
    this.watcher?.stop();
    this.api.close();
  }
}
