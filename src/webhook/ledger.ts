/**
 * The cross-replica headroom ledger: one ConfigMap per project in tenantgate's namespace,
 * written with a resourceVersion precondition (compare-and-swap). Entries expire by themselves, so a
 * reservation whose object never appeared stops counting; readers ignore expired entries.
 */
import type * as k8s from '@kubernetes/client-node';
import { isConflict, isNotFound } from '../kube/errors.js';
import { LEDGER_PREFIX } from '../validate/types.js';
import { LeanApiClient } from '../kube/lean-client.js';

/** A recorded ResourceQuota write: what Q2 and Q3 read of the new object (null: the quota was deleted). */
export type LedgerQuotaWrite = { spec: { hard?: Record<string, string | number>; scopes?: string[]; scopeSelector?: unknown } } | null;

export interface LedgerEntry {
  namespace: string;
  quota?: string;
  allocation: Record<string, string>;
  /** The quota write admitted with this reservation, until every replica's cache shows it. */
  write?: LedgerQuotaWrite;
  /** Epoch milliseconds. */
  created: number;
  expires: number;
}

export interface LedgerState {
  resourceVersion?: string;
  entries: LedgerEntry[];
}

export class LedgerConflict extends Error {}

export interface LedgerStore {
  read(project: string): Promise<LedgerState>;
  /** Writes `entries` if the ledger is still at `state.resourceVersion`; throws LedgerConflict otherwise. */
  write(project: string, state: LedgerState, entries: LedgerEntry[]): Promise<LedgerState>;
}

interface ConfigMapJson {
  apiVersion: 'v1';
  kind: 'ConfigMap';
  metadata: { name: string; namespace: string; labels?: Record<string, string>; resourceVersion?: string };
  data?: Record<string, string>;
}

/** The ledger's ConfigMaps through the lean client (docs/adr/0025-lean-client-for-the-ledger.md): one keep-alive connection, plain JSON. */
export class ConfigMapLedger implements LedgerStore {
  private readonly api: LeanApiClient;
  constructor(kc: k8s.KubeConfig, private readonly namespace: string) {
    this.api = new LeanApiClient(kc);
  }

  private name(project: string): string {
    return `${LEDGER_PREFIX}${project}`;
  }

  private path(name?: string): string {
    return `/api/v1/namespaces/${encodeURIComponent(this.namespace)}/configmaps${name ? `/${encodeURIComponent(name)}` : ''}`;
  }

  async read(project: string): Promise<LedgerState> {
    try {
      const cm = await this.api.call<ConfigMapJson>('GET', this.path(this.name(project)));
      return { resourceVersion: cm.metadata.resourceVersion, entries: parseEntries(cm.data?.reservations) };
    } catch (err) {
      if (isNotFound(err)) return { entries: [] };
      throw err;
    }
  }

  async write(project: string, state: LedgerState, entries: LedgerEntry[]): Promise<LedgerState> {
    const name = this.name(project);
    const body: ConfigMapJson = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, namespace: this.namespace, labels: { 'app.kubernetes.io/managed-by': 'tenantgate', 'tenantgate.io/project': project }, ...(state.resourceVersion ? { resourceVersion: state.resourceVersion } : {}) },
      data: { reservations: JSON.stringify(entries) },
    };
    try {
      const out = state.resourceVersion ? await this.api.call<ConfigMapJson>('PUT', this.path(name), body) : await this.api.call<ConfigMapJson>('POST', this.path(), body);
      return { resourceVersion: out.metadata.resourceVersion, entries };
    } catch (err) {
      if (isConflict(err)) throw new LedgerConflict(`ledger of project ${project} changed concurrently`);
      // Deleted since it was read (the controller removes a deleted Project's ledger; a Project of the
      // same name may come back): the state in hand is stale like after a conflict, so read again.
      if (state.resourceVersion && isNotFound(err)) throw new LedgerConflict(`ledger of project ${project} was deleted since it was read`);
      throw err;
    }
  }

  close(): void {
    this.api.close();
  }
}

export function parseEntries(text: string | undefined): LedgerEntry[] {
  if (!text) return [];
  try {
    const parsed = JSON.parse(text) as unknown;
    return Array.isArray(parsed) ? (parsed.filter((e) => e && typeof e.namespace === 'string' && typeof e.expires === 'number' && typeof e.allocation === 'object') as LedgerEntry[]) : [];
  } catch {
    return [];
  }
}
