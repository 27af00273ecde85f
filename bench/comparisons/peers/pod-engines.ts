/**
 * bench/comparisons/peers/pod-engines.ts: the two ways bench/comparisons/peers/pods.ts puts a project's budget in force, and
 * the run of every pod scenario against each (ADR 0012):
 *
 *  - tenantgate as shipped: `tenantgate webhook` (ledger on) registered, `tenantgate controller` (one
 *    replica, no lease) running; the budget split into a ResourceQuota per namespace, budget ÷
 *    namespaces each, created by the owner alice through the webhook (Q1 judges each).
 *  - Capsule v0.14.0 (bench/comparisons/peers/capsule.ts), the chart's client rate limit and a raised one: one
 *    GlobalResourceQuota per project over its namespaces (selected by the project label).
 */
import { join } from 'node:path';
import type { WebhookCertFiles } from '../../../src/certs/files.js';
import type { ControlPlane } from '../../../test/support/devcluster/controlplane.js';
import { freePort } from '../../../test/support/devcluster/ports.js';
import { startProcess } from '../../../test/support/devcluster/processes.js';
import { kubectlAs } from '../../../test/support/devcluster/tenantgate.js';
import { log, tailFile } from '../../lib/measure.js';
import { createQuota, deleteQuotas } from './apiload.js';
import {
  applyGlobalQuota,
  deleteGlobalQuota,
  installCapsuleCrds,
  startCapsule,
  type CapsuleOptions,
} from './capsule.js';
import { type PeerBinary, eventually, startTenantgate } from './engines.js';
import {
  POD_NAMESPACES,
  type PodComparison,
  type PodEngine,
  type PodProject,
  type PodSettings,
  podProjects,
  runPodScenarios,
  setupPodProject,
} from './pods.js';
import { Agent } from 'node:https';

const CAPSULE_VARIANTS = {
  'capsule (chart: client QPS 20)': {},
  'capsule (client QPS raised)': { qps: 100_000, burst: 100_000 },
} as const satisfies Record<string, CapsuleOptions>;

const BUDGET_QUOTA = 'budget';

async function startTenantgateController(
  cp: ControlPlane,
  work: string,
  mainJs: string,
): Promise<{ pid: number; stop(): Promise<void> }> {
  const probePort = await freePort();
  const metricsPort = await freePort();
  const logFile = join(work, `tenantgate-controller-${Date.now()}.log`);
  const proc = startProcess(
    'tenantgate-controller',
    process.execPath,
    [
      mainJs,
      'controller',
      '--kubeconfig',
      cp.info.kubeconfigs.admin!,
      '--probe-port',
      String(probePort),
      '--probe-host',
      '127.0.0.1',
      '--metrics-port',
      String(metricsPort),
      '--metrics-host',
      '127.0.0.1',
      '--no-leader-election',
    ],
    logFile,
  );
  await eventually(
    'tenantgate controller /readyz',
    async () => {
      if (proc.child.exitCode !== null)
        throw new Error(`controller exited with ${proc.child.exitCode}:\n${tailFile(logFile)}`);
      const res = await fetch(`http://127.0.0.1:${probePort}/readyz`, { signal: AbortSignal.timeout(3000) });
      await res.text();
      if (res.status !== 200) throw new Error(`readyz HTTP ${res.status}`);
    },
    300_000,
    500,
  );
  return { pid: proc.pid, stop: () => proc.stop(15_000) };
}

function tenantgateEngine(cp: ControlPlane, pids: Record<string, number>): PodEngine {
  const agent = new Agent({ keepAlive: true, maxSockets: 8 });
  const share = (p: PodProject) => p.budgetCpu / p.namespaces.length;
  return {
    label: 'tenantgate (ledger on, shipped)',
    kind: 'tenantgate',
    pids,
    async setBudget(p) {
      // What render writes for declared namespaces: each one's quota, together the budget.
      for (const ns of p.namespaces) {
        await eventually(
          `quota ${ns}/${BUDGET_QUOTA}`,
          async () => {
            const a = await createQuota(cp, agent, 'alice', ns, BUDGET_QUOTA, String(share(p)));
            if (a.status !== 201 && a.status !== 409) throw new Error(`${a.status} ${a.message.slice(0, 200)}`);
          },
          60_000,
          1000,
        );
      }
    },
    async clearBudget(p) {
      await Promise.all(p.namespaces.map((ns) => deleteQuotas(cp, agent, ns)));
    },
    freeProbes: (p) => p.namespaces.map((namespace) => ({ namespace, cpu: share(p) })),
    async setNamespaceBudget() {
      // The Project is the budget; its namespaceDefaults give each new namespace its quota.
    },
    async clearNamespaceBudget() {},
  };
}

function kubernetesOnlyEngine(cp: ControlPlane): PodEngine {
  const agent = new Agent({ keepAlive: true, maxSockets: 8 });
  const share = (p: PodProject) => p.budgetCpu / p.namespaces.length;
  return {
    label: 'no engine (Kubernetes quota only)',
    kind: 'kubernetes',
    pids: {},
    async setBudget(p) {
      for (const ns of p.namespaces) {
        const a = await createQuota(cp, agent, 'admin', ns, BUDGET_QUOTA, String(share(p)));
        if (a.status !== 201 && a.status !== 409)
          throw new Error(`quota ${ns}/${BUDGET_QUOTA}: ${a.status} ${a.message.slice(0, 200)}`);
      }
    },
    async clearBudget(p) {
      await Promise.all(p.namespaces.map((ns) => deleteQuotas(cp, agent, ns)));
    },
    freeProbes: (p) => p.namespaces.map((namespace) => ({ namespace, cpu: share(p) })),
    async setNamespaceBudget() {},
    async clearNamespaceBudget() {},
  };
}

function capsuleEngine(cp: ControlPlane, label: string, pid: number): PodEngine {
  return {
    label,
    kind: 'capsule',
    pids: { engine: pid },
    setBudget: (p) => applyGlobalQuota(cp, p.name, p.name, { 'requests.cpu': String(p.budgetCpu) }),
    clearBudget: (p) => deleteGlobalQuota(cp, p.name),
    // One pod of the whole budget fits: the ledger holds no reservation and nothing is in use.
    freeProbes: (p) => [{ namespace: p.namespaces[0]!, cpu: p.budgetCpu }],
    setNamespaceBudget: (project, cpu) => applyGlobalQuota(cp, project, project, { 'requests.cpu': String(cpu) }),
    clearNamespaceBudget: (project) => deleteGlobalQuota(cp, project),
  };
}

/** Sets up the scenarios' projects, then runs them against tenantgate and each Capsule variant in turn. */
export async function runPodComparison(
  cp: ControlPlane,
  work: string,
  mainJs: string,
  tgCerts: WebhookCertFiles,
  capsule: PeerBinary | undefined,
  withTenantgate: boolean,
  settings: PodSettings,
  cpPids: Record<string, number>,
  save: (c: PodComparison) => void,
): Promise<PodComparison> {
  const out: PodComparison = { settings, race: [], burst: [], steady: [], namespaces: [], errors: [] };
  const projects = podProjects(settings);
  for (const p of [projects.race, projects.burst, projects.steady]) await setupPodProject(cp, p);
  // Each new namespace of the burst gets 1 CPU from namespaceDefaults; the budget has room for all.
  await setupPodProject(cp, projects.namespaces, 1);
  log(
    `peers: pods: projects ${[projects.race, projects.burst, projects.steady].map((p) => `${p.name} (${p.budgetCpu} CPU over ${POD_NAMESPACES} namespaces)`).join(', ')}, ${projects.namespaces.name} (${projects.namespaces.budgetCpu} CPU, ${settings.nsBurst} namespaces to come)`,
  );
  if (withTenantgate) {
    // What a pod create costs with no engine at all: the same per-namespace quotas, made as admin, and
    // Kubernetes' quota admission alone (printed next to the engines, never judged).
    await runPodScenarios(cp, kubernetesOnlyEngine(cp), settings, cpPids, out, 'k8s', ['steady']);
    const webhook = await startTenantgate(cp, work, mainJs, tgCerts, true);
    let controller: Awaited<ReturnType<typeof startTenantgateController>> | undefined;
    try {
      controller = await startTenantgateController(cp, work, mainJs);
      await runPodScenarios(
        cp,
        tenantgateEngine(cp, { engine: webhook.pid, controller: controller.pid }),
        settings,
        cpPids,
        out,
        'tg',
      );
    } catch (err) {
      out.errors.push({
        engine: 'tenantgate',
        scenario: 'start',
        error: err instanceof Error ? err.message : String(err),
      });
    } finally {
      await controller?.stop();
      await webhook.stop();
      save(out);
    }
    // Its quotas out of the way of Capsule's.
    for (const p of [projects.race, projects.burst, projects.steady])
      await Promise.all(
        p.namespaces.map((ns) => kubectlAs(cp.info, 'admin', ['-n', ns, 'delete', 'resourcequota', '--all'])),
      );
  }
  if (capsule) {
    await installCapsuleCrds(cp, capsule.version);
    for (const [label, options] of Object.entries(CAPSULE_VARIANTS)) {
      let engine: Awaited<ReturnType<typeof startCapsule>> | undefined;
      try {
        engine = await startCapsule(cp, work, capsule, options);
        await runPodScenarios(
          cp,
          capsuleEngine(cp, label, engine.pid),
          settings,
          cpPids,
          out,
          label.includes('raised') ? 'cr' : 'cc',
        );
      } catch (err) {
        out.errors.push({ engine: label, scenario: 'start', error: err instanceof Error ? err.message : String(err) });
        log(`peers: pods, ${label}: FAILED: ${String(err)}${engine ? ` (log: ${engine.logFile})` : ''}`);
      } finally {
        await engine?.stop();
        save(out);
      }
    }
  }
  return out;
}
