/**
 * The informers know whether their cache is current (`Informers.upToDate`, the webhook's /readyz and
 * its [Q5] refusal of growth): against the real apiserver, reached through a loopback TCP proxy that
 * the test cuts and restores, they are up to date once listed and watching, not while the connection
 * is gone, and again once the watches reconnect; and they stay up to date while a watch that ended
 * (the apiserver's timeout, client-node's inactivity timeout) is resumed from its last resourceVersion.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Informers, resumable, type CatchUpOutcome } from '../../src/kube/informers.js';
import { WatermarkProbe } from '../../src/kube/watermark-probe.js';
import { loadKubeConfig } from '../../src/kube/kubeconfig.js';
import { ClusterLists } from '../../src/kube/lists.js';
import { WebhookMetrics } from '../../src/webhook/metrics.js';
import { cluster, eventually, kubeConfig, kubectl } from '../support/cluster.js';
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
    informers = new Informers(kc, new ClusterLists(kc), {
      log: (m) => logs.push(m),
      metrics: new WebhookMetrics(),
      baseDelayMs: 100,
    });
    expect(informers.upToDate).toBe(false);
    informers.start();
    await informers.waitSynced();
    await eventually(async () => expect(informers!.upToDate).toBe(true), { what: 'listed and watching' });
    const port = proxy.port;
    await proxy.cut();
    await eventually(async () => expect(informers!.upToDate).toBe(false), {
      what: 'not up to date once the watches broke',
    });
    expect(informers.synced).toBe(true); // synced once stays true: only upToDate follows the watches
    proxy = await proxyTo(Number(apiserver.port), port);
    await eventually(async () => expect(informers!.upToDate).toBe(true), {
      what: 'up to date again',
      timeoutMs: 30_000,
    });
  }, 60_000);
});

describe('informers: a watch resumed from its last resourceVersion keeps the cache current', () => {
  it('stays up to date through the apiserver ending every watch each second (a new list would not)', async () => {
    const kc = kubeConfig('admin');
    const resumed = new Informers(kc, new ClusterLists(kc), {
      log: () => {},
      metrics: new WebhookMetrics(),
      watchTimeoutSeconds: 1,
    });
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

  it("resumes after no error or client-node's inactivity timeout only", () => {
    expect(resumable(null)).toBe(true);
    expect(resumable(new DOMException('The operation was aborted due to timeout', 'TimeoutError'))).toBe(true);
    expect(resumable(Object.assign(new Error('Gone'), { statusCode: 410 }))).toBe(false);
    expect(resumable(new Error('connect ECONNREFUSED 127.0.0.1:6443'))).toBe(false);
  });
});

describe('informers: a catch-up to settled marks probes only a stream that does not advance by itself', () => {
  /** Informers with the probe counted (and, when `write`, the real probe's writes in namespace `home`). */
  async function caughtUp(home: string, write: boolean, probeAfterMs?: number) {
    const kc = kubeConfig('admin');
    const realProbe = new WatermarkProbe(kc, home);
    const probes = { count: 0 };
    const outcomes: CatchUpOutcome[] = [];
    const probe = async () => {
      probes.count += 1;
      if (write) await realProbe.probe();
    };
    const inf = new Informers(kc, new ClusterLists(kc), {
      log: () => {},
      metrics: new WebhookMetrics(),
      streams: { probe, onCatchUp: (o) => outcomes.push(o), ...(probeAfterMs !== undefined ? { probeAfterMs } : {}) },
    });
    inf.start();
    await inf.waitSynced();
    await eventually(async () => expect(inf.upToDate).toBe(true), { what: 'listed and watching' });
    return { inf, streams: inf.streams!, probes, outcomes, close: async () => (await inf.stop(), realProbe.close()) };
  }
  /** The revision a write was stored at. */
  const revisionOf = (stdout: string) =>
    (JSON.parse(stdout) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
  const never = new AbortController().signal;
  beforeAll(async () => {
    await kubectl('admin', ['create', 'namespace', 'catch-up-home']);
  });

  it('waits for its own watches to bring the events the marks name, without a probe', async () => {
    // A long grace, so the namespace written below (a kubectl process) surely arrives before it ends.
    const t = await caughtUp('catch-up-home', true, 4000);
    try {
      // Marks one event ahead on the Namespace stream, as a settling replica's watch may have brought a
      // moment before this one's: the next namespace event reaches them.
      const marks = t.streams.marks()!;
      const waiting = t.streams.catchUp(
        { Namespace: String(BigInt(marks.Namespace) + 1n), ResourceQuota: marks.ResourceQuota },
        8000,
        never,
      );
      await kubectl('admin', ['create', 'namespace', 'catch-up-streamed']);
      expect(await waiting).toBe(true);
      expect(t.probes.count).toBe(0);
      expect(t.outcomes).toEqual(['streamed']);
    } finally {
      await t.close();
    }
  }, 60_000);

  /**
   * A catch-up to a ConfigMap's revision: no Namespace or ResourceQuota event carries it or anything
   * later until the probe writes (`write`: the real probe; else one that writes nothing).
   */
  async function catchUpElsewhere(configMap: string, write: boolean, ms: number) {
    const t = await caughtUp('catch-up-home', write);
    try {
      const elsewhere = revisionOf(
        (await kubectl('admin', ['create', 'configmap', configMap, '-n', 'catch-up-home', '-o', 'json'])).stdout,
      );
      const reached = await t.streams.catchUp({ Namespace: elsewhere, ResourceQuota: elsewhere }, ms, never);
      return { reached, probes: t.probes.count, outcomes: t.outcomes };
    } finally {
      await t.close();
    }
  }

  it('probes when a stream has nothing to bring (a revision written elsewhere), and reaches the marks through the probe', async () => {
    expect(await catchUpElsewhere('catch-up-elsewhere', true, 5000)).toEqual({
      reached: true,
      probes: 1,
      outcomes: ['probed'],
    });
  }, 60_000);

  it('gives up at its deadline when nothing brings the marks (the probe fails to write)', async () => {
    expect(await catchUpElsewhere('catch-up-nowhere', false, 300)).toEqual({
      reached: false,
      probes: 1,
      outcomes: ['behind'],
    });
  }, 60_000);
});
