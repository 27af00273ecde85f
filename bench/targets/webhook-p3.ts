/** bench/targets/webhook-p3.ts: split out of bench/targets/webhook.ts (see its header for what the webhook benchmark measures). */
import * as k8s from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type WebhookCertFiles } from '../../src/certs/files.js';
import { ControlPlane } from '../../test/support/devcluster/controlplane.js';
import { NAMESPACES_PER_PROJECT, fixtureNamespace, fixtureProject, fixtureQuota } from '../lib/webhook-server.js';

import {
  P3_FULL_PROJECTS,
  TARGET_RSS_MB,
  compileTenantgate,
  env,
  getText,
  log,
  nowMs,
  procStatus,
  round1,
  round3,
  sleep,
  startChild,
  tailFile,
} from '../lib/measure.js';

export interface RssPoint {
  /** How the webhook was started when not as shipped: node arguments and TENANTGATE_WEBHOOK_V8_FLAGS. */
  variant?: string;
  nodeArgs?: string[];
  v8FlagsEnv?: string;
  projects: number;
  namespaces: number;
  quotas: number;
  /** What the webhook's caches held (from /metrics). */
  cached: Record<string, number>;
  readyS: number;
  rssMB: number;
  peakRssMB: number;
  anonMB: number;
}

export interface P3Result {
  targetProjects: number;
  scale: number;
  scaledDown: boolean;
  creation: {
    objects: number;
    seconds: number;
    perSecond: number;
    retries: number;
    phases: Array<{ what: string; objects: number; seconds: number }>;
  };
  points: RssPoint[];
  /** At full size: the webhook started otherwise (V8 flags), to choose the shipped flags with numbers. */
  variants: RssPoint[];
  perProjectKB: number;
  baseMB: number;
  /** RSS at 10,000 projects / 50,000 namespaces / 50,000 quotas: measured, or extrapolated from the slope. */
  fullScaleMB: number;
  fullScaleMeasured: boolean;
  met: boolean;
  /** Average JSON size of the objects as the apiserver serves them (a sample), and the share of managedFields. */
  objectJson: Record<string, { sampled: number; bytes: number; managedFieldsBytes: number }>;
}

export class Creator {
  private readonly core: k8s.CoreV1Api;
  private readonly custom: k8s.CustomObjectsApi;
  retries = 0;
  objects = 0;
  constructor(kubeconfig: string) {
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(kubeconfig);
    this.core = kc.makeApiClient(k8s.CoreV1Api);
    this.custom = kc.makeApiClient(k8s.CustomObjectsApi);
  }

  private async withRetry(fn: () => Promise<unknown>): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await fn();
        this.objects += 1;
        return;
      } catch (err) {
        const code = (err as { code?: number }).code;
        if (code === 409) {
          this.objects += 1;
          return;
        }
        if (attempt >= 8) throw err;
        this.retries += 1;
        await sleep(Math.min(5000, 100 * 2 ** attempt));
      }
    }
  }

  project(i: number): Promise<void> {
    const body = fixtureProject(i);
    delete body.metadata.finalizers;
    return this.withRetry(() =>
      this.custom.createClusterCustomObject({ group: 'tenantgate.io', version: 'v1alpha1', plural: 'projects', body }),
    );
  }
  namespace(i: number, n: number): Promise<void> {
    const ns = fixtureNamespace(i, n);
    return this.withRetry(() => this.core.createNamespace({ body: ns as k8s.V1Namespace }));
  }
  quota(i: number, n: number): Promise<void> {
    const q = fixtureQuota(i, n);
    return this.withRetry(() =>
      this.core.createNamespacedResourceQuota({ namespace: q.metadata.namespace!, body: q as k8s.V1ResourceQuota }),
    );
  }
}

export async function parallel(count: number, concurrency: number, fn: (k: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const k = next++;
      await fn(k);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, () => worker()));
}

/** Creates projects [from, to) with their namespaces, then their quotas. */
export async function createRange(
  creator: Creator,
  from: number,
  to: number,
  concurrency: number,
  phases: P3Result['creation']['phases'],
): Promise<void> {
  const span = to - from;
  if (span <= 0) return;
  const timed = async (what: string, objects: number, fn: (k: number) => Promise<void>) => {
    const t = nowMs();
    await parallel(objects, concurrency, fn);
    const seconds = (nowMs() - t) / 1000;
    phases.push({ what, objects, seconds: round1(seconds) });
    log(`P3: ${what}: ${objects} in ${round1(seconds)} s (${Math.round(objects / seconds)}/s)`);
  };
  await timed(`projects ${from}–${to - 1}`, span, (k) => creator.project(from + k));
  await timed(`namespaces of projects ${from}–${to - 1}`, span * NAMESPACES_PER_PROJECT, (k) =>
    creator.namespace(from + Math.floor(k / NAMESPACES_PER_PROJECT), k % NAMESPACES_PER_PROJECT),
  );
  await timed(`quotas of projects ${from}–${to - 1}`, span * NAMESPACES_PER_PROJECT, (k) =>
    creator.quota(from + Math.floor(k / NAMESPACES_PER_PROJECT), k % NAMESPACES_PER_PROJECT),
  );
}

/** Webhook start-ups measured besides the shipped one (ADR 0004); BENCH_WEBHOOK_RSS_VARIANTS=0 skips them. */
export const RSS_VARIANTS: Array<{ variant: string; nodeArgs: string[]; v8FlagsEnv?: string }> = [
  { variant: 'no V8 flags', nodeArgs: [], v8FlagsEnv: '' },
  { variant: 'node --optimize-for-size', nodeArgs: ['--optimize-for-size'], v8FlagsEnv: '' },
  { variant: 'node --max-semi-space-size=16', nodeArgs: ['--max-semi-space-size=16'], v8FlagsEnv: '' },
  { variant: 'node --max-semi-space-size=4', nodeArgs: ['--max-semi-space-size=4'], v8FlagsEnv: '' },
  { variant: 'shipped + node --max-semi-space-size=4', nodeArgs: ['--max-semi-space-size=4'] },
];

export async function measureRss(
  work: string,
  cp: ControlPlane,
  certs: WebhookCertFiles,
  mainJs: string,
  expect: { projects: number; namespaces: number; quotas: number },
  settleMs: number,
  variant?: (typeof RSS_VARIANTS)[number],
): Promise<RssPoint> {
  const ca = readFileSync(certs.caCert);
  const t = nowMs();
  const logFile = join(
    work,
    `webhook-rss-${expect.projects}${variant ? `-${variant.variant.replace(/\W+/g, '-')}` : ''}.log`,
  );
  // The shipped start-up reads no TENANTGATE_WEBHOOK_V8_FLAGS; a variant sets its own.
  const { TENANTGATE_WEBHOOK_V8_FLAGS: _inherited, ...env } = process.env;
  if (variant?.v8FlagsEnv !== undefined) env.TENANTGATE_WEBHOOK_V8_FLAGS = variant.v8FlagsEnv;
  const child = await startChild(
    variant?.nodeArgs ?? [],
    [
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
    ],
    logFile,
    undefined,
    undefined,
    env,
  );
  try {
    const deadline = t + 15 * 60_000;
    for (;;) {
      if (nowMs() > deadline) throw new Error(`webhook not ready after 15 min:\n${tailFile(logFile)}`);
      try {
        if ((await getText(child.port, '/readyz', ca)).status === 200) break;
      } catch {
        // starting
      }
      await sleep(200);
    }
    const readyS = round1((nowMs() - t) / 1000);
    // Settle: let the last watch events, timers and a few GCs pass; keep the last reading.
    let status = procStatus(child.pid);
    for (let waited = 0; waited < settleMs; waited += 1000) {
      await sleep(1000);
      status = procStatus(child.pid);
    }
    const metrics = await getText(child.port, '/metrics', ca);
    status = procStatus(child.pid);
    const cached: Record<string, number> = {};
    for (const m of metrics.text.matchAll(/^tenantgate_webhook_cache_objects\{kind="([^"]+)"\} (\d+)/gm))
      cached[m[1]!] = Number(m[2]);
    log(
      `P3: webhook${variant ? ` (${variant.variant})` : ''} with ${JSON.stringify(cached)} cached: ready in ${readyS} s, VmRSS ${status.rssMB} MB (peak ${status.hwmMB} MB)`,
    );
    return {
      ...(variant
        ? {
            variant: variant.variant,
            nodeArgs: variant.nodeArgs,
            ...(variant.v8FlagsEnv !== undefined ? { v8FlagsEnv: variant.v8FlagsEnv } : {}),
          }
        : {}),
      ...expect,
      cached,
      readyS,
      rssMB: status.rssMB,
      peakRssMB: status.hwmMB,
      anonMB: status.anonMB,
    };
  } finally {
    await child.stop();
  }
}

export async function runP3(work: string, cp: ControlPlane, certs: WebhookCertFiles): Promise<P3Result> {
  const targetProjects = Math.round(env('BENCH_WEBHOOK_RSS_PROJECTS', P3_FULL_PROJECTS));
  const budgetS = env('BENCH_WEBHOOK_RSS_BUDGET_S', 600);
  const concurrency = Math.max(1, Math.round(env('BENCH_WEBHOOK_RSS_CONCURRENCY', 50)));
  const settleMs = env('BENCH_WEBHOOK_RSS_SETTLE_S', 10) * 1000;
  const mainJs = compileTenantgate('bench-webhook', 'P3');
  const creator = new Creator(cp.info.kubeconfigs.admin!);
  const phases: P3Result['creation']['phases'] = [];
  const points: RssPoint[] = [];
  const objectsOf = (projects: number) => ({
    projects,
    namespaces: projects * NAMESPACES_PER_PROJECT,
    quotas: projects * NAMESPACES_PER_PROJECT,
  });

  points.push(await measureRss(work, cp, certs, mainJs, objectsOf(0), settleMs));

  // Calibrate the creation rate on the first 2 % of the projects (at least 100), then size the run to the budget.
  const started = nowMs();
  const calibration = Math.min(targetProjects, Math.max(100, Math.round(targetProjects * 0.02)));
  await createRange(creator, 0, calibration, concurrency, phases);
  const perProjectS = (nowMs() - started) / 1000 / calibration;
  const projectedS = perProjectS * targetProjects * 1.15; // rates drop as etcd and the caches grow
  let total = targetProjects;
  if (projectedS > budgetS) {
    total = Math.max(calibration * 2, Math.floor(budgetS / (perProjectS * 1.15) / 100) * 100);
    log(
      `P3: creating ${targetProjects} projects would take ≈ ${Math.round(projectedS)} s (> ${budgetS} s budget); scaling down to ${total} projects and extrapolating`,
    );
  } else {
    log(`P3: projected creation time ≈ ${Math.round(projectedS)} s for ${targetProjects} projects: full scale`);
  }
  const half = Math.max(calibration, Math.round(total / 2));
  await createRange(creator, calibration, half, concurrency, phases);
  const halfS = (nowMs() - started) / 1000;
  points.push(await measureRss(work, cp, certs, mainJs, objectsOf(half), settleMs));
  const resumed = nowMs();
  await createRange(creator, half, total, concurrency, phases);
  const creationS = halfS + (nowMs() - resumed) / 1000;
  points.push(await measureRss(work, cp, certs, mainJs, objectsOf(total), settleMs));
  const variants: RssPoint[] = [];
  if (process.env.BENCH_WEBHOOK_RSS_VARIANTS !== '0')
    for (const v of RSS_VARIANTS)
      variants.push(await measureRss(work, cp, certs, mainJs, objectsOf(total), settleMs, v));

  const objectJson = await sampleObjectSizes(cp.info.kubeconfigs.admin!);
  // Linear model over the two loaded points (½ and all): RSS = base + slope × projects (each with 5 namespaces, 5 quotas).
  const a = points[1]!;
  const b = points[2]!;
  const slope = b.projects > a.projects ? (b.rssMB - a.rssMB) / (b.projects - a.projects) : 0;
  const base = b.rssMB - slope * b.projects;
  const fullScaleMeasured = total >= P3_FULL_PROJECTS;
  const fullScaleMB = fullScaleMeasured ? b.rssMB : round1(base + slope * P3_FULL_PROJECTS);
  return {
    targetProjects,
    scale: round3(total / P3_FULL_PROJECTS),
    scaledDown: total < targetProjects,
    creation: {
      objects: creator.objects,
      seconds: round1(creationS),
      perSecond: Math.round(creator.objects / creationS),
      retries: creator.retries,
      phases,
    },
    points,
    variants,
    perProjectKB: round1(slope * 1024),
    baseMB: round1(base),
    fullScaleMB,
    fullScaleMeasured,
    met: fullScaleMB < TARGET_RSS_MB,
    objectJson,
  };
}

export async function sampleObjectSizes(kubeconfig: string): Promise<P3Result['objectJson']> {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(kubeconfig);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const measure = (items: Array<{ metadata?: { managedFields?: unknown } }>) => {
    let bytes = 0;
    let mf = 0;
    for (const item of items) {
      bytes += Buffer.byteLength(JSON.stringify(item));
      mf += Buffer.byteLength(JSON.stringify(item.metadata?.managedFields ?? []));
    }
    return {
      sampled: items.length,
      bytes: Math.round(bytes / Math.max(1, items.length)),
      managedFieldsBytes: Math.round(mf / Math.max(1, items.length)),
    };
  };
  const namespaces = await core.listNamespace({ limit: 500, labelSelector: 'app.kubernetes.io/managed-by=tenantgate' });
  const quotas = await core.listResourceQuotaForAllNamespaces({ limit: 500 });
  const projects = (await custom.listClusterCustomObject({
    group: 'tenantgate.io',
    version: 'v1alpha1',
    plural: 'projects',
    limit: 500,
  })) as { items: Array<{ metadata?: { managedFields?: unknown } }> };
  return {
    project: measure(projects.items),
    namespace: measure(namespaces.items),
    resourceQuota: measure(quotas.items),
  };
}

// ---------------------------------------------------------------------------------------------
// main
// ---------------------------------------------------------------------------------------------

export function cachedCount(p: RssPoint, kind: 'Project' | 'Namespace' | 'ResourceQuota'): string {
  const alias = { Project: 'projects', Namespace: 'namespaces', ResourceQuota: 'quotas' }[kind];
  return String(p.cached[kind] ?? p.cached[alias] ?? '-');
}
