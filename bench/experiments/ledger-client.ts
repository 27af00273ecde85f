/**
 * `npm run bench -- ledger-client`: what one headroom-ledger write costs the webhook's process, through
 * the shipped lean client (src/kube/lean-client.ts: node:https, one keep-alive connection, plain JSON)
 * and through client-node's CoreV1Api (with the connection reuse of src/kube/kubeconfig.ts), against
 * the same local apiserver in the same run, as the webhook's ServiceAccount. Each round makes a chain
 * of compare-and-swap writes (each at the resourceVersion the previous one returned), alternating the
 * clients; medians of 5 rounds. The figure is the client's own CPU per write (user + system of this
 * process), and the wall time per write. docs/adr/0003-headroom-ledger.md records the
 * outcome.
 */
import * as k8s from '@kubernetes/client-node';
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { ConfigMapLedger, type LedgerEntry, type LedgerState, type LedgerStore } from '../../src/ledger/ledger.js';
import { ControlPlane } from '../../test/support/devcluster/controlplane.js';
import { installBase, serviceAccountKubeConfig } from '../../test/support/devcluster/tenantgate.js';
import { HERE, env, median, round3 } from '../lib/measure.js';

const log = (m: string) =>
  process.stderr.write(`[ledger-client-bench ${new Date().toISOString().slice(11, 19)}] ${m}\n`);
const NAMESPACE = 'tenantgate-system';

/** The same ledger on client-node's typed API (what the webhook used before the lean client). */
class ClientNodeLedger implements Pick<LedgerStore, 'read' | 'write'> {
  private readonly core: k8s.CoreV1Api;
  constructor(kc: k8s.KubeConfig) {
    this.core = kc.makeApiClient(k8s.CoreV1Api);
  }
  async read(project: string): Promise<LedgerState> {
    const cm = await this.core.readNamespacedConfigMap({ name: `tenantgate-ledger-${project}`, namespace: NAMESPACE });
    return {
      resourceVersion: cm.metadata?.resourceVersion,
      entries: JSON.parse(cm.data?.reservations ?? '[]') as LedgerEntry[],
    };
  }
  async write(project: string, state: LedgerState, entries: LedgerEntry[]): Promise<LedgerState> {
    const name = `tenantgate-ledger-${project}`;
    const body: k8s.V1ConfigMap = {
      metadata: {
        name,
        namespace: NAMESPACE,
        labels: { 'app.kubernetes.io/managed-by': 'tenantgate', 'tenantgate.io/project': project },
        ...(state.resourceVersion ? { resourceVersion: state.resourceVersion } : {}),
      },
      data: { reservations: JSON.stringify(entries) },
    };
    const out = state.resourceVersion
      ? await this.core.replaceNamespacedConfigMap({ name, namespace: NAMESPACE, body })
      : await this.core.createNamespacedConfigMap({ namespace: NAMESPACE, body });
    return { resourceVersion: out.metadata?.resourceVersion, entries };
  }
}

/** A ledger entry like the webhook's (a namespace's reservation), a few per write as a batch has. */
const entries = (i: number): LedgerEntry[] =>
  Array.from({ length: 3 }, (_, k) => ({
    namespace: `bench-${k}`,
    allocation: { 'requests.cpu': `${100 + i}m`, pods: '10' },
    created: Date.now(),
    expires: Date.now() + 30_000,
  }));

async function chain(
  ledger: Pick<LedgerStore, 'read' | 'write'>,
  project: string,
  writes: number,
): Promise<{ cpuMs: number; wallMs: number }> {
  let state = await ledger.read(project);
  for (let i = 0; i < 20; i++) state = await ledger.write(project, state, entries(i)); // warm up
  const cpu = process.cpuUsage();
  const started = performance.now();
  for (let i = 0; i < writes; i++) state = await ledger.write(project, state, entries(i));
  const wall = performance.now() - started;
  const used = process.cpuUsage(cpu);
  return { cpuMs: (used.user + used.system) / 1000 / writes, wallMs: wall / writes };
}

export async function main(): Promise<string[]> {
  const writes = env('BENCH_LEDGER_WRITES', 300);
  const rounds = env('BENCH_LEDGER_ROUNDS', 5);
  const load = [loadavg()[0]!];
  log(`load average at start ${load[0]!.toFixed(2)}; ${rounds} rounds × ${writes} writes per client`);
  const cp = await ControlPlane.start({ log });
  try {
    await installBase(cp.info);
    const kc = await serviceAccountKubeConfig(cp.info, NAMESPACE, 'tenantgate-webhook');
    const lean = new ConfigMapLedger(kc, NAMESPACE);
    const clientNode = new ClientNodeLedger(kc);
    for (const [ledger, project] of [
      [lean, 'lean'],
      [clientNode, 'client-node'],
    ] as const)
      await ledger.write(project, { entries: [] }, []);
    const results: Record<'lean' | 'client-node', Array<{ cpuMs: number; wallMs: number }>> = {
      lean: [],
      'client-node': [],
    };
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 === 0 ? (['lean', 'client-node'] as const) : (['client-node', 'lean'] as const);
      for (const name of order) {
        const got = await chain(name === 'lean' ? lean : clientNode, name, writes);
        results[name].push(got);
        log(`round ${r + 1} ${name}: ${round3(got.cpuMs)} ms CPU, ${round3(got.wallMs)} ms wall per write`);
      }
    }
    lean.close();
    load.push(loadavg()[0]!);
    const summary = (name: 'lean' | 'client-node') => ({
      cpuMsPerWrite: round3(median(results[name].map((x) => x.cpuMs))),
      wallMsPerWrite: round3(median(results[name].map((x) => x.wallMs))),
      rounds: results[name],
    });
    const out = {
      date: new Date().toISOString(),
      loadAverage: { start: load[0], end: load[1] },
      writesPerRound: writes,
      lean: summary('lean'),
      clientNode: summary('client-node'),
    };
    const cpuRatio = round3(out.lean.cpuMsPerWrite / out.clientNode.cpuMsPerWrite);
    log(
      `median per write: lean ${out.lean.cpuMsPerWrite} ms CPU / ${out.lean.wallMsPerWrite} ms wall; client-node ${out.clientNode.cpuMsPerWrite} ms CPU / ${out.clientNode.wallMsPerWrite} ms wall; CPU lean/client-node ${cpuRatio}; load ${load.map((l) => l.toFixed(2)).join(' → ')}`,
    );
    mkdirSync(join(HERE, 'results'), { recursive: true });
    writeFileSync(join(HERE, 'results', 'ledger-client.json'), JSON.stringify({ ...out, cpuRatio }, null, 2) + '\n');
    return [];
  } finally {
    await cp.stop();
  }
}
