/**
 * The informers know whether their cache is current (`Informers.upToDate`, the webhook's /readyz and
 * its [Q5] refusal of growth): against the real apiserver, reached through a loopback TCP proxy that
 * the test cuts and restores, they are up to date once listed and watching, not while the connection
 * is gone, and again once the watches reconnect; and they stay up to date while a watch that ended
 * (the apiserver's timeout, client-node's inactivity timeout) is resumed from its last resourceVersion.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Informers, resumable } from '../../src/kube/informers.js';
import { loadKubeConfig } from '../../src/kube/kubeconfig.js';
import { ClusterLists } from '../../src/kube/lists.js';
import { WebhookMetrics } from '../../src/webhook/metrics.js';
import { cluster, eventually, kubeConfig } from '../support/cluster.js';
import { startRoundRobinProxy } from '../support/devcluster/proxy.js';
import { installBase } from '../support/devcluster/tenantgate.js';

/** A TCP proxy to the apiserver; `cut` closes it and every connection through it. */
async function proxyTo(target: number, port = 0): Promise<{ port: number; cut(): Promise<void> }> {
  const proxy = await startRoundRobinProxy([target], port);
  return { port: proxy.port, cut: () => proxy.close() };
}

beforeAll(async () => {
  await installBase(cluster()); // the Project CRD
}, 120_000);

let informers: Informers | undefined;
let proxy: { port: number; cut(): Promise<void> } | undefined;
afterAll(async () => {
  await informers?.stop();
  await proxy?.cut();
});

describe('informers: up to date only while listed and watching', () => {
  it('goes false when the connection to the apiserver breaks and true again once the watches are back', async () => {
    // Its own KubeConfig, pointed at the proxy (the shared one stays pointed at the apiserver).
    const kc = loadKubeConfig(cluster().kubeconfigs.admin!);
    const apiserver = new URL(kc.getCurrentCluster()!.server);
    proxy = await proxyTo(Number(apiserver.port));
    kc.clusters = kc.clusters.map((c) => ({ ...c, server: `https://127.0.0.1:${proxy!.port}` }));
    const logs: string[] = [];
    informers = new Informers(kc, new ClusterLists(kc), { log: (m) => logs.push(m), metrics: new WebhookMetrics(), baseDelayMs: 100 });
    expect(informers.upToDate).toBe(false);
    informers.start();
    await informers.waitSynced();
    await eventually(async () => expect(informers!.upToDate).toBe(true), { what: 'listed and watching' });
    const port = proxy.port;
    await proxy.cut();
    await eventually(async () => expect(informers!.upToDate).toBe(false), { what: 'not up to date once the watches broke' });
    expect(informers.synced).toBe(true); // synced once stays true: only upToDate follows the watches
    proxy = await proxyTo(Number(apiserver.port), port);
    await eventually(async () => expect(informers!.upToDate).toBe(true), { what: 'up to date again', timeoutMs: 30_000 });
  }, 60_000);
});

describe('informers: a watch resumed from its last resourceVersion keeps the cache current', () => {
  it('stays up to date through the apiserver ending every watch each second (a new list would not)', async () => {
    const kc = kubeConfig('admin');
    const resumed = new Informers(kc, new ClusterLists(kc), { log: () => {}, metrics: new WebhookMetrics(), watchTimeoutSeconds: 1 });
    try {
      resumed.start();
      await resumed.waitSynced();
      await eventually(async () => expect(resumed.upToDate).toBe(true), { what: 'listed and watching' });
      // At every reconnect client-node announces ('connect'), read what the webhook would see then.
      const atReconnect: boolean[] = [];
      for (const inf of resumed.informers) inf.informer.on('connect', () => atReconnect.push(resumed.upToDate));
      const before = resumed.informers.map((i) => i.resumptions);
      await new Promise((r) => setTimeout(r, 4500));
      const resumptions = resumed.informers.map((i, n) => i.resumptions - before[n]!);
      for (const r of resumptions) expect(r).toBeGreaterThanOrEqual(2);
      expect(atReconnect.length).toBeGreaterThanOrEqual(6);
      expect(atReconnect.every(Boolean)).toBe(true);
      expect(resumed.upToDate).toBe(true);
    } finally {
      await resumed.stop();
    }
  }, 60_000);

  it('resumes after no error or client-node\'s inactivity timeout only', () => {
    expect(resumable(null)).toBe(true);
    expect(resumable(new DOMException('The operation was aborted due to timeout', 'TimeoutError'))).toBe(true);
    expect(resumable(Object.assign(new Error('Gone'), { statusCode: 410 }))).toBe(false);
    expect(resumable(new Error('connect ECONNREFUSED 127.0.0.1:6443'))).toBe(false);
  });
});
