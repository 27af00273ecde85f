/**
 * What a transfer costs, measured on a running fleet (bench/targets/fleet.ts, before the race): a second Project
 * with a fleet budget far above what is asked, so that nothing is refused and only the path differs.
 *  - Latency: on each member in turn, one owner raises one namespace's CPU quota in steps that alternate
 *    between +2 CPU (beyond what the member enforces: its keep is 1 CPU, so every such step needs a
 *    transfer) and +500m (within the chunk the last transfer brought: no hub call). Each write is timed
 *    from the client; whether it went through the hub is read from the replicas' granted-transfer counter
 *    around it (writes are sequential, so the counter's step belongs to that write).
 *  - Steady state: afterwards, a random walk of every namespace's quota within what the member already
 *    holds (concurrency 4): the share that growths admitted without a hub call.
 *  - Burst: 9 namespaces per member raised at once to 20 CPU each: hub status writes per admitted growth
 *    (group commit lets one transfer serve a batch).
 */
import type * as k8s from '@kubernetes/client-node';
import pLimit from 'p-limit';
import type { WebhookReplicas } from '../devcluster/replicas.js';
import { seededRandom } from '../replica-race/attempts.js';
import { apiError, until } from '../replica-race/run.js';
import { DEFAULT_QUOTA_NAME, type Project } from '../../../src/validate/types.js';

const CPU = 'requests.cpu';

export interface TransferMember {
  name: string;
  core: Record<string, k8s.CoreV1Api>;
  webhooks: WebhookReplicas;
  /** Declares the Project on the member and resolves once its webhook replicas and controller see it. */
  applyProject(project: Project): Promise<void>;
}

interface Percentiles {
  n: number;
  p50: number;
  p99: number;
}

export interface TransferCosts {
  latencyMs: { throughHub: Percentiles; withinLimit: Percentiles };
  steady: { admittedGrowths: number; throughHub: number; withoutHubPercent: number };
  burst: { admitted: number; refused: number; hubStatusWrites: number; hubWritesPerAdmitted: number };
}

function percentiles(samples: number[]): Percentiles {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p: number) =>
    sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]! : NaN;
  return { n: sorted.length, p50: Math.round(at(50) * 10) / 10, p99: Math.round(at(99) * 10) / 10 };
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

/** The latency project: 1000 CPUs for the fleet, each member bounded by all of it, room for 24 namespaces. */
export function transferProject(name: string, members: readonly string[]): Project {
  const budget = { [CPU]: '1000' };
  return {
    apiVersion: 'tenantgate.io/v1alpha1',
    kind: 'Project',
    metadata: { name },
    spec: {
      tenant: 'acme',
      owners: [{ kind: 'User', name: 'alice' }],
      maxNamespaces: 24,
      quota: { hard: budget },
      fleet: { quota: { hard: budget }, clusters: [...members] },
      namespaceDefaults: { quota: { hard: { [CPU]: '500m' } } },
    },
  };
}

async function setCpu(core: k8s.CoreV1Api, namespace: string, cpu: string): Promise<{ ok: boolean; message: string }> {
  // A read-replace that lost to the quota controller's status write (it bumps the resourceVersion a moment
  // after each spec change) is tried again: under load the latency loop otherwise failed on such a conflict.
  for (let i = 0; i < 3; i++) {
    const r = await setCpuOnce(core, namespace, cpu);
    if (r.ok || !/the object has been modified/.test(r.message)) return r;
  }
  return setCpuOnce(core, namespace, cpu);
}

async function setCpuOnce(
  core: k8s.CoreV1Api,
  namespace: string,
  cpu: string,
): Promise<{ ok: boolean; message: string }> {
  try {
    const q = await core.readNamespacedResourceQuota({ name: DEFAULT_QUOTA_NAME, namespace });
    await core.replaceNamespacedResourceQuota({
      name: DEFAULT_QUOTA_NAME,
      namespace,
      body: {
        metadata: { name: DEFAULT_QUOTA_NAME, resourceVersion: q.metadata!.resourceVersion! },
        spec: { hard: { [CPU]: cpu } },
      },
    });
    return { ok: true, message: '' };
  } catch (err) {
    return { ok: false, message: apiError(err).message };
  }
}

const granted = (m: TransferMember) =>
  m.webhooks.scrape(/^tenantgate_fleet_transfers_total\{result="granted"\}/).then(sum);
const reserved = (m: TransferMember) =>
  m.webhooks.scrape(/^tenantgate_webhook_reservations_total\{outcome="reserved"\}/).then(sum);

export async function measureTransfers(
  members: TransferMember[],
  project: Project,
  hubStatusWrites: () => Promise<number>,
  log: (line: string) => void,
): Promise<TransferCosts> {
  const name = project.metadata.name!;
  for (const m of members) await m.applyProject(project);
  const namespaces = Array.from({ length: 10 }, (_, i) => `${name}-${i}`);
  for (const m of members) {
    for (const ns of namespaces) {
      await until(`${m.name}/${ns} created`, () =>
        m.core.alice!.createNamespace({ body: { metadata: { name: ns } } }).catch((err: unknown) => {
          if (apiError(err).status === 409) return;
          throw err;
        }),
      );
    }
    for (const ns of namespaces)
      await until(`${m.name}/${ns}: default quota`, () =>
        m.core.alice!.readNamespacedResourceQuota({ name: DEFAULT_QUOTA_NAME, namespace: ns }),
      );
  }

  // Latency: +2 CPU (needs a transfer), then +500m (within the chunk), 20 times per member.
  const throughHub: number[] = [];
  const withinLimit: number[] = [];
  for (const m of members) {
    const ns = namespaces[0]!;
    let cpu = 0.5;
    for (let i = 0; i < 20; i++) {
      for (const step of [2, 0.5]) {
        cpu += step;
        const before = await granted(m);
        const t = performance.now();
        const r = await setCpu(m.core.alice!, ns, `${cpu * 1000}m`);
        const ms = performance.now() - t;
        if (!r.ok) throw new Error(`${m.name}/${ns}: raising to ${cpu} CPU was refused: ${r.message}`);
        ((await granted(m)) > before ? throughHub : withinLimit).push(ms);
      }
    }
  }
  log(
    `${name}: latency through the hub ${JSON.stringify(percentiles(throughHub))}, within the limit ${JSON.stringify(percentiles(withinLimit))}`,
  );

  // Steady state: a random walk of the other namespaces' quotas between 500m and 1500m (each member got
  // a chunk beyond its need with every transfer, and lowering frees room it still enforces).
  const random = seededRandom(7);
  const steadyBefore = {
    reserved: sum(await Promise.all(members.map(reserved))),
    granted: sum(await Promise.all(members.map(granted))),
  };
  const limit = pLimit(4);
  const walk = ['500m', '1', '1500m'];
  await Promise.all(
    Array.from({ length: 400 }, (_, i) => {
      const m = members[i % members.length]!;
      const ns = namespaces[1 + Math.floor(random() * (namespaces.length - 1))]!;
      const cpu = walk[Math.floor(random() * walk.length)]!;
      return limit(() => setCpu(m.core.alice!, ns, cpu));
    }),
  );
  const steadyReserved = sum(await Promise.all(members.map(reserved))) - steadyBefore.reserved;
  const steadyGranted = sum(await Promise.all(members.map(granted))) - steadyBefore.granted;
  const steady = {
    admittedGrowths: steadyReserved,
    throughHub: steadyGranted,
    withoutHubPercent: steadyReserved
      ? Math.round((1000 * (steadyReserved - steadyGranted)) / steadyReserved) / 10
      : NaN,
  };
  log(`${name}: steady state ${JSON.stringify(steady)}`);

  // Burst: every namespace but the first raised to 20 CPU at once, on both members: far beyond the chunk
  // any earlier transfer brought, so the burst needs the hub; group commit lets one transfer serve a batch.
  const writesBefore = await hubStatusWrites();
  const outcomes = await Promise.all(
    members.flatMap((m) => namespaces.slice(1).map((ns) => setCpu(m.core.alice!, ns, '20'))),
  );
  const writes = (await hubStatusWrites()) - writesBefore;
  const admitted = outcomes.filter((o) => o.ok).length;
  const burst = {
    admitted,
    refused: outcomes.length - admitted,
    hubStatusWrites: writes,
    hubWritesPerAdmitted: admitted ? Math.round((1000 * writes) / admitted) / 1000 : NaN,
  };
  log(
    `${name}: burst ${JSON.stringify(burst)}${burst.refused ? `; first refusal: ${outcomes.find((o) => !o.ok)?.message.slice(0, 300)}` : ''}`,
  );
  return { latencyMs: { throughHub: percentiles(throughHub), withinLimit: percentiles(withinLimit) }, steady, burst };
}
