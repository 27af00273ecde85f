/**
 * The cross-replica headroom ledger (SPEC §5.4): one ConfigMap per project in tenantgate's namespace,
 * written with a resourceVersion precondition (compare-and-swap). Entries expire by themselves, so a
 * reservation whose object never appeared stops counting; readers ignore expired entries.
 */
import * as k8s from '@kubernetes/client-node';
import { isConflict, isNotFound } from '../kube/errors.js';

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

export const LEDGER_PREFIX = 'tenantgate-ledger-';

export class ConfigMapLedger implements LedgerStore {
  private readonly core: k8s.CoreV1Api;
  constructor(kc: k8s.KubeConfig, private readonly namespace: string) {
    this.core = kc.makeApiClient(k8s.CoreV1Api);
  }

  private name(project: string): string {
    return `${LEDGER_PREFIX}${project}`;
  }

  async read(project: string): Promise<LedgerState> {
    try {
      const cm = await this.core.readNamespacedConfigMap({ name: this.name(project), namespace: this.namespace });
      return { resourceVersion: cm.metadata?.resourceVersion, entries: parseEntries(cm.data?.reservations) };
    } catch (err) {
      if (isNotFound(err)) return { entries: [] };
      throw err;
    }
  }

  async write(project: string, state: LedgerState, entries: LedgerEntry[]): Promise<LedgerState> {
    const body: k8s.V1ConfigMap = {
      metadata: { name: this.name(project), namespace: this.namespace, labels: { 'app.kubernetes.io/managed-by': 'tenantgate', 'tenantgate.io/project': project }, ...(state.resourceVersion ? { resourceVersion: state.resourceVersion } : {}) },
      data: { reservations: JSON.stringify(entries) },
    };
    try {
      const out = state.resourceVersion
        ? await this.core.replaceNamespacedConfigMap({ name: this.name(project), namespace: this.namespace, body })
        : await this.core.createNamespacedConfigMap({ namespace: this.namespace, body });
      return { resourceVersion: out.metadata?.resourceVersion, entries };
    } catch (err) {
      if (isConflict(err)) throw new LedgerConflict(`ledger of project ${project} changed concurrently`);
      throw err;
    }
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
