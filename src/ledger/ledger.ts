/**
 * The cross-replica headroom ledger: one ConfigMap per project in tenantgate's namespace,
 * written with a resourceVersion precondition (compare-and-swap). Entries leave only by expiry, so a
 * reservation whose object never appeared stops counting; readers ignore expired entries.
 *
 * The ConfigMap carries the finalizer LEDGER_FINALIZER, so deleting it (`kubectl delete`) only marks
 * it for deletion: its entries stay readable and writable until a writer finds none of them live and
 * releases it (removes the finalizer). A ledger that is not found therefore holds nothing live
 * (docs/adr/0003-headroom-ledger.md).
 */
import type * as k8s from '@kubernetes/client-node';
import { isConflict, isNotFound } from '../kube/errors.js';
import { LABEL_PROJECT, LEDGER_PREFIX } from '../validate/types.js';
import { LedgerWatch, type ConfigMapJson } from './ledger-watch.js';
import { LeanApiClient } from '../kube/lean-client.js';
import { FLEET_DATA_KEY, holdsEnforcedLimit } from '../fleet/enforced-record.js';

/** A recorded ResourceQuota write: what Q2 and Q3 read of the new object (null: the quota was deleted). */
export type LedgerQuotaWrite = {
  spec: { hard?: Record<string, string | number>; scopes?: string[]; scopeSelector?: unknown };
} | null;

/** Keeps a ledger ConfigMap readable after a delete until no entry in it is live. */
export const LEDGER_FINALIZER = 'tenantgate.io/ledger';
/** The annotation a replica whose batch keeps losing moves (ConfigMapLedger.announce); the next write drops it. */
const WAITING_ANNOTATION = 'tenantgate.io/waiting';
/** The annotation as the apiserver serializes it, key and the start of its value (a managed field reads `"f:…":{}`). */
const WAITING_MARK = `"${WAITING_ANNOTATION}":"`;

export interface LedgerEntry {
  namespace: string;
  quota?: string;
  /** The namespace's share after the change; merged per (namespace, quota) with max, never lowered. */
  allocation: Record<string, string>;
  /** The newest quota write admitted for this key. */
  write?: LedgerQuotaWrite;
  /**
   * Every spec the quota may have while the entry lives: each admitted write for this key and the
   * object each one replaced (null: no quota). Any of them may be what the apiserver stores (a write
   * may lose a conflict at its resourceVersion or be refused by a later admission plugin).
   */
  versions?: LedgerQuotaWrite[];
  /** resourceVersion of the object the newest write replaced (absent for a create). */
  basedOn?: string;
  /**
   * A Namespace CREATE only: the uids of namespaces of that name the admitting replicas' caches still
   * showed. While the entry lives, the quotas a cache shows in that namespace may be a namespace's that
   * is gone (the new one has none of them): they are read as possibly absent.
   */
  replaces?: string[];
  /**
   * The admitting replicas' watermarks when they admitted (per stream the highest, over the merged
   * admissions): only an object stored after them can be the one the entry stands for (settling, ADR 0003).
   * Absent: the entry leaves only by expiry.
   */
  seen?: StreamMarks;
  /** Epoch milliseconds. */
  created: number;
  expires: number;
}

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

/**
 * Per watch stream of the replicas' caches, an etcd revision (decimal string): how far a replica's
 * watch must have delivered before it may decide from a ledger whose entries were settled
 * (docs/adr/0003-headroom-ledger.md). Kept in the ConfigMap's data key `settled`.
 */
export interface StreamMarks {
  Namespace: string;
  ResourceQuota: string;
  /**
   * Epoch ms: the latest expiry of an entry settled so far. Until then the marks count like a live
   * entry (the ledger is not released, so a re-created ledger cannot lose them).
   */
  until?: number;
}

/** The ConfigMap data key of the settled marks. */
const SETTLED_DATA_KEY = 'settled';

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

/** Reading a ledger's ConfigMap: its version, entries, deletion and fleet record. */
function stateOf(cm: ConfigMapJson): LedgerState {
  return {
    resourceVersion: cm.metadata.resourceVersion,
    entries: parseEntries(cm.data?.reservations),
    ...(cm.metadata.deletionTimestamp ? { deleting: true } : {}),
    ...(cm.data?.[FLEET_DATA_KEY] !== undefined ? { fleet: cm.data[FLEET_DATA_KEY] } : {}),
    ...settledOf(cm.data?.[SETTLED_DATA_KEY]),
  };
}

/** The settled marks of a ledger's data; a value that does not parse as marks is none. */
export function settledOf(text: string | undefined): { settledThrough?: StreamMarks } {
  if (text === undefined) return {};
  try {
    const m = JSON.parse(text) as Partial<StreamMarks> | null;
    if (m && typeof m.Namespace === 'string' && typeof m.ResourceQuota === 'string') {
      return {
        settledThrough: {
          Namespace: m.Namespace,
          ResourceQuota: m.ResourceQuota,
          ...(typeof m.until === 'number' ? { until: m.until } : {}),
        },
      };
    }
  } catch {
    // fall through
  }
  return {};
}

/** The ledger's ConfigMaps through the lean client (docs/adr/0003-headroom-ledger.md): one keep-alive connection, plain JSON. */
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
   * ledger (its project label differs from its name) or not to parse gives undefined.
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
          return cm && cm.metadata.name === this.name(project) && cm.metadata.labels?.[LABEL_PROJECT] === project
            ? stateOf(cm)
            : undefined;
        },
      });
    });
  }

  private name(project: string): string {
    return `${LEDGER_PREFIX}${project}`;
  }

  private path(name?: string): string {
    return `/api/v1/namespaces/${encodeURIComponent(this.namespace)}/configmaps${name ? `/${encodeURIComponent(name)}` : ''}`;
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
        reservations: JSON.stringify(entries),
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

export function parseEntries(text: string | undefined): LedgerEntry[] {
  if (!text) return [];
  try {
    const parsed = JSON.parse(text) as unknown;
    return Array.isArray(parsed)
      ? (parsed.filter(
          (e) =>
            e && typeof e.namespace === 'string' && typeof e.expires === 'number' && typeof e.allocation === 'object',
        ) as LedgerEntry[])
      : [];
  } catch {
    return [];
  }
}
