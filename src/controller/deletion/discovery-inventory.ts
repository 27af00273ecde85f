/**
 * The I/O of the inventory (ADR 0096 step 3): discovery of every namespaced resource the API server
 * offers with the `list` and `delete` verbs, then one short list of each in a namespace; the answers go
 * to classifyContents (inventory.ts, pure). A group whose discovery fails, and a list that fails, are
 * "unknown contents": the namespace waits for a confirmation (fails closed).
 */
import type * as k8s from '@kubernetes/client-node';
import pLimit from 'p-limit';
import { describeError } from '../../kube/errors.js';
import { LeanApiClient } from '../../kube/lean-client.js';
import {
  classifyContents,
  holdsNothing,
  isDerived,
  resourcesHolding,
  type InventoryResource,
  type ListAnswer,
  type NamespaceContents,
} from './inventory.js';

/** Objects asked for per list: enough to count what a namespace holds, `more` says there were more. */
const LIST_LIMIT = 50;
/** How long one discovery is reused by default (CRDs installed meanwhile are seen after this). */
const DISCOVERY_TTL_MS = 60_000;
/** Lists in flight at once. */
const CONCURRENCY = 8;

interface ResourceList {
  resources?: Array<{ name: string; namespaced: boolean; kind: string; verbs?: string[] }>;
}
interface GroupList {
  groups?: Array<{
    name: string;
    preferredVersion?: { groupVersion: string };
    versions?: Array<{ groupVersion: string }>;
  }>;
}

/** What discovery found: the resources to list, and the group versions it could not read (with why). */
export interface Discovered {
  resources: Array<InventoryResource & { path: string }>;
  failed: Array<{ resource: InventoryResource; error: string }>;
}

/** The namespaced, listable and deletable resources of one APIResourceList (subresources left out). */
export function inventoryResources(group: string, groupVersion: string, list: ResourceList): Discovered['resources'] {
  const base = group === '' ? `/api/${groupVersion}` : `/apis/${groupVersion}`;
  return (list.resources ?? [])
    .filter((r) => r.namespaced && !r.name.includes('/'))
    .filter((r) => (r.verbs ?? []).includes('list') && (r.verbs ?? []).includes('delete'))
    .map((r) => ({ group, resource: r.name, kind: r.kind, path: `${base}/namespaces/{namespace}/${r.name}` }))
    .filter((r) => !isDerived(r));
}

export class DiscoveryInventory {
  private lean: LeanApiClient | undefined;
  private discovered: { at: number; value: Discovered } | undefined;
  /** Lists in flight at once, over every namespace looked at. */
  private readonly limit = pLimit(CONCURRENCY);

  constructor(
    private readonly kubeConfig: k8s.KubeConfig,
    private readonly ttlMs: number = DISCOVERY_TTL_MS,
  ) {}

  /** Made at the first use: a kubeconfig the lean client refuses fails that pass, not the controller's start. */
  private get client(): LeanApiClient {
    this.lean ??= new LeanApiClient(this.kubeConfig);
    return this.lean;
  }

  close(): void {
    this.lean?.close();
  }

  /** Every group's preferred version, reused for `maxAgeMs` (the TTL by default; 0 reads it again). */
  async discover(maxAgeMs: number = this.ttlMs): Promise<Discovered> {
    if (this.discovered && Date.now() - this.discovered.at < maxAgeMs) return this.discovered.value;
    const at = Date.now();
    const value: Discovered = { resources: [], failed: [] };
    value.resources.push(...inventoryResources('', 'v1', await this.client.call<ResourceList>('GET', '/api/v1')));
    const groups = (await this.client.call<GroupList>('GET', '/apis')).groups ?? [];
    await Promise.all(
      groups.map(async (g) => {
        const gv = g.preferredVersion?.groupVersion ?? g.versions?.[0]?.groupVersion;
        if (!gv) return;
        try {
          value.resources.push(
            ...inventoryResources(g.name, gv, await this.client.call<ResourceList>('GET', `/apis/${gv}`)),
          );
        } catch (err) {
          value.failed.push({ resource: { group: g.name, resource: '*', kind: '*' }, error: describeError(err) });
        }
      }),
    );
    value.resources.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    this.discovered = { at, value };
    return value;
  }

  /**
   * What each namespace holds that neither tenantgate nor Kubernetes made. Throws only when discovery itself
   * fails. A namespace found empty is looked at again on a discovery read for this call: one reused from up
   * to a TTL ago misses a group that appeared since (a CRD installed a moment ago, an aggregated API that went
   * down), and an empty namespace is deleted without a confirmation.
   */
  async contents(namespaces: readonly string[]): Promise<NamespaceContents[]> {
    const startedAt = Date.now();
    const found = await this.listEach(await this.discover(), namespaces);
    const empty = found.filter(holdsNothing).map((c) => c.namespace);
    if (empty.length === 0 || (this.discovered && this.discovered.at >= startedAt)) return found;
    const again = new Map((await this.listEach(await this.discover(0), empty)).map((c) => [c.namespace, c]));
    return found.map((c) => again.get(c.namespace) ?? c);
  }

  /**
   * The resources that still have objects in `namespace` (any object, whoever made it), leaving out the
   * derived kinds and what `except` names; a resource whose list failed counts (fails closed).
   */
  async remaining(namespace: string, except: (r: InventoryResource) => boolean): Promise<string[]> {
    return resourcesHolding(await this.answers(await this.discover(), namespace), except);
  }

  private listEach(discovered: Discovered, namespaces: readonly string[]): Promise<NamespaceContents[]> {
    return Promise.all(
      namespaces.map(async (namespace) => classifyContents(namespace, await this.answers(discovered, namespace))),
    );
  }

  /** One short list of every discovered resource in `namespace` (the failed discoveries as failed lists). */
  private async answers({ resources, failed }: Discovered, namespace: string): Promise<ListAnswer[]> {
    const answers: ListAnswer[] = [...failed];
    await Promise.all(
      resources.map((r) =>
        this.limit(async () => {
          const resource = { group: r.group, resource: r.resource, kind: r.kind };
          const path = `${r.path.replace('{namespace}', encodeURIComponent(namespace))}?limit=${LIST_LIMIT}`;
          try {
            const list = await this.client.call<{ items?: ListAnswer[]; metadata?: { continue?: string } }>(
              'GET',
              path,
            );
            answers.push({ resource, items: (list.items ?? []) as never, more: Boolean(list.metadata?.continue) });
          } catch (err) {
            answers.push({ resource, error: describeError(err) });
          }
        }),
      ),
    );
    return answers;
  }
}
