/**
 * The budget promise under fire, with real processes: three `tenantgate webhook` replicas (dist/, the
 * shipped configuration: ledger on) behind a round-robin proxy registered with the real apiserver, the
 * controller under its ServiceAccount, one project budgeted in CPU and memory with real pods using
 * part of it, and two owners racing N writes at a fixed concurrency: namespace creates and deletes,
 * quota writes that grow and shrink both resources at once, pairs of writes at one stale
 * resourceVersion, quota deletes. A third of the way in one replica is SIGKILLed and restarted (what
 * every replica had served until then is read just before the kill); half-way the project's ledger ConfigMap is deleted by an admin. Every `sampleIntervalMs` a sampler
 * reads the namespaces and, at that same resourceVersion, the ResourceQuotas, and checks the promise
 * (invariant.ts). Shared by test/e2e/headroom-replicas.test.ts and bench/targets/replicas.ts.
 */
import * as k8s from '@kubernetes/client-node';
import pLimit from 'p-limit';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { generateWebhookCerts } from '../../../src/certs/files.js';
import { DEFAULT_CONFIG, type TenantgateConfig } from '../../../src/config/config.js';
import type { RunningController } from '../../../src/controller/start.js';
import { loadKubeConfig } from '../../../src/kube/kubeconfig.js';
import { OWNERS_BINDING_NAME } from '../../../src/render/owner-binding.js';
import { Quantity } from '../../../src/quantity/quantity.js';
import { DEFAULT_QUOTA_NAME, LEDGER_PREFIX } from '../../../src/validate/types.js';
import { startTestController } from '../controller-kit.js';
import { confirmDeletions } from '../leftovers.js';
import type { ClusterInfo } from '../devcluster/controlplane.js';
import { startWebhookReplicas, type WebhookReplicas } from '../devcluster/replicas.js';
import { installBase, kubectlAs, serviceAccountKubeConfig } from '../devcluster/tenantgate.js';
import {
  classifyOutcome,
  countOutcome,
  emptyCounts,
  generateAttempts,
  type Attempt,
  type Hard,
  type Outcome,
  type OutcomeCounts,
} from './attempts.js';
import { checkHeadroomInvariant, type InvariantSample, type BudgetProject } from '../budget-invariant.js';

export interface ReplicaRaceOptions {
  info: ClusterInfo;
  /** The project's name: unique on the cluster, its prefix overlapping no other project's (N4). */
  project: string;
  attempts: number;
  concurrency?: number;
  seed?: number;
  replicas?: number;
  sampleIntervalMs?: number;
  /** The replicas' tenantgate.yaml; the shipped defaults (ledger on) when absent. */
  config?: Partial<TenantgateConfig>;
  log?: (line: string) => void;
}

interface TimedEvent {
  /** Writes that had completed when it happened. */
  afterCompleted: number;
  atMs: number;
}

export interface ReplicaRaceResult {
  project: string;
  seed: number;
  attempts: number;
  concurrency: number;
  counts: OutcomeCounts;
  samples: number;
  /** Samples that could not be read (the check was skipped for them, never passed). */
  sampleErrors: string[];
  violations: Array<{ atMs: number; sample: InvariantSample; quotas: unknown[] }>;
  /** The largest Σ held per resource and the most live namespaces any sample saw. */
  peak: { held: Record<string, string>; liveNamespaces: number };
  budget: BudgetProject;
  /** servedBeforeKill: per replica, validate requests it had answered just before the kill (every replica since its start). */
  kill: TimedEvent & { replica: number; signal: string | null; servedBeforeKill: number[]; restarted?: TimedEvent };
  ledgerDeletion: TimedEvent & { status: number; deletionTimestamp?: string; finalizers?: string[] };
  /** Per replica, validate requests it answered (the restarted one: since its restart). */
  requestsPerReplica: number[];
  wallMs: number;
  loadAverage: { start: number[]; end: number[] };
}

const TENANT = 'acme';
const USERS: [string, string] = ['alice', 'bob'];
const CPU = 'requests.cpu';
const MEMORY = 'requests.memory';
/** The validate reviews a replica answered (its /metrics). */
const VALIDATE_REQUESTS = /^tenantgate_webhook_requests_total\{path="validate"/;

/** A project-wide burst active from an hour ago for six hours: the whole race runs inside it. */
export function activeBurst(name: string, hard: Record<string, string>, now = Date.now()) {
  const at = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.000Z$/, 'Z');
  return {
    name,
    from: at(now - 3_600_000),
    until: at(now + 6 * 3_600_000),
    reason: 'the race runs with a burst active',
    quota: { hard },
  };
}

/** The project every run uses, apart from its name: room for 8 CPUs, 16Gi and 6 namespaces (10 CPUs and 20Gi with its burst). */
function raceProject(name: string): BudgetProject {
  // A burst active through the race (+2 CPU, +4Gi): the replicas decide against budget + burst, and the
  // invariant checks exactly that sum.
  return {
    name,
    budget: { [CPU]: '8', [MEMORY]: '16Gi' },
    defaults: { [CPU]: '1', [MEMORY]: '2Gi' },
    maxNamespaces: 6,
    burst: { [CPU]: '2', [MEMORY]: '4Gi' },
  };
}

/** Anchors: two namespaces made before the race, each with a 2 CPU / 4Gi quota and pods using part of it. */
const ANCHOR_HARD: Hard = { [CPU]: '2', [MEMORY]: '4Gi' };
const ANCHOR_PODS = [3, 2];
const POD_REQUESTS = { cpu: '500m', memory: '1Gi' };

interface ApiError {
  status: number;
  message: string;
}

export function apiError(err: unknown): ApiError {
  const e = err as { code?: unknown; body?: unknown; message?: unknown };
  const status = typeof e?.code === 'number' ? e.code : 0;
  let message = typeof e?.message === 'string' ? e.message : String(err);
  if (e?.body && typeof e.body === 'object' && typeof (e.body as { message?: unknown }).message === 'string')
    message = (e.body as { message: string }).message;
  else if (typeof e?.body === 'string') {
    try {
      message = (JSON.parse(e.body) as { message?: string }).message ?? e.body;
    } catch {
      message = e.body;
    }
  }
  return { status, message };
}

async function outcomeOf(call: Promise<unknown>): Promise<Outcome> {
  try {
    await call;
    return classifyOutcome(200, '');
  } catch (err) {
    const { status, message } = apiError(err);
    return classifyOutcome(status, message);
  }
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function until<T>(what: string, fn: () => Promise<T>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > deadline)
        throw new Error(`${what} not reached within ${timeoutMs} ms: ${apiError(err).message}`);
      await sleep(250);
    }
  }
}

export function must(ok: boolean, what: string): void {
  if (!ok) throw new Error(what);
}

/** One consistent view: the namespaces, then the ResourceQuotas at exactly the namespaces' resourceVersion. */
export async function readConsistent(
  admin: k8s.CoreV1Api,
): Promise<{ resourceVersion: string; namespaces: k8s.V1Namespace[]; quotas: k8s.V1ResourceQuota[] }> {
  const namespaces = await admin.listNamespace();
  const resourceVersion = namespaces.metadata?.resourceVersion ?? '';
  if (!resourceVersion) throw new Error('namespace LIST without a resourceVersion');
  const quotas = await admin.listResourceQuotaForAllNamespaces({ resourceVersion, resourceVersionMatch: 'Exact' });
  if (quotas.metadata?.resourceVersion !== resourceVersion)
    throw new Error(`quota LIST at ${quotas.metadata?.resourceVersion ?? '?'}, not at ${resourceVersion}`);
  return { resourceVersion, namespaces: namespaces.items, quotas: quotas.items };
}

export async function runReplicaRace(options: ReplicaRaceOptions): Promise<ReplicaRaceResult> {
  const { info, project: name, attempts: count } = options;
  const concurrency = options.concurrency ?? 16;
  const seed = options.seed ?? Date.now() % 1_000_000;
  const log = options.log ?? (() => {});
  const project = raceProject(name);
  const kc = (user: string) => loadKubeConfig(info.kubeconfigs[user]!);
  const core = Object.fromEntries(['admin', ...USERS].map((u) => [u, kc(u).makeApiClient(k8s.CoreV1Api)])) as Record<
    string,
    k8s.CoreV1Api
  >;
  const admin = core.admin!;
  const rbac = kc('admin').makeApiClient(k8s.RbacAuthorizationV1Api);
  const loadStart = loadavg();

  await installBase(info);
  const certs = await generateWebhookCerts(join(info.dir, `${name}-certs`));
  let webhooks: WebhookReplicas | undefined;
  let controller: RunningController | undefined;
  try {
    webhooks = await startWebhookReplicas(info, certs, options.config ?? {}, {
      count: options.replicas ?? 3,
      name: `${name}-webhook`,
    });
    controller = await startTestController({
      kubeConfig: await serviceAccountKubeConfig(info, DEFAULT_CONFIG.systemNamespace, 'tenantgate-controller'),
    });
    const hooks = webhooks;
    const running = controller;

    // The project, owned by both racing users, seen by every replica and by the controller.
    const spec = {
      tenant: TENANT,
      owners: USERS.map((u) => ({ kind: 'User', name: u })),
      maxNamespaces: project.maxNamespaces,
      quota: { hard: project.budget },
      namespaceDefaults: { quota: { hard: project.defaults } },
      ...(project.burst ? { bursts: [activeBurst('race-burst', project.burst)] } : {}),
    };
    await kubectlAs(
      info,
      'admin',
      ['apply', '-f', '-'],
      JSON.stringify({ apiVersion: 'tenantgate.io/v1alpha1', kind: 'Project', metadata: { name }, spec }),
    );
    await until('the project in every replica and the controller', async () => {
      must(running.informers.snapshot.project(name) !== undefined, 'controller has not seen the project');
      const projects = (await kubectlAs(info, 'admin', ['get', 'projects', '-o', 'name'])).stdout
        .trim()
        .split('\n').length;
      const seen = await hooks.scrape(/^tenantgate_webhook_cache_objects\{kind="Project"\}/);
      must(
        seen.every((n) => n === projects),
        `replicas see ${seen.join('/')} projects, the apiserver has ${projects}`,
      );
    });

    // The anchors: made by an owner, given their default quota and owners' binding by the controller,
    // raised to 2 CPU / 4Gi, and filled with pods (counted in status.used by the quota controller).
    const anchors = ANCHOR_PODS.map((_, i) => `${name}-a${i}`);
    for (const [i, ns] of anchors.entries()) {
      await core[USERS[i % 2]!]!.createNamespace({ body: { metadata: { name: ns } } });
      await until(`${ns}: owners' binding, default quota, default ServiceAccount`, async () => {
        await rbac.readNamespacedRoleBinding({ name: OWNERS_BINDING_NAME, namespace: ns });
        await admin.readNamespacedResourceQuota({ name: DEFAULT_QUOTA_NAME, namespace: ns });
        await admin.readNamespacedServiceAccount({ name: 'default', namespace: ns });
      });
      await until(`${ns}: quota raised to ${JSON.stringify(ANCHOR_HARD)}`, async () => {
        const q = await core[USERS[0]]!.readNamespacedResourceQuota({ name: DEFAULT_QUOTA_NAME, namespace: ns });
        await core[USERS[0]]!.replaceNamespacedResourceQuota({
          name: DEFAULT_QUOTA_NAME,
          namespace: ns,
          body: {
            metadata: { name: DEFAULT_QUOTA_NAME, resourceVersion: q.metadata!.resourceVersion! },
            spec: { hard: ANCHOR_HARD },
          },
        });
      });
      await until(`${ns}: quota status.hard shows the raise`, async () => {
        const q = await admin.readNamespacedResourceQuota({ name: DEFAULT_QUOTA_NAME, namespace: ns });
        must(q.status?.hard?.[CPU] === ANCHOR_HARD[CPU], `status.hard is ${JSON.stringify(q.status?.hard)}`);
      });
      for (let p = 0; p < ANCHOR_PODS[i]!; p++) {
        await core[USERS[1]]!.createNamespacedPod({
          namespace: ns,
          body: {
            metadata: { name: `load-${p}` },
            spec: {
              containers: [
                { name: 'pause', image: 'registry.k8s.io/pause:3.10', resources: { requests: POD_REQUESTS } },
              ],
            },
          },
        });
      }
    }
    // One more name than fits next to the anchors (maxNamespaces 6): creates race for the last place.
    const pool = Array.from({ length: 5 }, (_, i) => `${name}-n${i}`);
    const plan = {
      users: USERS,
      anchors,
      pool,
      quotaNames: [DEFAULT_QUOTA_NAME, 'extra'],
      values: {
        [CPU]: ['500m', '1', '1500m', '2', '2500m', '3'],
        [MEMORY]: ['1Gi', '2Gi', '3Gi', '4Gi', '5Gi', '6Gi'],
      },
    };
    const attempts = generateAttempts(plan, count, seed);
    log(
      `${name}: seed ${seed}, ${count} attempts, concurrency ${concurrency}, ${hooks.replicas.length} replicas; pods use ${anchors.map((a, i) => `${a} ${ANCHOR_PODS[i]}×${POD_REQUESTS.cpu}/${POD_REQUESTS.memory}`).join(', ')}`,
    );

    // The sampler.
    const samples: InvariantSample[] = [];
    const sampleErrors: string[] = [];
    const violations: ReplicaRaceResult['violations'] = [];
    const peak = { held: {} as Record<string, string>, liveNamespaces: 0 };
    const started = performance.now();
    let sampling = true;
    const sampleOnce = async () => {
      try {
        const view = await readConsistent(admin);
        const sample = checkHeadroomInvariant(project, view.namespaces, view.quotas, view.resourceVersion);
        samples.push(sample);
        peak.liveNamespaces = Math.max(peak.liveNamespaces, sample.liveNamespaces);
        for (const [r, v] of Object.entries(sample.held))
          if (!peak.held[r] || compareQuantity(v, peak.held[r]!) > 0) peak.held[r] = v;
        if (sample.violations.length > 0) {
          const mine = view.quotas
            .filter((q) => sample.detail[q.metadata?.namespace ?? ''] !== undefined)
            .map((q) => ({
              namespace: q.metadata?.namespace,
              name: q.metadata?.name,
              spec: q.spec?.hard,
              status: q.status,
            }));
          violations.push({ atMs: Math.round(performance.now() - started), sample, quotas: mine });
          log(
            `${name}: VIOLATION at rv ${sample.resourceVersion}: ${sample.violations.join('; ')}\n${JSON.stringify(sample.detail)}`,
          );
        }
      } catch (err) {
        sampleErrors.push(apiError(err).message.slice(0, 200));
      }
    };
    const sampler = (async () => {
      while (sampling) {
        const t = performance.now();
        await sampleOnce();
        await sleep(Math.max(0, (options.sampleIntervalMs ?? 200) - (performance.now() - t)));
      }
    })();

    // The attempts, with the replica kill a third of the way in and the ledger deletion half-way.
    const counts = emptyCounts();
    let completed = 0;
    const killAt = Math.floor(count / 3);
    const ledgerAt = Math.floor(count / 2);
    const victim = 1;
    let kill: ReplicaRaceResult['kill'] | undefined;
    let restarting: Promise<void> | undefined;
    let ledgerDeletion: ReplicaRaceResult['ledgerDeletion'] | undefined;
    let deleting: Promise<void> | undefined;
    const now = () => Math.round(performance.now() - started);
    const onCompleted = () => {
      completed += 1;
      if (completed === killAt) {
        const proc = hooks.replicas[victim]!.process;
        restarting = (async () => {
          // What each replica served so far, read just before the kill (afterwards the victim's counters start again).
          const servedBeforeKill = await hooks.scrape(VALIDATE_REQUESTS);
          proc.kill('SIGKILL');
          const event: ReplicaRaceResult['kill'] = {
            replica: victim,
            signal: null,
            servedBeforeKill,
            afterCompleted: completed,
            atMs: now(),
          };
          kill = event;
          event.signal = (await proc.exited).signal;
          await hooks.restart(victim);
          event.restarted = { afterCompleted: completed, atMs: now() };
          log(
            `${name}: replica ${victim} SIGKILLed after ${event.afterCompleted} attempts (validate requests per replica until then ${servedBeforeKill.join('/')}), ready again after ${completed}`,
          );
        })();
      }
      if (completed === ledgerAt) {
        const at = { afterCompleted: completed, atMs: now() };
        deleting = (async () => {
          const ledger = `${LEDGER_PREFIX}${name}`;
          try {
            await admin.deleteNamespacedConfigMap({ name: ledger, namespace: DEFAULT_CONFIG.systemNamespace });
            ledgerDeletion = { ...at, status: 200 };
            // Gone, or only marked for deletion while a finalizer holds it.
            const left = await admin
              .readNamespacedConfigMap({ name: ledger, namespace: DEFAULT_CONFIG.systemNamespace })
              .catch(() => undefined);
            if (left?.metadata?.deletionTimestamp)
              ledgerDeletion = {
                ...ledgerDeletion,
                deletionTimestamp: new Date(left.metadata.deletionTimestamp).toISOString(),
                finalizers: left.metadata.finalizers ?? [],
              };
          } catch (err) {
            ledgerDeletion = { ...at, status: apiError(err).status };
          }
          log(
            `${name}: ledger ${ledger} deleted after ${at.afterCompleted} attempts: HTTP ${ledgerDeletion.status}${ledgerDeletion.finalizers ? `, held by the finalizers ${ledgerDeletion.finalizers.join(', ')}` : ', gone'}`,
          );
        })();
      }
    };
    const run = (a: Attempt) => sendAttempt(core, counts, a);
    const limit = pLimit(concurrency);
    await Promise.all(
      attempts.map((a) =>
        limit(async () => {
          await run(a);
          onCompleted();
        }),
      ),
    );
    await restarting;
    await deleting;
    const wallMs = now();
    // The stored state after the last answer, once the quota controller caught up.
    await sleep(2000);
    sampling = false;
    await sampler;
    await sampleOnce();
    const requestsPerReplica = await hooks.scrape(VALIDATE_REQUESTS);
    log(
      `${name}: ${counts.writes} writes in ${wallMs} ms: admitted ${counts.admitted}, refused ${JSON.stringify(counts.refused)}, fail-closed ${JSON.stringify(counts.failClosed)}, other ${JSON.stringify(counts.other)}; ${samples.length} samples (${sampleErrors.length} unreadable), ${violations.length} violations; peak ${JSON.stringify(peak)}`,
    );
    if (!kill || !ledgerDeletion)
      throw new Error(
        `the run ended before its events: kill ${JSON.stringify(kill)}, ledger deletion ${JSON.stringify(ledgerDeletion)}`,
      );
    return {
      project: name,
      seed,
      attempts: count,
      concurrency,
      counts,
      samples: samples.length,
      sampleErrors,
      violations,
      peak,
      budget: project,
      kill,
      ledgerDeletion,
      requestsPerReplica,
      wallMs,
      loadAverage: { start: loadStart, end: loadavg() },
    };
  } finally {
    // Other test files on the shared cluster count the projects alice and bob own: the project goes,
    // its namespaces by the controller's cascade (still running), before anything stops.
    if (controller) await removeProject(info, name, log);
    await controller?.stop();
    await webhooks?.stop();
  }
}

/** Sends one attempt as its user and counts the answer (a quota write reads the quota first, as a tenant's tool would). */
export async function sendAttempt(
  core: Record<string, k8s.CoreV1Api>,
  counts: OutcomeCounts,
  a: Attempt,
): Promise<void> {
  const write = async (call: () => Promise<unknown>) => countOutcome(counts, await outcomeOf(call()));
  switch (a.kind) {
    case 'namespace-create':
      return write(() => core[a.user]!.createNamespace({ body: { metadata: { name: a.namespace } } }));
    case 'namespace-delete':
      return write(() => core[a.user]!.deleteNamespace({ name: a.namespace }));
    case 'quota-delete':
      return write(() => core[a.user]!.deleteNamespacedResourceQuota({ name: a.quota, namespace: a.namespace }));
    case 'quota-write':
    case 'quota-write-pair': {
      const users = a.kind === 'quota-write' ? [a.user] : a.users;
      const hards = a.kind === 'quota-write' ? [a.hard] : a.hards;
      let resourceVersion: string | undefined;
      try {
        resourceVersion = (
          await core[users[0]!]!.readNamespacedResourceQuota({ name: a.quota, namespace: a.namespace })
        ).metadata?.resourceVersion;
      } catch (err) {
        const e = apiError(err);
        // Absent: the write is a create. Anything else (the namespace is not readable yet) is its outcome.
        if (e.status !== 404) return countOutcome(counts, classifyOutcome(e.status, e.message));
      }
      // A pair sends both writes at the one resourceVersion read: at most one can be stored.
      await Promise.all(
        users.map((user, k) =>
          write(() => {
            const body = {
              metadata: { name: a.quota, ...(resourceVersion ? { resourceVersion } : {}) },
              spec: { hard: hards[k]! },
            };
            return resourceVersion
              ? core[user]!.replaceNamespacedResourceQuota({ name: a.quota, namespace: a.namespace, body })
              : core[user]!.createNamespacedResourceQuota({ namespace: a.namespace, body });
          }),
        ),
      );
    }
  }
}

/**
 * Deletes the Project and waits (at most 90 s) until the controller's cascade removed it; a failure is only logged
 * (cleanup). The race's namespaces hold quotas tenants wrote, which the cascade deletes only once a platform admin
 * confirmed it (docs/deletion.md): confirmed first, as admin, with the Project's uid.
 */
export async function removeProject(info: ClusterInfo, name: string, log: (line: string) => void): Promise<void> {
  try {
    await confirmDeletions([name], (user, args) => kubectlAs(info, user, args));
    await kubectlAs(info, 'admin', ['delete', 'project', name, '--ignore-not-found', '--wait=false']);
    await until(
      `project ${name} and its namespaces gone`,
      async () => {
        const left = (
          await kubectlAs(info, 'admin', ['get', 'project', name, '--ignore-not-found', '-o', 'name'])
        ).stdout.trim();
        must(left === '', `${left} is still there`);
      },
      90_000,
    );
  } catch (err) {
    log(`cleanup: ${err instanceof Error ? err.message : String(err)}`);
  }
}

function compareQuantity(a: string, b: string): number {
  return Quantity.parse(a).cmp(Quantity.parse(b));
}
