/**
 * One fleet budget under fire, with real processes on three real control planes: a hub (the chart's
 * hub mode: the FleetBudget CRD, the members' ServiceAccounts and RBAC, the admission policy
 * tenantgate-fleet-shares) and two member clusters, each with two `tenantgate webhook` replicas (dist/,
 * the shipped configuration: ledger on, client auth on) behind a round-robin proxy and the controller.
 * One Project with a fleet budget is declared on both members and its FleetBudget on the hub; owners race
 * N writes spread over both members (namespace creates and deletes, quota writes that grow and shrink,
 * stale pairs, quota deletes). A third of the way in the hub's kube-apiserver is restarted; half-way one
 * member's webhook replica is SIGKILLed and started again (what every replica had served until then is
 * read just before the kill). Every `sampleIntervalMs` a sampler reads each
 * member's namespaces and quotas (one consistent LIST pair per member, both members at once) and then the
 * hub's FleetBudget, and checks:
 *  - per member, Σ held by the project's namespaces ≤ that member's share on the hub (read after);
 *  - across the fleet, Σ held ≤ the fleet budget.
 * The members' reads are not one snapshot of the fleet. The check is still sound (it never reports a
 * breach that did not happen) because the run keeps the members' give-back and offer timers longer
 * than the run: shares only grow, so a share read after a member's LIST bounds what that LIST showed.
 *
 * Shared by test/e2e/fleet-race.test.ts (a few hundred attempts) and bench/targets/fleet.ts (10,000).
 */
import { processNow } from '../../../src/clock.js';
import * as k8s from '@kubernetes/client-node';
import pLimit from 'p-limit';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { generateWebhookCerts } from '../../../src/certs/files.js';
import { DEFAULT_CONFIG, type TenantgateConfig } from '../../../src/config/config.js';
import type { RunningController } from '../../../src/controller/start.js';
import {
  FLEET_FINALIZER,
  FLEET_NAMESPACE,
  fleetBudgetFor,
  parseFleetBudget,
  type FleetBudgetObject,
} from '../../../src/fleet/fleet-budget-object.js';
import type { ShareRecord } from '../../../src/fleet/shares.js';
import { loadKubeConfig } from '../../../src/kube/kubeconfig.js';
import { Quantity } from '../../../src/quantity/quantity.js';
import { OWNERS_BINDING_NAME } from '../../../src/render/owner-binding.js';
import type { Project } from '../../../src/validate/types.js';
import { DEFAULT_QUOTA_NAME, LEDGER_PREFIX } from '../../../src/validate/types.js';
import { formatResources } from '../../../src/validate/resource-lists.js';
import { startTestController } from '../controller-kit.js';
import { applyChartTemplates } from '../view.js';
import { installFleetHub } from '../fleet-hub-install.js';
import type { ControlPlane, ClusterInfo } from '../devcluster/controlplane.js';
import { startWebhookReplicas, type WebhookReplicas } from '../devcluster/replicas.js';
import {
  installBase,
  kubectlAs,
  serviceAccountKubeConfig,
  serviceAccountKubeconfigFile,
} from '../devcluster/tenantgate.js';
import { activeBurst } from '../replica-race/run.js';
import { emptyCounts, generateAttempts, type Attempt, type OutcomeCounts } from '../replica-race/attempts.js';
import { checkHeadroomInvariant, type BudgetProject } from '../budget-invariant.js';
import { measureTransfers, transferProject, type TransferCosts } from './transfers.js';
import { apiError, must, readConsistent, sendAttempt, until } from '../replica-race/run.js';

const CPU = 'requests.cpu';
const MEMORY = 'requests.memory';
const USERS: [string, string] = ['alice', 'bob'];

interface FleetMemberCluster {
  name: string;
  info: ClusterInfo;
}

export interface FleetRaceOptions {
  hub: ControlPlane;
  members: [FleetMemberCluster, FleetMemberCluster];
  project: string;
  attempts: number;
  concurrency?: number;
  seed?: number;
  /** Webhook replicas per member (2, as shipped). */
  replicas?: number;
  sampleIntervalMs?: number;
  /** Before the race, measure what a transfer costs on a second Project (transfers.ts). */
  measureTransferCosts?: boolean;
  log?: (line: string) => void;
}

interface FleetSample {
  atMs: number;
  /** Per member, Σ held per fleet-budgeted resource. */
  held: Record<string, Record<string, string>>;
  /** Per member, its share on the hub (read after the members' LISTs). */
  shares: Record<string, Record<string, string>>;
  violations: string[];
  /**
   * For a sample with a violation: per member, what each namespace holds and why, the quotas summed, E
   * (read after the sample) and its entry on the hub.
   */
  detail?: Record<
    string,
    { namespaces: Record<string, Record<string, string>>; quotas: unknown[]; enforced?: string; hubEntry?: unknown }
  >;
}

export interface FleetRaceResult {
  project: string;
  seed: number;
  attempts: number;
  concurrency: number;
  fleetBudget: Record<string, string>;
  /** Per member, the answers its users got. */
  counts: Record<string, OutcomeCounts>;
  samples: number;
  /** Samples whose members' LISTs failed (skipped, never passed). */
  sampleErrors: string[];
  /** Samples taken while the hub could not be read (its restart): only the fleet's Σ was checked. */
  hubUnread: number;
  violations: FleetSample[];
  /** The largest Σ held across the fleet any sample saw, per resource, and the shares at the end. */
  peakFleetHeld: Record<string, string>;
  finalShares: Record<string, Record<string, string>>;
  hubRestart: { afterCompleted: number; atMs: number; readyAfterMs: number };
  /** servedBeforeKill: per member and replica, validate requests answered just before the kill (every replica since its start). */
  webhookKill: {
    member: string;
    replica: number;
    afterCompleted: number;
    atMs: number;
    servedBeforeKill: Record<string, number[]>;
    restartedAfterCompleted?: number;
  };
  /** Successful writes of fleetbudgets/status during the race, as the hub's apiserver counted them (its /metrics, summed over its restart). */
  hubStatusWrites: number;
  /** Per member and replica, the product's own fleet metrics at the end (the killed replica: since its restart). */
  memberMetrics: Record<string, Record<string, number[]>>;
  /** When asked for (measureTransferCosts). */
  transferCosts?: TransferCosts;
  wallMs: number;
  loadAverage: { start: number[]; end: number[] };
}

/**
 * The project on every member: a fleet budget of 6 CPUs / 12Gi shared by both, each member bounded by
 * the whole of it, and a project-wide burst (+2 CPU, +4Gi) active through the race: it raises each
 * member's bound, never the fleet budget or a member's share, which is what the sampler checks.
 */
function fleetRaceProject(name: string, members: readonly string[]): Project {
  const budget = { [CPU]: '6', [MEMORY]: '12Gi' };
  return {
    apiVersion: 'tenantgate.io/v1alpha1',
    kind: 'Project',
    metadata: { name },
    spec: {
      tenant: 'acme',
      owners: USERS.map((u) => ({ kind: 'User', name: u })),
      maxNamespaces: 5,
      quota: { hard: budget },
      fleet: { quota: { hard: budget }, clusters: [...members] },
      namespaceDefaults: { quota: { hard: { [CPU]: '500m', [MEMORY]: '1Gi' } } },
      bursts: [activeBurst('race-burst', { [CPU]: '2', [MEMORY]: '4Gi' })],
    },
  };
}

/** The fleet's member settings: asks for a chunk of 1 CPU / 2Gi beyond a growth's need; give-back and offers after the run. */
function fleetMemberConfig(cluster: string, hubKubeconfig: string): Partial<TenantgateConfig> {
  return {
    clusterName: cluster,
    fleet: {
      ...DEFAULT_CONFIG.fleet,
      hubKubeconfig,
      keep: { [CPU]: '1', [MEMORY]: '2Gi' },
      above: { [CPU]: '2', [MEMORY]: '4Gi' },
      offerAfterSeconds: 3600,
      giveBackAfterSeconds: 7200,
      checkEverySeconds: 30,
    },
  };
}

async function readFleetBudget(hub: k8s.CustomObjectsApi, name: string): Promise<FleetBudgetObject> {
  return (await hub.getNamespacedCustomObject({
    group: 'tenantgate.io',
    version: 'v1alpha1',
    namespace: FLEET_NAMESPACE,
    plural: 'fleetbudgets',
    name,
  })) as FleetBudgetObject;
}

/** Successful status writes of fleetbudgets counted by the hub's apiserver since it started. */
async function hubStatusWrites(hub: ControlPlane): Promise<number> {
  const { status, body } = await hub.get('/metrics');
  if (status !== 200) throw new Error(`hub /metrics: HTTP ${status}`);
  let total = 0;
  for (const line of body.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    if (
      !/resource="fleetbudgets"/.test(line) ||
      !/subresource="status"/.test(line) ||
      !/verb="(PUT|UPDATE)"/.test(line) ||
      !/code="200"/.test(line)
    )
      continue;
    total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

const q = (raw: string | undefined) => Quantity.parse(raw ?? '0');

export async function runFleetRace(options: FleetRaceOptions): Promise<FleetRaceResult> {
  const { hub, project: name, attempts: count } = options;
  const members = options.members;
  const memberNames = members.map((m) => m.name);
  const concurrency = options.concurrency ?? 16;
  const seed = options.seed ?? Date.now() % 1_000_000;
  const log = options.log ?? (() => {});
  const loadStart = loadavg();
  const project = fleetRaceProject(name, memberNames);
  const budget = project.spec.fleet!.quota!.hard! as Record<string, string>;
  const race: BudgetProject = {
    name,
    budget,
    defaults: project.spec.namespaceDefaults!.quota!.hard! as Record<string, string>,
    maxNamespaces: project.spec.maxNamespaces!,
  };
  const hubApi = loadKubeConfig(hub.info.kubeconfigs.admin!).makeApiClient(k8s.CustomObjectsApi);

  await installFleetHub(hub.info, memberNames);
  const fleetBudget = fleetBudgetFor(project, processNow())!;
  fleetBudget.metadata.finalizers = [FLEET_FINALIZER];
  await kubectlAs(hub.info, 'admin', ['apply', '-f', '-'], JSON.stringify(fleetBudget));

  const started: Array<{
    member: FleetMemberCluster;
    webhooks: WebhookReplicas;
    controller: RunningController;
    core: Record<string, k8s.CoreV1Api>;
    applyProject: (p: Project) => Promise<void>;
  }> = [];
  try {
    for (const member of members) {
      await installBase(member.info);
      // The chart's controller RBAC in member mode (its give-back loop lowers E in the headroom ledger).
      await applyChartTemplates(member.info, ['controller/rbac.yaml'], [`fleet.member.cluster=${member.name}`]);
      const hubKubeconfig = await serviceAccountKubeconfigFile(hub.info, FLEET_NAMESPACE, `member-${member.name}`);
      const config = fleetMemberConfig(member.name, hubKubeconfig);
      const certs = await generateWebhookCerts(join(member.info.dir, `${name}-certs`));
      const webhooks = await startWebhookReplicas(member.info, certs, config, {
        count: options.replicas ?? 2,
        name: `${name}-webhook`,
      });
      const controller = await startTestController({
        kubeConfig: await serviceAccountKubeConfig(
          member.info,
          DEFAULT_CONFIG.systemNamespace,
          'tenantgate-controller',
        ),
        config: {
          ...DEFAULT_CONFIG,
          resyncPeriodSeconds: 30,
          ...config,
          fleet: { ...DEFAULT_CONFIG.fleet, ...config.fleet },
        },
      });
      const kc = (user: string) => loadKubeConfig(member.info.kubeconfigs[user]!);
      const core = Object.fromEntries(
        ['admin', ...USERS].map((u) => [u, kc(u).makeApiClient(k8s.CoreV1Api)]),
      ) as Record<string, k8s.CoreV1Api>;
      const applyProject = async (p: Project) => {
        const projectName = p.metadata.name!;
        await kubectlAs(member.info, 'admin', ['apply', '-f', '-'], JSON.stringify(p));
        await until(`${member.name}: project ${projectName} in every replica and the controller`, async () => {
          must(controller.informers.snapshot.project(projectName) !== undefined, 'controller has not seen the project');
          const projects = (await kubectlAs(member.info, 'admin', ['get', 'projects', '-o', 'name'])).stdout
            .trim()
            .split('\n').length;
          const seen = await webhooks.scrape(/^tenantgate_webhook_cache_objects\{kind="Project"\}/);
          must(
            seen.every((n) => n === projects),
            `replicas see ${seen.join('/')} projects, the apiserver has ${projects}`,
          );
        });
      };
      started.push({ member, webhooks, controller, core, applyProject });
      await applyProject(project);
    }

    let transferCosts: TransferCosts | undefined;
    if (options.measureTransferCosts) {
      const costs = transferProject(`${name}lat`, memberNames);
      const costsBudget = fleetBudgetFor(costs, processNow())!;
      costsBudget.metadata.finalizers = [FLEET_FINALIZER];
      await kubectlAs(hub.info, 'admin', ['apply', '-f', '-'], JSON.stringify(costsBudget));
      transferCosts = await measureTransfers(
        started.map((s) => ({ name: s.member.name, core: s.core, webhooks: s.webhooks, applyProject: s.applyProject })),
        costs,
        () => hubStatusWrites(hub),
        log,
      );
    }

    // One anchor namespace per member, made by an owner (its default quota asks the hub for a share),
    // given its quota and owners' binding by the controller, with a pod using part of it.
    const anchors = new Map<string, string>();
    for (const { member, core } of started) {
      const ns = `${name}-a`;
      anchors.set(member.name, ns);
      await until(
        `${member.name}: anchor ${ns} created`,
        () => core.alice!.createNamespace({ body: { metadata: { name: ns } } }),
        60_000,
      );
      // The allow-list parameters come after the binding; without them the pod below is refused (ADR 0095).
      await until(
        `${member.name}/${ns}: owners' binding, default quota, allow-list parameters, default ServiceAccount`,
        async () => {
          await kubectlAs(member.info, 'admin', [
            '-n',
            ns,
            'get',
            `rolebinding/${OWNERS_BINDING_NAME}`,
            `resourcequota/${DEFAULT_QUOTA_NAME}`,
            'allowlist/tenantgate-allow',
            'serviceaccount/default',
          ]);
        },
      );
      await core.bob!.createNamespacedPod({
        namespace: ns,
        body: {
          metadata: { name: 'load-0' },
          spec: {
            containers: [
              {
                name: 'pause',
                image: 'registry.k8s.io/pause:3.10',
                resources: { requests: { cpu: '250m', memory: '512Mi' } },
              },
            ],
          },
        },
      });
    }

    const plans = started.map(({ member }, i) => ({
      member: member.name,
      attempts: generateAttempts(
        {
          users: USERS,
          anchors: [anchors.get(member.name)!],
          pool: Array.from({ length: 5 }, (_, k) => `${name}-n${k}`),
          quotaNames: [DEFAULT_QUOTA_NAME, 'extra'],
          values: {
            [CPU]: ['250m', '500m', '1', '1500m', '2', '3'],
            [MEMORY]: ['512Mi', '1Gi', '2Gi', '3Gi', '4Gi', '6Gi'],
          },
        },
        Math.ceil(count / members.length),
        seed + i,
      ),
    }));
    log(
      `${name}: seed ${seed}, ${count} attempts over ${memberNames.join(' and ')}, concurrency ${concurrency}, ${options.replicas ?? 2} replicas per member; fleet budget ${JSON.stringify(budget)}`,
    );

    const writesAtRaceStart = await hubStatusWrites(hub);
    // The sampler.
    const t0 = performance.now();
    const now = () => Math.round(performance.now() - t0);
    const samples: FleetSample[] = [];
    const sampleErrors: string[] = [];
    const violations: FleetSample[] = [];
    const peakFleetHeld: Record<string, string> = {};
    let lastShares: Record<string, Record<string, string>> = {};
    let hubUnread = 0;
    const sampleOnce = async () => {
      let views: Array<{ member: string; view: Awaited<ReturnType<typeof readConsistent>> }>;
      try {
        views = await Promise.all(
          started.map(async ({ member, core }) => ({ member: member.name, view: await readConsistent(core.admin!) })),
        );
      } catch (err) {
        sampleErrors.push(apiError(err).message.slice(0, 200));
        return;
      }
      // The hub is read after the members; while it is down (its restart) the fleet's Σ is still checked.
      let shares: ShareRecord['shares'] | undefined;
      try {
        const parsed = parseFleetBudget(await readFleetBudget(hubApi, name));
        if (!parsed.ok) throw new Error(`hub: ${parsed.problems.join('; ')}`);
        shares = parsed.record.shares;
      } catch {
        hubUnread += 1;
      }
      const sample: FleetSample = { atMs: now(), held: {}, shares: {}, violations: [] };
      const fleetHeld = new Map<string, Quantity>();
      const details: NonNullable<FleetSample['detail']> = {};
      for (const { member, view } of views) {
        const checked = checkHeadroomInvariant(race, view.namespaces, view.quotas, view.resourceVersion);
        const held = checked.held;
        sample.held[member] = held;
        details[member] = {
          namespaces: checked.detail,
          quotas: view.quotas
            .filter((q) => checked.detail[q.metadata?.namespace ?? ''] !== undefined)
            .map((q) => ({
              namespace: q.metadata?.namespace,
              name: q.metadata?.name,
              spec: q.spec?.hard,
              status: q.status,
            })),
        };
        const share = shares?.get(member)?.share;
        if (shares)
          sample.shares[member] = Object.fromEntries(
            [...(share ?? new Map<string, Quantity>())].map(([r, v]) => [r, v.toString()]),
          );
        for (const resource of Object.keys(budget)) {
          const h = q(held[resource]);
          fleetHeld.set(resource, (fleetHeld.get(resource) ?? Quantity.zero()).add(h));
          if (!shares) continue;
          const s = share?.get(resource) ?? Quantity.zero();
          if (h.cmp(s) > 0)
            sample.violations.push(`${member} holds ${h.toString()} ${resource}, above its share ${s.toString()}`);
        }
      }
      for (const [resource, total] of fleetHeld) {
        if (total.cmp(q(budget[resource])) > 0)
          sample.violations.push(
            `the fleet holds ${total.toString()} ${resource}, above the fleet budget ${budget[resource]}`,
          );
        if (!peakFleetHeld[resource] || total.cmp(q(peakFleetHeld[resource])) > 0)
          peakFleetHeld[resource] = total.toString();
      }
      if (shares) lastShares = sample.shares;
      samples.push(sample);
      if (sample.violations.length > 0) {
        // For the report: what each member enforces (E, its headroom ledger's fleet key, read after the
        // sample) and its whole entry on the hub (share, lendable, last request): held above E is the
        // member's webhook admitting beyond its own limit, E above the share a transfer gone wrong.
        for (const {
          member: { name: member },
          core,
        } of started) {
          const ledger = await core
            .admin!.readNamespacedConfigMap({
              name: `${LEDGER_PREFIX}${name}`,
              namespace: DEFAULT_CONFIG.systemNamespace,
            })
            .then((cm) => cm.data?.fleet ?? '(no fleet key)')
            .catch((err: unknown) => `(unreadable: ${apiError(err).message.slice(0, 100)})`);
          const entry = shares?.get(member);
          details[member] = {
            ...details[member]!,
            enforced: ledger,
            hubEntry: entry
              ? {
                  share: formatResources(entry.share),
                  lendable: formatResources(entry.lendable),
                  lastRequest: entry.lastRequest,
                }
              : '(none)',
          };
        }
        sample.detail = details;
        violations.push(sample);
        log(
          `${name}: VIOLATION at ${sample.atMs} ms: ${sample.violations.join('; ')} (held ${JSON.stringify(sample.held)}, shares ${JSON.stringify(sample.shares)}, enforced ${JSON.stringify(Object.fromEntries(Object.entries(details).map(([m, d]) => [m, { E: d.enforced, hub: d.hubEntry }])))})`,
        );
      }
    };
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const t = performance.now();
        await sampleOnce();
        await new Promise((r) =>
          setTimeout(r, Math.max(0, (options.sampleIntervalMs ?? 200) - (performance.now() - t))),
        );
      }
    })();

    // The attempts, interleaved over the members, with the hub restart a third of the way in and the
    // webhook kill half-way.
    const counts = Object.fromEntries(memberNames.map((m) => [m, emptyCounts()])) as Record<string, OutcomeCounts>;
    const total = plans.reduce((n, p) => n + p.attempts.length, 0);
    const restartAt = Math.floor(total / 3);
    const killAt = Math.floor(total / 2);
    let completed = 0;
    let writesBeforeRestart = 0;
    let hubRestart: FleetRaceResult['hubRestart'] | undefined;
    let restartingHub: Promise<void> | undefined;
    let webhookKill: FleetRaceResult['webhookKill'] | undefined;
    let restartingReplica: Promise<void> | undefined;
    const victim = started[0]!;
    const onCompleted = () => {
      completed += 1;
      if (completed === restartAt) {
        const at = { afterCompleted: completed, atMs: now() };
        restartingHub = (async () => {
          writesBeforeRestart = await hubStatusWrites(hub).catch(() => writesAtRaceStart);
          await hub.restartApiserver();
          hubRestart = { ...at, readyAfterMs: now() - at.atMs };
          log(
            `${name}: hub kube-apiserver restarted after ${at.afterCompleted} attempts (${hubRestart.readyAfterMs} ms to ready)`,
          );
        })();
      }
      if (completed === killAt) {
        const proc = victim.webhooks.replicas[1]!.process;
        restartingReplica = (async () => {
          // What every replica of both members served so far, read just before the kill (afterwards the victim's counters start again).
          const servedBeforeKill: Record<string, number[]> = {};
          for (const s of started)
            servedBeforeKill[s.member.name] = await s.webhooks.scrape(
              /^tenantgate_webhook_requests_total\{path="validate"/,
            );
          proc.kill('SIGKILL');
          const event: FleetRaceResult['webhookKill'] = {
            member: victim.member.name,
            replica: 1,
            afterCompleted: completed,
            atMs: now(),
            servedBeforeKill,
          };
          webhookKill = event;
          await proc.exited;
          await victim.webhooks.restart(1);
          event.restartedAfterCompleted = completed;
          log(
            `${name}: ${victim.member.name} webhook replica 1 SIGKILLed after ${event.afterCompleted} attempts (validate requests per replica until then ${JSON.stringify(servedBeforeKill)}), ready again after ${completed}`,
          );
        })();
      }
    };
    const interleaved: Array<{ member: number; attempt: Attempt }> = [];
    for (let i = 0; i < Math.max(...plans.map((p) => p.attempts.length)); i++) {
      plans.forEach((p, m) => {
        const attempt = p.attempts[i];
        if (attempt) interleaved.push({ member: m, attempt });
      });
    }
    const limit = pLimit(concurrency);
    await Promise.all(
      interleaved.map(({ member, attempt }) =>
        limit(async () => {
          const s = started[member]!;
          await sendAttempt(s.core, counts[s.member.name]!, attempt);
          onCompleted();
        }),
      ),
    );
    await restartingHub;
    await restartingReplica;
    const wallMs = now();
    await new Promise((r) => setTimeout(r, 2000));
    sampling = false;
    await sampler;
    await sampleOnce();
    const statusWrites =
      writesBeforeRestart -
      writesAtRaceStart +
      (await hubStatusWrites(hub).catch((err: unknown) => {
        throw new Error(`hub /metrics at ${hub.info.server}: ${(err as Error).message}`);
      }));
    const memberMetrics: FleetRaceResult['memberMetrics'] = {};
    for (const { member, webhooks } of started) {
      const scrape = (metric: RegExp) =>
        webhooks.scrape(metric).catch((err: unknown) => {
          throw new Error(
            `${member.name}: scraping the webhook replicas (${webhooks.replicas.map((r) => r.port).join(', ')}): ${(err as Error).message}`,
          );
        });
      memberMetrics[member.name] = {
        // Admitted changes recorded in the headroom ledger (every growth), and growths asked of the hub by result.
        reserved: await scrape(/^tenantgate_webhook_reservations_total\{outcome="reserved"\}/),
        transfersGranted: await scrape(/^tenantgate_fleet_transfers_total\{result="granted"\}/),
        transfers: await scrape(/^tenantgate_fleet_transfers_total\{/),
      };
    }
    log(
      `${name}: ${interleaved.length} attempts in ${wallMs} ms; ${samples.length} samples (${sampleErrors.length} unreadable, ${hubUnread} without the hub), ${violations.length} violations; peak fleet held ${JSON.stringify(peakFleetHeld)}; shares ${JSON.stringify(lastShares)}; hub status writes ${statusWrites}; counts ${JSON.stringify(counts)}`,
    );
    if (!hubRestart || !webhookKill)
      throw new Error(
        `the run ended before its events: hub restart ${JSON.stringify(hubRestart)}, webhook kill ${JSON.stringify(webhookKill)}`,
      );
    return {
      project: name,
      seed,
      attempts: interleaved.length,
      concurrency,
      fleetBudget: budget,
      counts,
      samples: samples.length,
      sampleErrors,
      hubUnread,
      violations,
      peakFleetHeld,
      finalShares: lastShares,
      hubRestart,
      webhookKill,
      hubStatusWrites: statusWrites,
      ...(transferCosts ? { transferCosts } : {}),
      memberMetrics,
      wallMs,
      loadAverage: { start: loadStart, end: loadavg() },
    };
  } finally {
    for (const s of started) {
      await s.controller.stop().catch(() => {});
      await s.webhooks.stop().catch(() => {});
    }
  }
}
