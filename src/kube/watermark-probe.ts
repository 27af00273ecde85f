/**
 * The watch streams' probe (docs/adr/0003-headroom-ledger.md): a write to a marker object
 * of each watched kind — an annotation on the webhook's own Namespace, and a ResourceQuota
 * `tenantgate-watermark` there (created on first use) — so that each stream delivers an event newer
 * than everything before it, even when nothing else changes (an idle watch does not advance, and
 * bookmarks come about once a minute). Concurrent probes share one round of writes.
 */
import type * as k8s from '@kubernetes/client-node';
import { isConflict, isNotFound } from './errors.js';
import { LeanApiClient } from './lean-client.js';

export const WATERMARK_QUOTA = 'tenantgate-watermark';
export const WATERMARK_ANNOTATION = 'tenantgate.io/watermark-probe';

interface ObjectJson {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name?: string;
    namespace?: string;
    resourceVersion?: string;
    annotations?: Record<string, string>;
  } & Record<string, unknown>;
  spec?: unknown;
}

export class WatermarkProbe {
  private readonly api: LeanApiClient;
  private inFlight: Promise<void> | undefined;
  private count = 0;

  constructor(
    kc: k8s.KubeConfig,
    private readonly namespace: string,
  ) {
    this.api = new LeanApiClient(kc);
  }

  /** One round of marker writes (joined when one is in flight). */
  probe(): Promise<void> {
    this.inFlight ??= this.round().finally(() => (this.inFlight = undefined));
    return this.inFlight;
  }

  private async round(): Promise<void> {
    const stamp = `${Date.now()}-${++this.count}`;
    await Promise.all([this.touchNamespace(stamp), this.touchQuota(stamp)]);
  }

  /** The webhook's own Namespace, annotated (read, then written at that version; one retry on a conflict). */
  private async touchNamespace(stamp: string): Promise<void> {
    const path = `/api/v1/namespaces/${encodeURIComponent(this.namespace)}`;
    for (let attempt = 0; ; attempt++) {
      const ns = await this.api.call<ObjectJson>('GET', path);
      ns.metadata.annotations = { ...ns.metadata.annotations, [WATERMARK_ANNOTATION]: stamp };
      try {
        await this.api.call<ObjectJson>('PUT', path, ns);
        return;
      } catch (err) {
        if (!isConflict(err) || attempt > 0) throw err;
      }
    }
  }

  /** The marker ResourceQuota, written unconditionally (created when absent). It limits nothing. */
  private async touchQuota(stamp: string): Promise<void> {
    const collection = `/api/v1/namespaces/${encodeURIComponent(this.namespace)}/resourcequotas`;
    const body: ObjectJson = {
      apiVersion: 'v1',
      kind: 'ResourceQuota',
      metadata: {
        name: WATERMARK_QUOTA,
        namespace: this.namespace,
        labels: { 'app.kubernetes.io/managed-by': 'tenantgate' },
        annotations: { [WATERMARK_ANNOTATION]: stamp },
      },
      spec: {},
    };
    try {
      await this.api.call<ObjectJson>('PUT', `${collection}/${WATERMARK_QUOTA}`, body);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      await this.api.call<ObjectJson>('POST', collection, body);
    }
  }

  close(): void {
    this.api.close();
  }
}
