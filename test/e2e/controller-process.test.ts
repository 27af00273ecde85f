/**
 * The controller as separate OS processes (`tenantgate controller`, run from the sources with tsx),
 * as its ServiceAccount with the shipped RBAC, leader election on tenantgate-system/tenantgate-controller:
 * SIGKILL in the middle of a cascade and restart; two replicas and a handover; graceful SIGTERM;
 * zero writes on an idle cluster over full resync periods.
 */
import * as k8s from '@kubernetes/client-node';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  clients,
  createProject,
  createProjectNamespace,
  deleteProject,
  fillNamespace,
  getProject,
  namespaceExists,
  pool,
  scrapeAll,
  type Clients,
} from '../support/controller-kit.js';
import {
  CONTROLLER_LEASE,
  isLeader,
  projectWithOwnedNamespaces,
  setUpReplicas,
  startReplica,
  stopReplicas,
  waitLeader,
  type Replica,
  type ReplicaSetup,
} from '../support/controller-replicas.js';
import { stallNamespaceDelete } from '../support/stall-webhook.js';
import type { Project } from '../../src/validate/types.js';
import { LEADER_ELECTION_DEFAULTS } from '../../src/controller/leader.js';
import { cluster, ensureProjectCrd, eventually, kubeConfig, uniqueName } from '../support/cluster.js';
import { confirmDeletions, projectsLabelled, removeProjects } from '../support/leftovers.js';

const SELECTOR_LABEL = 'e2e.tenantgate.io/run';
/** How often a standby replica tries to acquire the lease (`tenantgate controller` runs with the defaults). */
const RETRY_MS = LEADER_ELECTION_DEFAULTS.retryPeriodMs;

/** A Lease time (MicroTime) in ms since the epoch. */
function timeOf(t: Date | string | undefined): number {
  if (t === undefined) throw new Error('the lease has no time');
  return new Date(t).getTime();
}
const HOLD = 'e2e.tenantgate.io/hold';

let c: Clients;
let coordination: k8s.CoordinationV1Api;
let replicas: ReplicaSetup;
/** The run labels of this file's tests: afterAll removes the Projects carrying them. */
const runs: string[] = [];

const start = (identity: string, run: string, extra: string[] = []): Promise<Replica> =>
  startReplica(replicas, identity, `${SELECTOR_LABEL}=${run}`, extra);

async function lease(): Promise<k8s.V1Lease> {
  return coordination.readNamespacedLease(CONTROLLER_LEASE);
}

/** Sum of the controller's API writes, leaving out leases (leader election). */
async function reconcileWrites(r: Replica): Promise<{ total: number; leases: number; all: Record<string, number> }> {
  const all = await scrapeAll(r.metrics, 'tenantgate_controller_api_writes_total');
  let total = 0;
  let leases = 0;
  for (const [k, v] of Object.entries(all)) {
    if (k.includes('resource="leases"')) leases += v;
    else total += v;
  }
  return { total, leases, all };
}

async function reconcileCount(r: Replica): Promise<number> {
  const all = await scrapeAll(r.metrics, 'tenantgate_controller_reconcile_total');
  return Object.values(all).reduce((a, b) => a + b, 0);
}

async function stopGracefully(r: Replica): Promise<void> {
  r.proc.kill('SIGTERM');
  const { code, signal } = await r.proc.exited;
  expect({ code, signal }).toEqual({ code: 0, signal: null });
}

const spec = (): Project['spec'] => ({
  tenant: 'acme',
  quota: { hard: { 'requests.cpu': '20', pods: '100' } },
  namespaceDefaults: { quota: { hard: { 'requests.cpu': '2', pods: '10' } } },
});

async function releaseHold(namespace: string): Promise<void> {
  await c.core.patchNamespacedConfigMap(
    { name: 'cm-0', namespace, body: { metadata: { finalizers: null } } },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  );
}

beforeAll(async () => {
  await ensureProjectCrd();
  c = clients(kubeConfig('admin'));
  coordination = kubeConfig('admin').makeApiClient(k8s.CoordinationV1Api);
  replicas = await setUpReplicas('controller-process');
});

// Whatever a failed test left running: stop it gracefully (releases the lease for the next test).
afterEach(() => stopReplicas(replicas));

afterAll(async () => {
  for (const p of replicas.running.splice(0)) p.kill('SIGKILL');
  // The controllers are gone: their finalizers are removed and the namespaces deleted after the Projects.
  if (runs.length > 0)
    await removeProjects(await projectsLabelled(`${SELECTOR_LABEL} in (${runs.join(',')})`), { cascadeMs: 0 });
});

/** resourceVersion of every object the controller writes for these projects, as the apiserver stores them. */
async function storedVersions(projects: string[]): Promise<Record<string, string>> {
  const rbac = kubeConfig('admin').makeApiClient(k8s.RbacAuthorizationV1Api);
  const out: Record<string, string> = {};
  for (const name of projects) {
    out[`project/${name}`] = (await getProject(c, name))?.metadata.resourceVersion ?? '';
    for (const ns of [`${name}-a`, `${name}-b`]) {
      out[`namespace/${ns}`] = (await c.core.readNamespace({ name: ns })).metadata?.resourceVersion ?? '';
      for (const q of (await c.core.listNamespacedResourceQuota({ namespace: ns })).items)
        out[`quota/${ns}/${q.metadata?.name}`] = q.metadata?.resourceVersion ?? '';
      for (const b of (await rbac.listNamespacedRoleBinding({ namespace: ns })).items)
        out[`rolebinding/${ns}/${b.metadata?.name}`] = b.metadata?.resourceVersion ?? '';
    }
  }
  return out;
}

describe('controller process', () => {
  it('SIGKILL in the middle of a cascade, then a restart: the job is finished and nothing else is deleted', async () => {
    const run = uniqueName('kill');
    runs.push(run);
    // One delete at a time and more namespaces than that: the kill lands while owned namespaces still wait.
    const a = await start(`${run}-pod`, run, ['--delete-concurrency=1']);
    await waitLeader(a);

    const name = uniqueName('killp');
    const { project, owned } = await projectWithOwnedNamespaces(c, name, spec(), { [SELECTOR_LABEL]: run }, 30);
    await pool(owned.slice(0, 5), 5, (ns) => fillNamespace(c, ns, 10, 5, ns === owned[0] ? [HOLD] : []));
    const foreign = `${name}-foreign`;
    await createProjectNamespace(c, project, foreign, { uid: null });
    const bystander = uniqueName('bystander');
    await c.core.createNamespace({
      body: { metadata: { name: bystander, labels: { 'tenantgate.io/project': 'someone-else' } } },
    });

    // The sixth owned namespace's DELETE is held by a webhook: with one delete at a time the cascade
    // stops there, five namespaces asked to go, and the kill lands at that exact step.
    const stall = await stallNamespaceDelete(owned[5]!);
    try {
      // The namespaces hold what tenants make: a platform admin confirms the deletion (ADR 0096).
      await confirmDeletions([name]);
      await deleteProject(c, name);
      await stall.held;
      a.proc.kill('SIGKILL');
      expect(await a.proc.exited).toEqual({ code: null, signal: 'SIGKILL' });
      stall.answer(false); // the dead controller's delete of the sixth never happens
    } finally {
      await stall.stop();
    }
    const atKill = (await c.core.listNamespace({ labelSelector: `tenantgate.io/project=${name}` })).items.filter((n) =>
      owned.includes(n.metadata?.name ?? ''),
    );
    const asked = atKill.filter((n) => n.metadata?.deletionTimestamp).map((n) => n.metadata!.name!);
    const gone = owned.filter((ns) => !atKill.some((n) => n.metadata?.name === ns));
    console.log(
      `[controller-process] at SIGKILL: ${asked.length} owned namespaces terminating, ${gone.length} gone, ${owned.length - asked.length - gone.length} untouched`,
    );
    // Exactly the first five were asked to go (terminating or already gone); the other 25 untouched.
    expect([...asked, ...gone].sort()).toEqual(owned.slice(0, 5));

    // While no controller runs: a namespace of the project it never saw (annotated as the webhook would).
    const late = `${name}-late`;
    await createProjectNamespace(c, project, late);
    await fillNamespace(c, late, 5, 0);
    await new Promise((r) => setTimeout(r, 1000));
    const stuck = await getProject(c, name);
    expect(stuck?.metadata.finalizers).toContain('tenantgate.io/cascade-delete');
    expect(await namespaceExists(c, late)).toBe(true);

    // The same pod's container restarts (same identity: it takes its lease back at once).
    const b = await start(`${run}-pod`, run, ['--delete-concurrency=1']);
    await waitLeader(b);
    await releaseHold(owned[0]!);
    await eventually(
      async () => {
        if (await getProject(c, name)) throw new Error('project still there');
      },
      { what: 'project gone after the restart', timeoutMs: 90_000 },
    );
    for (const ns of [...owned, late]) expect(await namespaceExists(c, ns), ns).toBe(false);
    expect(await namespaceExists(c, foreign)).toBe(true);
    expect(await namespaceExists(c, bystander)).toBe(true);

    await stopGracefully(b);
    const released = await lease();
    expect(released.spec?.holderIdentity ?? '').toBe('');
    await c.core.deleteNamespace({ name: foreign });
    await c.core.deleteNamespace({ name: bystander });
  });

  it('two replicas: only the leader reconciles; SIGKILL of the leader hands over within the lease duration; SIGTERM hands over at once', async () => {
    const run = uniqueName('lead');
    runs.push(run);
    const first = await start(`${run}-1`, run);
    await waitLeader(first);
    const second = await start(`${run}-2`, run);
    const [leader, follower] = [first, second];
    await new Promise((r) => setTimeout(r, 2500)); // a few acquire attempts by the follower
    expect(await isLeader(leader)).toBe(true);
    expect(await isLeader(follower)).toBe(false);
    expect((await lease()).spec?.holderIdentity).toBe(leader.identity);

    const p1 = uniqueName('leadp');
    await createProject(c, p1, spec(), { [SELECTOR_LABEL]: run });
    await eventually(async () => expect((await getProject(c, p1))?.status?.phase).toBe('Active'), {
      what: `${p1} reconciled`,
    });
    expect(await reconcileCount(leader)).toBeGreaterThan(0);
    expect(await reconcileCount(follower)).toBe(0);
    expect((await reconcileWrites(follower)).total).toBe(0);
    expect((await reconcileWrites(follower)).leases).toBe(0);

    // Hard kill: the follower waits for the lease to expire on its own clock. Judged on the Lease's own
    // times, written by the replicas (one machine, one clock), not on this test's polling of /metrics.
    const held = await lease();
    const leaseMs = (held.spec?.leaseDurationSeconds ?? 0) * 1000;
    expect(leaseMs).toBe(LEADER_ELECTION_DEFAULTS.leaseDurationSeconds * 1000);
    const killedAt = Date.now();
    leader.proc.kill('SIGKILL');
    await waitLeader(follower);
    const handoverMs = Date.now() - killedAt;
    const taken = await lease();
    expect(taken.spec?.holderIdentity).toBe(follower.identity);
    const acquiredAt = timeOf(taken.spec?.acquireTime);
    console.log(
      `[controller-process] handover after SIGKILL of the leader: acquired ${acquiredAt - killedAt} ms after the kill, seen leading after ${handoverMs} ms (lease duration ${leaseMs} ms, retry period ${RETRY_MS} ms)`,
    );
    // Not before the lease expired: the follower saw the leader's last renewal no earlier than it was made.
    expect(acquiredAt).toBeGreaterThanOrEqual(timeOf(held.spec?.renewTime) + leaseMs);
    // At its first attempt after that: it sees the last renewal at its next attempt (one retry period
    // after the kill at most), tries every retry period, so it acquires by the lease duration plus two
    // retry periods plus what those two attempts' API calls took; 3 s for these on a loaded machine.
    expect(acquiredAt - killedAt).toBeLessThan(leaseMs + 2 * RETRY_MS + 3_000);

    const p2 = uniqueName('leadp');
    await createProject(c, p2, spec(), { [SELECTOR_LABEL]: run });
    await eventually(async () => expect((await getProject(c, p2))?.status?.phase).toBe('Active'), {
      what: `${p2} reconciled by the new leader`,
    });

    // Graceful: the leader releases the lease on SIGTERM and a standby takes over within a retry period.
    const standby = await start(`${run}-3`, run);
    await new Promise((r) => setTimeout(r, 500));
    expect(await isLeader(standby)).toBe(false);
    const renewed = await lease();
    const termAt = Date.now();
    await stopGracefully(follower);
    const exitedAt = Date.now(); // after it released the lease
    await waitLeader(standby, 10_000);
    const gracefulMs = Date.now() - termAt;
    const handed = await lease();
    expect(handed.spec?.holderIdentity).toBe(standby.identity);
    const handedAt = timeOf(handed.spec?.acquireTime);
    console.log(
      `[controller-process] handover after SIGTERM of the leader: acquired ${handedAt - termAt} ms after SIGTERM (${handedAt - exitedAt} ms after the exit), seen leading after ${gracefulMs} ms`,
    );
    // Released, not expired: waiting for expiry, the standby could not acquire before the leader's last renewal + the lease duration.
    expect(handedAt).toBeLessThan(timeOf(renewed.spec?.renewTime) + leaseMs);
    // At its first attempt after the release: within a retry period of it, plus that attempt's API calls (2 s for these).
    expect(handedAt - exitedAt).toBeLessThan(RETRY_MS + 2_000);

    await stopGracefully(standby);
    expect((await lease()).spec?.holderIdentity ?? '').toBe('');
    for (const p of [p1, p2]) await deleteProject(c, p);
  });

  it('idle: 20 healthy projects, full resync periods of 3 s, zero API writes after convergence', async () => {
    const run = uniqueName('idle');
    runs.push(run);
    const configFile = join(cluster().dir, `idle-${run}.yaml`);
    await writeFile(configFile, 'resyncPeriodSeconds: 3\n');
    const r = await start(`${run}-pod`, run, [`--config=${configFile}`]);
    await waitLeader(r);

    const names = Array.from({ length: 20 }, () => uniqueName('idlep'));
    await pool(names, 5, async (name) => {
      const p = await createProject(c, name, spec(), { [SELECTOR_LABEL]: run });
      await createProjectNamespace(c, p, `${name}-a`);
      await createProjectNamespace(c, p, `${name}-b`);
    });
    // Converged: every project Active with both namespaces Healthy and the quota usage reported.
    await eventually(
      async () => {
        for (const name of names) {
          const p = await getProject(c, name);
          const s = p?.status;
          if (
            s?.phase !== 'Active' ||
            s.namespaceCount !== 2 ||
            s.namespaces?.some((n) => n.health !== 'Healthy') ||
            s.used?.pods !== '0'
          ) {
            const quotas = await c.core.listNamespacedResourceQuota({ namespace: `${name}-a` });
            throw new Error(
              `${name} not converged: ${JSON.stringify(s?.namespaces)} used ${JSON.stringify(s?.used)}; quota in ${name}-a: ${JSON.stringify(quotas.items.map((q) => ({ rv: q.metadata?.resourceVersion, status: q.status })))}`,
            );
          }
        }
      },
      { what: 'all 20 projects converged', timeoutMs: 90_000, intervalMs: 500 },
    );
    await new Promise((r) => setTimeout(r, 2000));

    const before = await reconcileWrites(r);
    const reconcilesBefore = await reconcileCount(r);
    const versionsBefore = await storedVersions(names);
    await new Promise((r) => setTimeout(r, 10_000)); // three full resync periods and more
    const after = await reconcileWrites(r);
    // From the apiserver's side too: not one of the objects the controller manages has a new version.
    expect(await storedVersions(names)).toEqual(versionsBefore);
    const reconciles = (await reconcileCount(r)) - reconcilesBefore;
    console.log(
      `[controller-process] idle over 10 s: ${reconciles} reconciles, ${after.total - before.total} writes (excluding leases), ` +
        `${after.leases - before.leases} lease renewals; writes during convergence: ${JSON.stringify(before.all)}`,
    );
    expect(reconciles).toBeGreaterThanOrEqual(20 * 3); // the resyncs did run
    expect(after.total - before.total).toBe(0);
    expect(after.leases - before.leases).toBeLessThanOrEqual(3); // a renewal every 5 s

    await stopGracefully(r);
    await pool(names, 5, (name) => deleteProject(c, name));
  });
});
