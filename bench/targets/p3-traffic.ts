/**
 * `npm run bench -- p3-traffic`: the webhook's memory as shipped, under traffic, inside the memory
 * limit the chart gives it. A real control plane is filled with 10,000 Projects, 50,000 namespaces and
 * 50,000 quotas; `tenantgate webhook` (dist/, the shipped configuration: headroom ledger on, its own V8
 * flags) starts in a memory cgroup limited to the chart's `webhook.resources.limits.memory`, syncs its
 * caches, then takes BENCH_P3_TRAFFIC_S (300) seconds of mixed admissions at BENCH_P3_RATE (200/s):
 * namespace CREATEs and quota growths by owners spread over every project (each admitted growth writes
 * its project's ledger), namespace label UPDATEs, and /mutate calls; meanwhile quotas change through
 * the apiserver (BENCH_P3_CHURN, 20/s) so the informers take events. Every project sees every kind of
 * request in turn (the kind follows the project's visit, not the request counter, which repeated one
 * kind per project). Judged (ADR 0012): the cgroup's working set (usage − inactive file pages, what the
 * kubelet and the OOM killer go by) after traffic < 300 MB, inside the chart's limit, no OOM kill, every
 * request answered. Reported beside it: V8 heap used after a forced full GC (through the inspector, a
 * bench-only `--inspect=127.0.0.1:0`, bench/lib/memory.ts) after sync, every minute and after traffic,
 * with its slope over the second half of the traffic; VmRSS and its peak (VmHWM), which count pages
 * V8 has not given back yet and so are not the judge.
 * BENCH_P3_PROJECTS scales the cluster down for a quick run.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { generateWebhookCerts } from '../../src/certs/files.js';
import { ControlPlane } from '../../test/support/devcluster/controlplane.js';
import { installBase } from '../../test/support/devcluster/tenantgate.js';
import { HERE, ROOT, env, getText, procStatus, round1, round3, sleep } from '../lib/measure.js';
import { INSPECT_FLAG, InspectorHeap, chartMemory, leastSquares, memoryCgroup } from '../lib/memory.js';
import { review } from '../lib/reviews.js';
import { Creator, createRange } from './webhook-p3.js';
import {
  NAMESPACES_PER_PROJECT,
  QUOTA_NAME,
  namespaceName,
  ownerGroup,
  ownerUser,
  projectName,
  tenantName,
} from '../lib/webhook-server.js';

const log = (m: string) => process.stderr.write(`[p3-traffic ${new Date().toISOString().slice(11, 19)}] ${m}\n`);
const TARGET_MB = 300;
const owner = (i: number) => ({ username: ownerUser(i), groups: [ownerGroup(i)] });

function namespaceCreate(i: number, k: number): Buffer {
  const name = `${projectName(i)}-t${k}`;
  return review({
    kind: 'Namespace',
    operation: 'CREATE',
    name,
    user: owner(i),
    object: {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {
        name,
        labels: {
          'kubernetes.io/metadata.name': name,
          'tenantgate.io/project': projectName(i),
          'tenantgate.io/tenant': tenantName(i),
        },
      },
      spec: { finalizers: ['kubernetes'] },
    },
  });
}

function quotaGrowth(i: number, n: number, millis: number): Buffer {
  const namespace = namespaceName(i, n);
  const old = {
    apiVersion: 'v1',
    kind: 'ResourceQuota',
    metadata: { name: QUOTA_NAME, namespace, uid: `q-${i}-${n}`, labels: { 'tenantgate.io/project': projectName(i) } },
    spec: { hard: { 'requests.cpu': '4', 'requests.memory': '8Gi', 'limits.cpu': '8', pods: '20' } },
  };
  const object = structuredClone(old);
  object.spec.hard['requests.cpu'] = `${4000 + millis}m`;
  return review({
    kind: 'ResourceQuota',
    operation: 'UPDATE',
    name: QUOTA_NAME,
    namespace,
    user: owner(i),
    object,
    oldObject: old,
  });
}

function namespaceLabel(i: number, n: number, k: number): Buffer {
  const name = namespaceName(i, n);
  const labels = {
    'kubernetes.io/metadata.name': name,
    'tenantgate.io/project': projectName(i),
    'tenantgate.io/tenant': tenantName(i),
  };
  const old = { apiVersion: 'v1', kind: 'Namespace', metadata: { name, uid: `ns-${i}-${n}`, labels } };
  const object = structuredClone(old);
  (object.metadata.labels as Record<string, string>).build = String(k);
  return review({ kind: 'Namespace', operation: 'UPDATE', name, user: owner(i), object, oldObject: old });
}

function post(agent: Agent, port: number, path: string, body: Buffer): Promise<{ status: number; allowed?: boolean }> {
  return new Promise((resolve) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        agent,
        timeout: 10_000,
        headers: { 'content-type': 'application/json', 'content-length': body.length },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          try {
            resolve({
              status: res.statusCode ?? 0,
              allowed: (JSON.parse(Buffer.concat(chunks).toString()) as { response?: { allowed?: boolean } }).response
                ?.allowed,
            });
          } catch {
            resolve({ status: res.statusCode ?? 0 });
          }
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve({ status: 0 }));
    req.end(body);
  });
}

export async function main(): Promise<string[]> {
  const projects = Math.round(env('BENCH_P3_PROJECTS', 10_000));
  const seconds = env('BENCH_P3_TRAFFIC_S', 300);
  const rate = env('BENCH_P3_RATE', 200);
  const churn = env('BENCH_P3_CHURN', 20);
  const memory = chartMemory('webhook');
  const limit = { text: memory.limit, bytes: memory.limitBytes };
  const load = [loadavg()[0]!];
  log(
    `load average at start ${load[0]!.toFixed(2)}; ${projects} projects, ${seconds} s at ${rate}/s, churn ${churn}/s, memory limit ${limit.text}`,
  );
  const missed: string[] = [];
  const cp = await ControlPlane.start({ log });
  const group = memoryCgroup('p3', limit.bytes);
  const cgroup = 'unavailable' in group ? undefined : group;
  if ('unavailable' in group) log(`no memory cgroup (${group.unavailable}): the limit is not enforced in this run`);
  let heap: InspectorHeap | undefined;
  let child: ReturnType<typeof spawn> | undefined;
  try {
    await installBase(cp.info);
    const phases: Array<{ what: string; objects: number; seconds: number }> = [];
    await createRange(new Creator(cp.info.kubeconfigs.admin!), 0, projects, 50, phases);
    const certs = await generateWebhookCerts(join(cp.info.dir, 'p3-certs'));
    const ca = readFileSync(certs.caCert);
    // dist/ of this tree, or TG_WEBHOOK_DIST (a build of one commit, as test/support/devcluster/replicas.ts takes it).
    const mainJs = join(process.env.TG_WEBHOOK_DIST ?? join(ROOT, 'dist'), 'cli', 'main.js');
    const args = [
      INSPECT_FLAG,
      mainJs,
      'webhook',
      '--kubeconfig',
      cp.info.kubeconfigs.admin!,
      '--cert',
      certs.cert,
      '--key',
      certs.key,
      '--port',
      '0',
      '--host',
      '127.0.0.1',
    ];
    // The process joins the cgroup before node starts (`exec` keeps the pid), so every page is charged.
    const wrapper = cgroup ? cgroup.launch(process.execPath, args) : ([process.execPath, args] as const);
    const started = performance.now();
    child = spawn(wrapper[0], [...wrapper[1]], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    const logFile = join(cp.info.dir, 'p3-webhook.log');
    const logLines: string[] = [];
    child.stderr!.on('data', (c: Buffer) => {
      logLines.push(c.toString());
      // The inspector's URL (from --inspect) is on stderr: keep it in the file InspectorHeap reads.
      if (logLines.length < 5) writeFileSync(logFile, logLines.join(''));
    });
    let exited: number | null | undefined;
    child.on('exit', (code, signal) => {
      exited = code ?? (signal ? 128 : -1);
      writeFileSync(logFile, logLines.join(''));
    });
    const port = await new Promise<number>((resolve, reject) => {
      let buffer = '';
      child!.stdout!.on('data', (c: Buffer) => {
        buffer += c.toString();
        const m = /"port":\s*(\d+)|listening on https:\/\/[^:]+:(\d+)/.exec(buffer);
        if (m) resolve(Number(m[1] ?? m[2]));
      });
      child!.on('exit', () => reject(new Error(`webhook exited before listening: ${logLines.join('').slice(-2000)}`)));
    });
    for (;;) {
      if (exited !== undefined) throw new Error(`webhook exited (${exited}) while syncing`);
      if ((await getText(port, '/readyz', ca).catch(() => ({ status: 0 }))).status === 200) break;
      await sleep(500);
    }
    const readyS = round1((performance.now() - started) / 1000);
    await sleep(10_000);
    heap = await InspectorHeap.attach(logFile);
    const workingSetMB = () => (cgroup ? round1(cgroup.read().workingSetMB) : NaN);
    const afterSync = {
      ...procStatus(child.pid!),
      heapAfterGcMB: round1((await heap.afterGc()).usedMB),
      workingSetMB: workingSetMB(),
    };
    log(
      `ready in ${readyS} s; heap after GC ${afterSync.heapAfterGcMB} MB, cgroup working set ${afterSync.workingSetMB} MB, VmRSS ${afterSync.rssMB} MB (peak ${afterSync.hwmMB} MB)`,
    );

    // Churn through the apiserver: quotas change, the informers take the events.
    const core = cp.info.kubeconfigs.admin
      ? (() => {
          const kc = new k8s.KubeConfig();
          kc.loadFromFile(cp.info.kubeconfigs.admin!);
          return kc.makeApiClient(k8s.CoreV1Api);
        })()
      : undefined;
    let stop = false;
    let churned = 0;
    const churner = (async () => {
      for (let k = 0; !stop && core; k++) {
        const i = (k * 7919) % projects;
        const n = k % NAMESPACES_PER_PROJECT;
        await core
          .patchNamespacedResourceQuota(
            {
              name: QUOTA_NAME,
              namespace: namespaceName(i, n),
              body: { metadata: { labels: { churn: String(k % 100) } } },
            },
            k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
          )
          .then(() => churned++)
          .catch(() => {});
        await sleep(1000 / churn);
      }
    })();

    const agent = new Agent({ keepAlive: true, maxSockets: 32, ca });
    const verdicts: Record<string, number> = {};
    const samples: Array<{ s: number; rssMB: number; workingSetMB: number }> = [];
    const heapSamples: Array<{ s: number; heapAfterGcMB: number }> = [];
    let heapSampling: Promise<void> | undefined;
    const t0 = performance.now();
    let sent = 0;
    const inflight = new Set<Promise<void>>();
    while (performance.now() - t0 < seconds * 1000 && exited === undefined) {
      const due = Math.floor(((performance.now() - t0) / 1000) * rate);
      while (sent < due) {
        const k = sent++;
        const i = (k * 104729) % projects;
        const n = k % NAMESPACES_PER_PROJECT;
        // i ≡ k (mod 4) when 4 divides the project count, so k % 4 gave each project one kind only:
        // the kind follows the project's visit instead (every project sees all four in turn).
        const kind = (i + Math.floor(k / projects)) % 4;
        const [path, body, what] =
          kind === 0
            ? ['/validate', namespaceCreate(i, k), 'namespace create']
            : kind === 1
              ? ['/validate', quotaGrowth(i, n, (k % 50) + 1), 'quota growth']
              : kind === 2
                ? ['/validate', namespaceLabel(i, n, k), 'namespace label']
                : ['/mutate', namespaceCreate(i, k), 'mutate create'];
        const p = post(agent, port, path, body).then((r) => {
          const key = r.status !== 200 ? `${what}: HTTP ${r.status}` : `${what}: ${r.allowed ? 'allowed' : 'denied'}`;
          verdicts[key] = (verdicts[key] ?? 0) + 1;
        });
        inflight.add(p);
        void p.finally(() => inflight.delete(p));
      }
      const s = Math.round((performance.now() - t0) / 1000);
      if (samples.length === 0 || s - samples[samples.length - 1]!.s >= 10) {
        samples.push({ s, rssMB: procStatus(child.pid!).rssMB, workingSetMB: workingSetMB() });
        log(
          `t=${s}s sent ${sent}, VmRSS ${samples[samples.length - 1]!.rssMB} MB, cgroup working set ${samples[samples.length - 1]!.workingSetMB} MB`,
        );
      }
      if (!heapSampling && s >= 60 * (heapSamples.length + 1)) {
        heapSampling = heap.afterGc().then((h) => {
          heapSamples.push({ s, heapAfterGcMB: round1(h.usedMB) });
          log(`t=${s}s heap after GC ${round1(h.usedMB)} MB (GC ${Math.round(h.gcMs)} ms)`);
          heapSampling = undefined;
        });
      }
      await sleep(5);
    }
    await Promise.all(inflight);
    stop = true;
    await churner;
    await sleep(5000);
    const alive = exited === undefined;
    await heapSampling;
    const afterTraffic = alive
      ? {
          ...procStatus(child.pid!),
          heapAfterGcMB: round1((await heap.afterGc()).usedMB),
          workingSetMB: workingSetMB(),
        }
      : { rssMB: NaN, hwmMB: NaN, anonMB: NaN, heapAfterGcMB: NaN, workingSetMB: NaN };
    const secondHalf = heapSamples.filter((h) => h.s >= seconds / 2);
    const heapSlope = leastSquares(secondHalf.map((h) => ({ x: h.s / 60, y: h.heapAfterGcMB })));
    const heapSlopeMBPerMin = {
      slope: round3(heapSlope.slope),
      standardError: round3(heapSlope.standardError),
      points: secondHalf.length,
    };
    const ready = alive ? (await getText(port, '/readyz', ca).catch(() => ({ status: 0 }))).status : 0;
    const charge = cgroup?.read();
    const group = charge
      ? {
          limit: limit.text,
          maxUsageMB: round1(charge.maxUsageMB),
          usageMB: round1(charge.usageMB),
          workingSetMB: round1(charge.workingSetMB),
          failcnt: charge.failcnt,
          oomKills: charge.oomKills,
        }
      : undefined;
    agent.destroy();
    load.push(loadavg()[0]!);
    const errors = Object.entries(verdicts)
      .filter(([k]) => k.includes('HTTP'))
      .reduce((a, [, v]) => a + v, 0);
    const result = {
      date: new Date().toISOString(),
      loadAverage: { start: load[0], end: load[1] },
      projects,
      namespaces: projects * NAMESPACES_PER_PROJECT,
      quotas: projects * NAMESPACES_PER_PROJECT,
      creation: phases,
      readyS,
      trafficSeconds: seconds,
      rate,
      sent,
      churned,
      verdicts,
      afterSync,
      afterTraffic,
      samples,
      heapSamples,
      heapSlopeMBPerMin,
      cgroup: group,
      alive,
      readyz: ready,
    };
    log(
      `after ${seconds} s: cgroup working set ${afterTraffic.workingSetMB} MB, heap after GC ${afterTraffic.heapAfterGcMB} MB (slope over the second half ${heapSlopeMBPerMin.slope} ± ${heapSlopeMBPerMin.standardError} MB/min), VmRSS ${afterTraffic.rssMB} MB, peak ${afterTraffic.hwmMB} MB; cgroup ${JSON.stringify(group)}; verdicts ${JSON.stringify(verdicts)}; churned ${churned}; load ${load.map((l) => l.toFixed(2)).join(' → ')}`,
    );
    mkdirSync(join(HERE, 'results'), { recursive: true });
    writeFileSync(join(HERE, 'results', 'p3-traffic.json'), JSON.stringify(result, null, 2) + '\n');
    if (!alive || ready !== 200)
      missed.push(`p3-traffic: the webhook did not survive the traffic (exit ${exited}, readyz ${ready})`);
    if (errors > 0) missed.push(`p3-traffic: ${errors} requests not answered with 200`);
    // The judge is the cgroup's working set (VmRSS only without a cgroup).
    if (group && !(group.workingSetMB < TARGET_MB))
      missed.push(`p3-traffic: cgroup working set ${group.workingSetMB} MB after traffic, want < ${TARGET_MB} MB`);
    if (!group && !(afterTraffic.rssMB < TARGET_MB))
      missed.push(`p3-traffic: VmRSS ${afterTraffic.rssMB} MB after traffic (no cgroup), want < ${TARGET_MB} MB`);
    if (group && group.oomKills > 0)
      missed.push(`p3-traffic: ${group.oomKills} OOM kills inside the chart's ${limit.text}`);
    if (!group) missed.push('p3-traffic: no memory cgroup on this machine, the chart limit was not enforced');
    if (projects < 10_000)
      missed.push(`p3-traffic: scaled down to ${projects} projects (BENCH_P3_PROJECTS): not the target's 10,000`);
    return missed;
  } finally {
    heap?.close();
    child?.kill('SIGTERM');
    // The cgroup can go once the webhook has exited (its shutdown drains for a while).
    for (let i = 0; i < 150 && child && child.exitCode === null && child.signalCode === null; i++) await sleep(100);
    cgroup?.remove();
    await cp.stop();
  }
}
