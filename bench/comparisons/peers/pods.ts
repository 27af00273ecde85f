/**
 * bench/comparisons/peers/pods.ts: a project's budget from a user's side, tenantgate next to Capsule's
 * GlobalResourceQuota (ADR 0012). The two designs judge different requests:
 *
 *  - tenantgate judges quota changes: the budget is split into one ResourceQuota per namespace (as
 *    render writes them: here budget ÷ namespaces each, created by the owner through the webhook, Q1),
 *    and every pod is left to Kubernetes' in-process ResourceQuota admission of its namespace. The
 *    webhook (shipped configuration, ledger on) and the controller run; neither sees a Pod.
 *  - Capsule reserves on every counted object: its GlobalResourceQuota webhook sees each Pod create,
 *    adds a reservation to the QuantityLedger (a status update with optimistic concurrency) and only
 *    then admits; its controller keeps a ResourceQuota per namespace whose hard is that namespace's use
 *    plus what is left of the whole budget.
 *
 * Scenarios, each on its own project with 5 namespaces created as admin before any engine runs (labels
 * tenantgate.io/project and tenantgate.io/tenant, the owners' RoleBinding, the default ServiceAccount
 * waited for), pods of `requests.cpu: 1` created by the owner alice (never scheduled: no kubelet, the
 * quota still counts them):
 *
 *  1. race: `concurrent` creates at once spread over the namespaces, room for `budget`, `rounds` rounds;
 *     overspend counted by usage (Σ requests.cpu of the pods that exist after the round − budget). Then
 *     one skewed round: every create in one namespace (tenantgate's split refuses past that
 *     namespace's share while the project has room elsewhere).
 *  2. burst: `burst` creates across the namespaces (in flight at most `burstConcurrency`), room for
 *     `burstRoom`: admitted, refused, other errors, wall time, overspend by usage.
 *  3. steady: pod creates at `rate`/s for `steadyS` s (open loop), p50/p99 of the create, and the CPU
 *     of the engine (tenantgate: webhook + controller; Capsule: its one process) + apiserver + etcd
 *     above their idle rate with that engine running, per admitted pod.
 *  4. namespaces: `nsBurst` Namespace creates by alice at once (project label set); wall time of the
 *     creates and until each admitted namespace can take a pod within the budget: a dry-run Pod create
 *     as admin is admitted and a ResourceQuota is in force there (tenantgate: the controller's default
 *     quota from namespaceDefaults; Capsule: its projected quota and the ledger listing the namespace).
 */
import { Agent } from 'node:https';
import type { ControlPlane } from '../../../test/support/devcluster/controlplane.js';
import { applyAllowListParams, applyOwnerBindings, kubectlAs } from '../../../test/support/devcluster/tenantgate.js';
import type { Project } from '../../../src/validate/types.js';
import {
  type LatencyStats,
  log,
  nowMs,
  openLoopSchedule,
  procCpuSeconds,
  round1,
  sleep,
  stats,
} from '../../lib/measure.js';
import { type ApiAnswer, createPod, deletePods, postNamespace } from './apiload.js';
import { eventually } from './engines.js';
import { type RowLoad, row } from './load.js';

export const POD_NAMESPACES = 5;
const TENANT = 'acme';

export interface PodSettings {
  raceRounds: number;
  raceConcurrent: number;
  raceBudget: number;
  burst: number;
  burstRoom: number;
  burstConcurrency: number;
  rate: number;
  steadyS: number;
  idleS: number;
  nsBurst: number;
  settleMs: number;
}

export interface PodProject {
  name: string;
  namespaces: string[];
  budgetCpu: number;
}

/** What differs between the engines: how a project's budget is put in force over its namespaces. */
export interface PodEngine {
  label: string;
  kind: 'tenantgate' | 'capsule' | 'kubernetes';
  /** The engine's processes, CPU counted. */
  pids: Record<string, number>;
  setBudget(p: PodProject): Promise<void>;
  clearBudget(p: PodProject): Promise<void>;
  /** Dry-run pod creates (namespace, CPUs) that are admitted once the whole budget is free again. */
  freeProbes(p: PodProject): Array<{ namespace: string; cpu: number }>;
  /** The namespace-burst project's budget (Capsule: its GlobalResourceQuota; tenantgate: the Project's). */
  setNamespaceBudget(project: string, cpu: number): Promise<void>;
  clearNamespaceBudget(project: string): Promise<void>;
}

const podProject = (name: string, budgetCpu: number): PodProject => ({
  name,
  budgetCpu,
  namespaces: Array.from({ length: POD_NAMESPACES }, (_, i) => `${name}-n${i}`),
});

/** A Pod that passes the restricted Pod Security level, asking `cpu` CPUs, labelled for counting. */
function podBody(name: string, project: string, cpu: number): Buffer {
  return Buffer.from(
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, labels: { 'bench.tenantgate.io/project': project } },
      spec: {
        containers: [
          {
            name: 'c',
            image: 'stand-in.invalid/pause:not-run',
            resources: { requests: { cpu: String(cpu) }, limits: { cpu: String(cpu) } },
            securityContext: {
              allowPrivilegeEscalation: false,
              runAsNonRoot: true,
              runAsUser: 65534,
              capabilities: { drop: ['ALL'] },
              seccompProfile: { type: 'RuntimeDefault' },
            },
          },
        ],
      },
    }),
  );
}

const kubectl = (cp: ControlPlane, args: string[], input?: string) => kubectlAs(cp.info, 'admin', args, input);

/** The Project (budget only) and its namespaces as admin, owners bound, default ServiceAccounts there. */
export async function setupPodProject(cp: ControlPlane, p: PodProject, namespaceDefaultsCpu?: number): Promise<void> {
  const project = {
    apiVersion: 'tenantgate.io/v1alpha1',
    kind: 'Project',
    metadata: { name: p.name },
    spec: {
      tenant: TENANT,
      owners: [{ kind: 'User', name: 'alice' }],
      quota: { hard: { 'requests.cpu': String(p.budgetCpu) } },
      ...(namespaceDefaultsCpu !== undefined
        ? { namespaceDefaults: { quota: { hard: { 'requests.cpu': String(namespaceDefaultsCpu) } } } }
        : {}),
    },
  };
  await kubectl(cp, ['apply', '-f', '-'], JSON.stringify(project));
  if (!p.namespaces.length) return;
  await kubectl(
    cp,
    ['apply', '-f', '-'],
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'List',
      items: p.namespaces.map((name) => ({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name, labels: { 'tenantgate.io/project': p.name, 'tenantgate.io/tenant': TENANT } },
      })),
    }),
  );
  await applyOwnerBindings(cp.info, project as unknown as Project, p.namespaces);
  // The allow-list policies' parameters, as the controller writes them: without them no pod is admitted (ADR 0095).
  await applyAllowListParams(cp.info, project as unknown as Project, p.namespaces);
  await waitServiceAccounts(cp, p.namespaces);
}

/** Pod creation needs the namespace's `default` ServiceAccount (the serviceaccount controller makes it). */
async function waitServiceAccounts(cp: ControlPlane, namespaces: string[]): Promise<void> {
  await eventually(
    'default ServiceAccounts',
    async () => {
      const r = await kubectl(cp, [
        'get',
        'serviceaccount',
        '-A',
        '--field-selector',
        'metadata.name=default',
        '-o',
        'jsonpath={range .items[*]}{.metadata.namespace}{"\\n"}{end}',
      ]);
      const have = new Set(r.stdout.split('\n'));
      const missing = namespaces.filter((n) => !have.has(n));
      if (missing.length) throw new Error(`missing in ${missing.slice(0, 5).join(', ')}`);
    },
    60_000,
    250,
  );
}

/** Σ requests.cpu (CPUs) of the project's pods that exist now, by listing them. */
async function cpuInUse(cp: ControlPlane, project: string): Promise<{ pods: number; cpu: number }> {
  const r = await kubectl(cp, [
    'get',
    'pods',
    '-A',
    '-l',
    `bench.tenantgate.io/project=${project}`,
    '-o',
    'jsonpath={range .items[*]}{.spec.containers[0].resources.requests.cpu}{"\\n"}{end}',
  ]);
  const lines = r.stdout.split('\n').filter(Boolean);
  let milli = 0;
  for (const q of lines) milli += q.endsWith('m') ? Number(q.slice(0, -1)) : Number(q) * 1000;
  return { pods: lines.length, cpu: milli / 1000 };
}

/** A refusal by a budget: Kubernetes' quota admission ("exceeded quota") or Capsule's GlobalResourceQuota webhook. */
const QUOTA_REFUSAL = /exceeded quota|exceeds GlobalResourceQuota/;

interface Tally {
  admitted: number;
  refused: number;
  errors: number;
  firstRefusal: string;
  firstError: string;
}

function tally(answers: ApiAnswer[]): Tally {
  const t: Tally = { admitted: 0, refused: 0, errors: 0, firstRefusal: '', firstError: '' };
  for (const a of answers) {
    if (a.status === 201) t.admitted += 1;
    else if (a.status === 403 && QUOTA_REFUSAL.test(a.message)) {
      t.refused += 1;
      t.firstRefusal ||= a.message.slice(0, 300);
    } else {
      t.errors += 1;
      t.firstError ||= `${a.status} ${a.message}`.slice(0, 300);
    }
  }
  return t;
}

async function clearPods(cp: ControlPlane, agent: Agent, engine: PodEngine, p: PodProject): Promise<void> {
  await Promise.all(p.namespaces.map((ns) => deletePods(cp, agent, ns)));
  await eventually(
    `${engine.label}: ${p.name}'s pods gone`,
    async () => {
      const u = await cpuInUse(cp, p.name);
      if (u.pods) throw new Error(`${u.pods} pods left`);
    },
    120_000,
    250,
  );
  // The budget is free again for this engine: its quotas' usage and (Capsule) its ledger have caught up.
  await eventually(
    `${engine.label}: ${p.name}'s budget free again`,
    async () => {
      for (const probe of engine.freeProbes(p)) {
        const a = await createPod(cp, agent, 'alice', probe.namespace, podBody('probe-free', p.name, probe.cpu), true);
        if (a.status !== 201)
          throw new Error(
            `dry-run pod of ${probe.cpu} CPU in ${probe.namespace}: ${a.status} ${a.message.slice(0, 200)}`,
          );
      }
    },
    240_000,
    500,
  );
}

/** Pod creates at once (all in flight together unless `concurrency` is given); their answers. */
async function createAll(
  cp: ControlPlane,
  agent: Agent,
  creates: Array<{ namespace: string; name: string }>,
  project: string,
  concurrency = creates.length,
): Promise<ApiAnswer[]> {
  const answers: ApiAnswer[] = new Array<ApiAnswer>(creates.length);
  let next = 0;
  const worker = async () => {
    while (next < creates.length) {
      const k = next++;
      const c = creates[k]!;
      answers[k] = await createPod(cp, agent, 'alice', c.namespace, podBody(c.name, project, 1)).catch(
        (err: unknown) => ({ status: 0, message: String(err) }),
      );
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, creates.length) }, () => worker()));
  return answers;
}

interface PodRaceResult {
  engine: string;
  rounds: number;
  concurrent: number;
  budgetCpu: number;
  admittedPerRound: number[];
  /** Σ requests.cpu of the pods that exist after each round. */
  usedPerRound: number[];
  overspentRounds: number;
  maxOverspendCpu: number;
  refused: number;
  errors: number;
  firstRefusal: string;
  firstError: string;
  /** One round with every create in the first namespace. */
  skewed: Tally & { used: number };
}

async function podRace(
  cp: ControlPlane,
  engine: PodEngine,
  p: PodProject,
  rounds: number,
  concurrent: number,
): Promise<PodRaceResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrent });
  try {
    await clearPods(cp, agent, engine, p);
    const admittedPerRound: number[] = [];
    const usedPerRound: number[] = [];
    let refused = 0;
    let errors = 0;
    let firstRefusal = '';
    let firstError = '';
    for (let i = 0; i < rounds; i++) {
      const creates = Array.from({ length: concurrent }, (_, k) => ({
        namespace: p.namespaces[k % p.namespaces.length]!,
        name: `race-${i}-${k}`,
      }));
      const t = tally(await createAll(cp, agent, creates, p.name));
      const used = (await cpuInUse(cp, p.name)).cpu;
      admittedPerRound.push(t.admitted);
      usedPerRound.push(used);
      refused += t.refused;
      errors += t.errors;
      firstRefusal ||= t.firstRefusal;
      firstError ||= t.firstError;
      log(
        `peers: pods race, ${engine.label}: round ${i + 1}: ${t.admitted} of ${concurrent} admitted, ${t.refused} refused, ${t.errors} errors; in use ${used} CPU of ${p.budgetCpu}`,
      );
      await clearPods(cp, agent, engine, p);
    }
    const creates = Array.from({ length: concurrent }, (_, k) => ({ namespace: p.namespaces[0]!, name: `skew-${k}` }));
    const s = tally(await createAll(cp, agent, creates, p.name));
    const skewed = { ...s, used: (await cpuInUse(cp, p.name)).cpu };
    log(
      `peers: pods race, ${engine.label}: skewed round (all ${concurrent} in ${p.namespaces[0]}): ${s.admitted} admitted, ${s.refused} refused, ${s.errors} errors; in use ${skewed.used} CPU of ${p.budgetCpu}`,
    );
    await clearPods(cp, agent, engine, p);
    return {
      engine: engine.label,
      rounds,
      concurrent,
      budgetCpu: p.budgetCpu,
      admittedPerRound,
      usedPerRound,
      overspentRounds: usedPerRound.filter((u) => u > p.budgetCpu).length,
      maxOverspendCpu: Math.max(0, ...usedPerRound.map((u) => u - p.budgetCpu)),
      refused,
      errors,
      firstRefusal,
      firstError,
      skewed,
    };
  } finally {
    agent.destroy();
  }
}

interface PodBurstResult extends Tally {
  engine: string;
  sent: number;
  room: number;
  concurrency: number;
  wallS: number;
  usedCpu: number;
  overspendCpu: number;
}

async function podBurst(
  cp: ControlPlane,
  engine: PodEngine,
  p: PodProject,
  count: number,
  concurrency: number,
): Promise<PodBurstResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  try {
    await clearPods(cp, agent, engine, p);
    const creates = Array.from({ length: count }, (_, k) => ({
      namespace: p.namespaces[k % p.namespaces.length]!,
      name: `burst-${k}`,
    }));
    const t0 = nowMs();
    const t = tally(await createAll(cp, agent, creates, p.name, concurrency));
    const wallS = round1((nowMs() - t0) / 1000);
    const used = (await cpuInUse(cp, p.name)).cpu;
    log(
      `peers: pods burst, ${engine.label}: ${t.admitted} admitted, ${t.refused} refused, ${t.errors} errors of ${count} in ${wallS} s; in use ${used} CPU of ${p.budgetCpu}${t.firstError ? `; first error: ${t.firstError.slice(0, 160)}` : ''}`,
    );
    await clearPods(cp, agent, engine, p);
    return {
      engine: engine.label,
      sent: count,
      room: p.budgetCpu,
      concurrency,
      wallS,
      usedCpu: used,
      overspendCpu: Math.max(0, used - p.budgetCpu),
      ...t,
    };
  } finally {
    agent.destroy();
  }
}

interface PodSteadyResult extends Tally {
  engine: string;
  rate: number;
  durationS: number;
  sent: number;
  latencyMs: LatencyStats;
  /** CPU seconds in the window per process, and each one's idle rate (CPU seconds per second) with the engine running. */
  cpuSeconds: Record<string, number>;
  idlePerSecond: Record<string, number>;
  /** (engine + apiserver + etcd CPU − their idle rate × window) ÷ admitted pods. */
  cpuMsPerAdmittedPod: number;
}

function cpuOf(pids: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, procCpuSeconds(pid)]));
}

async function podSteady(
  cp: ControlPlane,
  engine: PodEngine,
  p: PodProject,
  cpPids: Record<string, number>,
  rate: number,
  durationMs: number,
  idleMs: number,
): Promise<PodSteadyResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const pids = { ...cpPids, ...engine.pids };
  try {
    await clearPods(cp, agent, engine, p);
    // Idle with the engine running and the budget in force.
    await sleep(2000);
    const i0 = cpuOf(pids);
    const ti = nowMs();
    await sleep(idleMs);
    const i1 = cpuOf(pids);
    const idleWall = (nowMs() - ti) / 1000;
    const idlePerSecond = Object.fromEntries(Object.keys(pids).map((k) => [k, (i1[k]! - i0[k]!) / idleWall]));
    const schedule = openLoopSchedule(rate, 2000, durationMs);
    const latencies = new Float64Array(schedule.total);
    const answers: ApiAnswer[] = [];
    let completed = 0;
    let c0: Record<string, number> = {};
    let t0 = 0;
    await schedule.run(
      (index) => {
        const sent = nowMs();
        const ns = p.namespaces[index % p.namespaces.length]!;
        return createPod(cp, agent, 'alice', ns, podBody(`steady-${index}`, p.name, 1)).then(
          (a) => {
            if (index < schedule.warmupCount) return;
            latencies[completed++] = nowMs() - sent;
            answers.push(a);
          },
          (err: unknown) => {
            if (index >= schedule.warmupCount) answers.push({ status: 0, message: String(err) });
          },
        );
      },
      () => {
        c0 = cpuOf(pids);
        t0 = nowMs();
      },
    );
    const c1 = cpuOf(pids);
    const wall = (nowMs() - t0) / 1000;
    const cpuSeconds = Object.fromEntries(Object.keys(pids).map((k) => [k, Math.round((c1[k]! - c0[k]!) * 100) / 100]));
    const t = tally(answers);
    let above = 0;
    for (const k of Object.keys(pids)) above += Math.max(0, c1[k]! - c0[k]! - idlePerSecond[k]! * wall);
    const cpuMsPerAdmittedPod = t.admitted ? Math.round((above / t.admitted) * 1e5) / 100 : NaN;
    log(
      `peers: pods steady, ${engine.label}: ${rate}/s for ${durationMs / 1000} s: ${t.admitted} admitted, ${t.refused} refused, ${t.errors} errors; p50 ${stats(latencies, completed).p50} ms, p99 ${stats(latencies, completed).p99} ms; ${cpuMsPerAdmittedPod} ms CPU per admitted pod above idle (${Object.entries(
        cpuSeconds,
      )
        .map(([k, v]) => `${k} ${v} s`)
        .join(', ')})`,
    );
    await clearPods(cp, agent, engine, p);
    return {
      engine: engine.label,
      rate,
      durationS: durationMs / 1000,
      sent: schedule.total - schedule.warmupCount,
      latencyMs: stats(latencies, completed),
      cpuSeconds,
      idlePerSecond: Object.fromEntries(
        Object.entries(idlePerSecond).map(([k, v]) => [k, Math.round(v * 1000) / 1000]),
      ),
      cpuMsPerAdmittedPod,
      ...t,
    };
  } finally {
    agent.destroy();
  }
}

interface NamespaceBurstResult extends Tally {
  engine: string;
  count: number;
  createWallS: number;
  /** From the first create until every admitted namespace takes a pod within the budget. */
  readyWallS: number;
}

async function namespaceBurst(
  cp: ControlPlane,
  engine: PodEngine,
  project: string,
  count: number,
  tag: string,
): Promise<NamespaceBurstResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: count });
  const names = Array.from({ length: count }, (_, k) => `${project}-${tag}-${k}`);
  try {
    const t0 = nowMs();
    const answers = await Promise.all(
      names.map((name) =>
        createTenantNamespace(cp, agent, name, project).catch((err: unknown) => ({ status: 0, message: String(err) })),
      ),
    );
    const createWallS = round1((nowMs() - t0) / 1000);
    const t = tally(answers);
    const admitted = names.filter((_, k) => answers[k]!.status === 201);
    await waitServiceAccounts(cp, admitted);
    await eventually(
      `${engine.label}: new namespaces take a pod within the budget`,
      async () => {
        const withQuota = new Set(
          (
            await kubectl(cp, [
              'get',
              'resourcequota',
              '-A',
              '-o',
              'jsonpath={range .items[?(@.status.hard)]}{.metadata.namespace}{"\\n"}{end}',
            ])
          ).stdout.split('\n'),
        );
        const notYet = admitted.filter((n) => !withQuota.has(n));
        if (notYet.length) throw new Error(`${notYet.length} without a quota in force`);
        const probes = await Promise.all(
          admitted.map((n) => createPod(cp, agent, 'admin', n, podBody('probe', project, 1), true)),
        );
        const refused = probes.filter((a) => a.status !== 201);
        if (refused.length)
          throw new Error(`${refused.length} refuse a pod: ${refused[0]!.status} ${refused[0]!.message.slice(0, 200)}`);
      },
      240_000,
      250,
    );
    const readyWallS = round1((nowMs() - t0) / 1000);
    log(
      `peers: namespace burst, ${engine.label}: ${t.admitted} admitted, ${t.refused} refused, ${t.errors} errors of ${count}; creates ${createWallS} s; all take a pod ${readyWallS} s${t.firstError ? `; first error: ${t.firstError.slice(0, 160)}` : ''}`,
    );
    return { engine: engine.label, count, createWallS, readyWallS, ...t };
  } finally {
    await kubectl(cp, ['delete', 'namespace', ...names, '--ignore-not-found', '--wait=true', '--timeout=180s']).catch(
      (e: unknown) => log(`peers: namespace burst cleanup: ${String(e)}`),
    );
    agent.destroy();
  }
}

function createTenantNamespace(cp: ControlPlane, agent: Agent, name: string, project: string): Promise<ApiAnswer> {
  return postNamespace(
    cp,
    agent,
    'alice',
    Buffer.from(
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name, labels: { 'tenantgate.io/project': project, 'tenantgate.io/tenant': TENANT } },
      }),
    ),
  );
}

export interface PodComparison {
  settings: PodSettings;
  race: Array<PodRaceResult & { load: RowLoad }>;
  burst: Array<PodBurstResult & { load: RowLoad }>;
  steady: Array<PodSteadyResult & { load: RowLoad }>;
  namespaces: Array<NamespaceBurstResult & { load: RowLoad }>;
  errors: Array<{ engine: string; scenario: string; error: string }>;
}

const POD_PROJECTS = { race: 'podrace', burst: 'podburst', steady: 'podsteady', namespaces: 'nsburst' } as const;

export function podProjects(s: PodSettings): {
  race: PodProject;
  burst: PodProject;
  steady: PodProject;
  namespaces: PodProject;
} {
  return {
    race: podProject(POD_PROJECTS.race, s.raceBudget),
    burst: podProject(POD_PROJECTS.burst, s.burstRoom),
    // Room for every steady create: none is refused, so every one costs the whole path.
    steady: podProject(POD_PROJECTS.steady, Math.ceil(s.rate * (s.steadyS + 2)) * POD_NAMESPACES),
    namespaces: { name: POD_PROJECTS.namespaces, namespaces: [], budgetCpu: s.nsBurst * 2 },
  };
}

/** Every scenario against one engine, each row under the load rule. */
export type PodScenario = 'race' | 'burst' | 'steady' | 'namespaces';
const POD_SCENARIOS: readonly PodScenario[] = ['race', 'burst', 'steady', 'namespaces'];

export async function runPodScenarios(
  cp: ControlPlane,
  engine: PodEngine,
  s: PodSettings,
  cpPids: Record<string, number>,
  out: PodComparison,
  tag: string,
  scenarios: readonly PodScenario[] = POD_SCENARIOS,
): Promise<void> {
  const projects = podProjects(s);
  const attempt = async <T>(scenario: string, fn: () => Promise<T>, push: (r: T & { load: RowLoad }) => void) => {
    try {
      push(await row(`pods ${scenario}, ${engine.label}`, s.settleMs, fn));
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      out.errors.push({ engine: engine.label, scenario, error });
      log(`peers: pods ${scenario}, ${engine.label}: FAILED: ${error}`);
    }
  };
  for (const [scenario, p] of [
    ['race', projects.race],
    ['burst', projects.burst],
    ['steady', projects.steady],
  ] as const) {
    if (!scenarios.includes(scenario)) continue;
    try {
      await engine.setBudget(p);
    } catch (err) {
      out.errors.push({
        engine: engine.label,
        scenario,
        error: `budget: ${err instanceof Error ? err.message : String(err)}`,
      });
      continue;
    }
    if (scenario === 'race')
      await attempt(
        'race',
        () => podRace(cp, engine, p, s.raceRounds, s.raceConcurrent),
        (r) => out.race.push(r),
      );
    if (scenario === 'burst')
      await attempt(
        'burst',
        () => podBurst(cp, engine, p, s.burst, s.burstConcurrency),
        (r) => out.burst.push(r),
      );
    if (scenario === 'steady')
      await attempt(
        'steady',
        () => podSteady(cp, engine, p, cpPids, s.rate, s.steadyS * 1000, s.idleS * 1000),
        (r) => out.steady.push(r),
      );
    await engine
      .clearBudget(p)
      .catch((e: unknown) => log(`peers: pods, ${engine.label}: clearing ${p.name}'s budget: ${String(e)}`));
  }
  if (!scenarios.includes('namespaces')) return;
  try {
    await engine.setNamespaceBudget(projects.namespaces.name, projects.namespaces.budgetCpu);
    await attempt(
      'namespaces',
      () => namespaceBurst(cp, engine, projects.namespaces.name, s.nsBurst, tag),
      (r) => out.namespaces.push(r),
    );
  } finally {
    await engine
      .clearNamespaceBudget(projects.namespaces.name)
      .catch((e: unknown) => log(`peers: pods, ${engine.label}: clearing the namespace budget: ${String(e)}`));
  }
}

export interface PodTarget {
  target: string;
  judged: boolean;
  met: boolean;
  value: string;
  note: string;
}

/**
 * The targets: tenantgate 0 overspend (race and burst; judged whatever the load: it is no timing);
 * tenantgate's CPU per admitted pod ≤ ⅓ of Capsule's and its burst wall time ≤ ½ of Capsule's, against
 * Capsule's best counted variant, on rows started at load ≤ MAX_LOAD.
 */
export function judgePods(c: PodComparison): PodTarget[] {
  const tg = (label: string) => label.startsWith('tenantgate');
  const out: PodTarget[] = [];
  // The Kubernetes-only baseline row (no engine) is printed, never judged.
  const tgRace = c.race.find((r) => tg(r.engine));
  const tgBurst = c.burst.find((r) => tg(r.engine));
  const overspend = [tgRace ? tgRace.overspentRounds : null, tgBurst ? (tgBurst.overspendCpu > 0 ? 1 : 0) : null];
  out.push({
    target: 'tenantgate: 0 overspend (pod race rounds and the burst, counted by usage)',
    judged: overspend.every((x) => x !== null),
    met: overspend.every((x) => x === 0),
    value: `${tgRace ? `race ${tgRace.overspentRounds}/${tgRace.rounds} rounds over` : 'race not run'}; ${tgBurst ? `burst ${tgBurst.usedCpu} CPU in use of ${tgBurst.room}` : 'burst not run'}`,
    note: '',
  });
  const ratio = (
    what: string,
    times: string,
    limit: number,
    rows: Array<{ engine: string; load: RowLoad }>,
    value: (r: never) => number,
  ) => {
    const mine = rows.find((r) => tg(r.engine));
    const capsule = (r: { engine: string }) => r.engine.startsWith('capsule');
    const best = (counted: boolean) =>
      rows
        .filter((r) => capsule(r) && (!counted || r.load.counted) && Number.isFinite(value(r as never)))
        .sort((a, b) => value(a as never) - value(b as never))[0];
    const theirs = best(true) ?? best(false);
    const notes: string[] = [];
    if (!mine) notes.push('tenantgate not run');
    else if (!mine.load.counted) notes.push(`tenantgate's row started at load ${mine.load.start}`);
    if (!theirs) notes.push('no Capsule row');
    else if (!theirs.load.counted)
      notes.push(`no counted Capsule row (best as measured: ${theirs.engine}, load ${theirs.load.start})`);
    const r = mine && theirs ? Math.round((value(mine as never) / value(theirs as never)) * 1000) / 1000 : null;
    const judged = notes.length === 0 && r !== null && Number.isFinite(r);
    out.push({
      target: `tenantgate ${what} ≤ ${times} Capsule's`,
      judged,
      met: judged && r! <= limit,
      value: r === null ? '' : `${value(mine as never)} vs ${value(theirs as never)} (${theirs!.engine}): ${r}`,
      note: notes.join('; '),
    });
  };
  ratio(
    'CPU per admitted pod (engine + apiserver + etcd above idle)',
    '⅓ ×',
    1 / 3,
    c.steady,
    (r: PodSteadyResult) => r.cpuMsPerAdmittedPod,
  );
  ratio('burst wall time', '½ ×', 1 / 2, c.burst, (r: PodBurstResult) => r.wallS);
  return out;
}
