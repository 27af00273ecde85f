/** Waiting for webhook replicas' informer caches (bench/targets/shipped.ts, bench/targets/soak.ts). */
import type { WebhookReplicas } from '../../test/support/devcluster/replicas.js';
import { sleep } from './measure.js';

/** Waits (at most 60 s) until every replica's cache holds at least `count` objects of `kind`. */
export async function cachesHold(webhooks: WebhookReplicas, kind: string, count: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  const metric = new RegExp(`^tenantgate_webhook_cache_objects\\{kind="${kind}"\\}`);
  while (!(await webhooks.scrape(metric)).every((n) => n >= count)) {
    if (Date.now() > deadline) throw new Error(`replicas' caches did not reach ${count} ${kind} objects`);
    await sleep(200);
  }
}
