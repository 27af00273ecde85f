/**
 * Bursts (docs/budgets.md#bursts) on the real control plane: a `tenantgate webhook` process and the
 * controller decide at a clock the test moves (TENANTGATE_TEST_CLOCK_FILE, read by the test entry test/support/test-clock/cli.ts:
 * the file's instant plus the real time since it was written), so a two-day burst starts and ends in
 * seconds. The test puts the clock two seconds before `from` and `until` and lets the controller's
 * requeue at the next transition do the rest (its resync is an hour). Before `from` a growth beyond the budget is refused
 * [Q1]; inside the window it is admitted and the controller raises the namespace's quota; after
 * `until` the controller lowers it, never below what its pods use (condition, Event and metric say
 * what runs above), and fully once the pods are gone; the self-service namespace alice raised inside the
 * project-wide burst gives back what it does not use, so the project comes back within its budget as
 * far as usage allows (the rest said by condition and Event); the ended burst cannot be changed [B2].
 */
import * as k8s from '@kubernetes/client-node';
import { writeFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateWebhookCerts } from '../../src/certs/files.js';
import { setProcessClock, getProcessClock, type Clock } from '../../src/clock.js';
import { fileClock, TEST_CLOCK_ENV } from '../support/test-clock/file-clock.js';
import { TEST_CLOCK_CLI } from '../support/test-clock/cli.js';
import { startController, type RunningController } from '../../src/controller/controller.js';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { installBase, serviceAccountKubeConfig } from '../support/devcluster/tenantgate.js';
import { startWebhookReplicas, type WebhookReplicas } from '../support/devcluster/replicas.js';
import { cluster, eventually, kubectl, kubeConfig } from '../support/cluster.js';
import { removeProjects } from '../support/leftovers.js';
import type { Project, ProjectCondition } from '../../src/validate/types.js';

const OWNERS = [{ kind: 'Group', name: 'acme:payments-admins' }];
const GUARD = 'tenantgate-quota';
const NAME = 'bst';
const SERVING = 'bst-serving';
const BATCH = 'bst-batch';

const BEFORE = '2026-11-30T00:00:00Z';
const JUST_BEFORE_FROM = '2026-11-30T23:59:58Z';
const JUST_BEFORE_UNTIL = '2026-12-02T23:59:58Z';
const AFTER = '2026-12-04T00:00:00Z';

const bursts = (until = '2026-12-03T00:00:00Z') => [
  {
    name: 'peak',
    from: '2026-12-01T00:00:00Z',
    until,
    reason: 'e2e: the serving peak',
    quota: { hard: { 'requests.cpu': '4' } },
    namespace: SERVING,
  },
  {
    name: 'batch-peak',
    from: '2026-12-01T00:00:00Z',
    until: '2026-12-03T00:00:00Z',
    reason: 'e2e: room for batch',
    quota: { hard: { 'requests.cpu': '2' } },
  },
];
const spec = (until?: string) => ({
  tenant: 'acme',
  owners: OWNERS,
  quota: { hard: { 'requests.cpu': '4', pods: '20' } },
  namespaceDefaults: { quota: { hard: { 'requests.cpu': '1', pods: '5' } } },
  namespaces: [{ name: SERVING, quota: { hard: { 'requests.cpu': '2', pods: '10' } } }],
  bursts: bursts(until),
});

let webhooks: WebhookReplicas;
let controller: RunningController;
let controllerClock: Clock;
let clockFile: string;
const previousClock = getProcessClock();
const core = () => kubeConfig('admin').makeApiClient(k8s.CoreV1Api);

/**
 * Moves every process's clock (written whole, then renamed: a reader never sees half an instant) and
 * waits until each has read it: the controller's clock (this process) and the webhook process's, whose
 * `now` a dry run reads back (B2 names it when a burst that has already ended is added).
 */
async function setClock(instant: string): Promise<void> {
  await writeFile(`${clockFile}.tmp`, `${instant}\n`);
  await rename(`${clockFile}.tmp`, clockFile);
  const at = Date.parse(instant);
  const read = (now: number) => now >= at && now < at + 60_000;
  await eventually(async () => expect(read(controllerClock.now()), 'the controller read the clock').toBe(true), {
    what: `the controller at ${instant}`,
  });
  await eventually(async () => expect(read(await webhookNow()), 'the webhook read the clock').toBe(true), {
    what: `the webhook at ${instant}`,
  });
}

/** The webhook process's now: a server-side dry run adding a burst that ended long ago, refused [B2] "(now …)". */
async function webhookNow(): Promise<number> {
  const current = await project();
  const ended = {
    name: 'clock-probe',
    from: '1999-12-31T00:00:00Z',
    until: '2000-01-01T00:00:00Z',
    reason: 'probe',
    quota: { hard: { 'requests.cpu': '1' } },
  };
  const body = { ...current, spec: { ...current.spec, bursts: [...(current.spec.bursts ?? []), ended] } };
  const refused = await kubectl('admin', ['replace', '--dry-run=server', '-f', '-'], {
    input: JSON.stringify(body),
    reject: false,
  });
  const now =
    /\[B2\] Project bst: spec\.bursts\[\d+\] \(clock-probe\): until 2000-01-01T00:00:00Z has passed \(now ([^)]+)\)/.exec(
      refused.stderr,
    );
  if (!now) throw new Error(`no [B2] naming the webhook's now: ${refused.stderr}`);
  return Date.parse(now[1]!);
}

/** One write to the Project, so the controller reconciles it now (and computes its requeue from the new clock). */
async function poke(value: string): Promise<void> {
  await kubectl('admin', ['annotate', '--overwrite', 'project', NAME, `e2e.tenantgate.io/poke=${value}`]);
}

async function hardOf(
  namespace: string,
): Promise<{ hard: Record<string, string>; annotations: Record<string, string> }> {
  const q = await core().readNamespacedResourceQuota({ namespace, name: GUARD });
  return { hard: (q.spec?.hard ?? {}) as Record<string, string>, annotations: q.metadata?.annotations ?? {} };
}

async function project(): Promise<Project> {
  return JSON.parse((await kubectl('admin', ['get', 'project', NAME, '-o', 'json'])).stdout) as Project;
}
const condition = (p: Project, type: string): ProjectCondition | undefined =>
  p.status?.conditions?.find((c) => c.type === type);

const pod = (name: string, cpu: string) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name },
  spec: {
    containers: [
      { name: 'pause', image: 'registry.k8s.io/pause:3.10', resources: { requests: { cpu }, limits: { cpu } } },
    ],
  },
});

beforeAll(async () => {
  const info = cluster();
  clockFile = join(info.dir, 'bursts-clock');
  await writeFile(clockFile, `${BEFORE}\n`);
  await installBase(info);
  const certs = await generateWebhookCerts(join(info.dir, 'bursts-certs'));
  // The webhook process starts through the test entry, which reads the clock from the file the variable names (inherited).
  process.env[TEST_CLOCK_ENV] = clockFile;
  webhooks = await startWebhookReplicas(
    info,
    certs,
    {},
    { name: 'bursts-webhook', count: 1, nodeArgs: ['--import', 'tsx', TEST_CLOCK_CLI] },
  );
  delete process.env[TEST_CLOCK_ENV];
  // The controller runs in this process: the same file is its clock. No resync within the test: only events and its requeue at a burst's start or end.
  const clock = fileClock(clockFile);
  controllerClock = clock;
  setProcessClock(clock);
  controller = await startController({
    kubeConfig: await serviceAccountKubeConfig(info, 'tenantgate-system', 'tenantgate-controller'),
    config: { ...DEFAULT_CONFIG, resyncPeriodSeconds: 3600 },
    leaderElection: false,
    clock,
    log: (m) => {
      if (process.env.TG_DEBUG) process.stderr.write(`[controller] ${m}\n`);
    },
  });
}, 300_000);

afterAll(async () => {
  // While the controller runs, so that its finalizer takes the namespaces with the Project.
  await removeProjects([NAME]);
  await controller?.stop();
  await webhooks?.stop();
  setProcessClock(previousClock);
});

describe('a burst on the real control plane, on a test clock', () => {
  it('refused before from [Q1]; admitted in the window and the quota raised; lowered at until but not below usage; fully once the pods are gone; the ended burst unchangeable [B2]', async () => {
    // The Project, its declared namespace (quota from the controller) and a self-service one.
    const applied = await kubectl('admin', ['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'tenantgate.io/v1alpha1',
        kind: 'Project',
        metadata: { name: NAME },
        spec: spec(),
      }),
      reject: false,
    });
    expect(applied.exitCode, applied.stderr).toBe(0);
    for (const ns of [SERVING, BATCH]) {
      await eventually(
        async () => {
          const made = await kubectl('alice', ['create', 'namespace', ns], { reject: false });
          if (made.exitCode !== 0 && !made.stderr.includes('AlreadyExists')) throw new Error(made.stderr);
        },
        { what: `alice creates ${ns}` },
      );
      await eventually(async () => expect(Object.keys((await hardOf(ns)).hard).length).toBeGreaterThan(0), {
        what: `${ns}: quota from the controller`,
      });
    }
    expect((await hardOf(SERVING)).hard).toEqual({ 'requests.cpu': '2', pods: '10' });

    // Before from: the budget is 4 (serving 2, batch 1): batch to 3 would make 5.
    const early = await kubectl(
      'alice',
      ['-n', BATCH, 'patch', 'quota', GUARD, '--type=merge', '-p', '{"spec":{"hard":{"requests.cpu":"3"}}}'],
      { reject: false },
    );
    expect(early.exitCode).not.toBe(0);
    expect(early.stderr).toContain(
      '[Q1] ResourceQuota bst-batch/tenantgate-quota asks requests.cpu 3, project bst has 4 of which 2 are allocated to other namespaces: at most 2 fits',
    );

    // Two seconds before from, a reconcile requeues at from; then the budget is 4 + 4 + 2 = 10, the
    // controller raises serving to 2 + 4, and batch may grow to 3.
    await setClock(JUST_BEFORE_FROM);
    await poke('before-from');
    await eventually(
      async () => {
        const q = await hardOf(SERVING);
        expect(q.hard['requests.cpu']).toBe('6');
        expect(q.annotations['tenantgate.io/burst-raised']).toBe('requests.cpu');
      },
      { what: 'serving raised to 6 CPU', timeoutMs: 30_000 },
    );
    const grown = await kubectl(
      'alice',
      ['-n', BATCH, 'patch', 'quota', GUARD, '--type=merge', '-p', '{"spec":{"hard":{"requests.cpu":"3"}}}'],
      { reject: false },
    );
    expect(grown.exitCode, grown.stderr).toBe(0);
    await eventually(
      async () => expect(condition(await project(), 'BurstEnded')).toMatchObject({ status: 'False', reason: 'Active' }),
      { what: 'BurstEnded: Active' },
    );
    const endsIn =
      /tenantgate_project_burst_ends_in_seconds\{project="bst",tenant="acme",cluster="",burst="peak"\} ([0-9.e+]+)/.exec(
        await controller.metrics.registry.getSingleMetricAsString('tenantgate_project_burst_ends_in_seconds'),
      );
    expect(Number(endsIn?.[1])).toBeGreaterThan(172_700); // two days less the seconds since from
    expect(Number(endsIn?.[1])).toBeLessThanOrEqual(172_800);
    const managers = (
      await core().readNamespacedResourceQuota({ namespace: SERVING, name: GUARD })
    ).metadata?.managedFields?.map((f) => f.manager);
    expect(managers).toContain('tenantgate-burst'); // what Argo CD's ignoreDifferences names (docs/argocd.md)

    // Pods use 5 CPU of serving's 6 (they count at creation; no scheduler needed).
    for (const [name, cpu] of [
      ['web-1', '3'],
      ['web-2', '2'],
    ] as const) {
      const created = await kubectl('alice', ['-n', SERVING, 'create', '-f', '-'], {
        input: JSON.stringify(pod(name, cpu)),
        reject: false,
      });
      expect(created.exitCode, created.stderr).toBe(0);
    }
    await eventually(
      async () =>
        expect(
          (await core().readNamespacedResourceQuota({ namespace: SERVING, name: GUARD })).status?.used?.[
            'requests.cpu'
          ],
        ).toBe('5'),
      { what: 'serving uses 5 CPU' },
    );

    // Two seconds before until, a reconcile requeues at until; then the quota is lowered to what is
    // used (5), not to the declared 2, and a condition, an Event and a metric say so.
    await setClock(JUST_BEFORE_UNTIL);
    await poke('before-until');
    await eventually(async () => expect((await hardOf(SERVING)).hard['requests.cpu']).toBe('5'), {
      what: 'serving held at its usage',
      timeoutMs: 30_000,
    });
    const above = await eventually(
      async () => {
        const c = condition(await project(), 'BurstEnded');
        expect(c).toMatchObject({ status: 'True', reason: 'UsageAboveQuota' });
        return c!;
      },
      { what: 'BurstEnded: UsageAboveQuota' },
    );
    // The project-wide burst (batch-peak) ended too: the budget is 4 again, but serving holds 5 and batch
    // the 3 alice raised it to inside the burst. Batch gives back what it does not use down to its
    // declaration (namespaceDefaults: 1); the 2 still above the budget are serving's pods, said so.
    expect((await hardOf(BATCH)).hard['requests.cpu']).toBe('1');
    // Refused against the restored budget (4), of which serving's pods hold 5 already.
    const past = await kubectl(
      'alice',
      ['-n', BATCH, 'patch', 'quota', GUARD, '--type=merge', '-p', '{"spec":{"hard":{"requests.cpu":"2"}}}'],
      { reject: false },
    );
    expect(past.exitCode).not.toBe(0);
    expect(past.stderr).toContain(
      '[Q1] ResourceQuota bst-batch/tenantgate-quota asks requests.cpu 2, project bst has 4 of which 5 are allocated to other namespaces',
    );
    const aboveServing =
      'bst-serving uses requests.cpu 5, declared 2: its quota stays at 5 until usage allows lowering it';
    expect(above.message).toBe(
      `a burst has ended but ${aboveServing}; the project still allocates more than its budget: requests.cpu: 6 allocated, budget 4 (bst-serving uses 5); quotas are lowered as usage falls`,
    );
    const eventsOf = async (reason: string) =>
      (
        JSON.parse(
          (
            await kubectl('admin', [
              '-n',
              'default',
              'get',
              'events',
              '--field-selector',
              `involvedObject.name=${NAME},reason=${reason}`,
              '-o',
              'json',
            ])
          ).stdout,
        ) as { items: Array<{ type: string; message: string }> }
      ).items.map((e) => `${e.type}: ${e.message}`);
    await eventually(
      async () => {
        expect(await eventsOf('BurstEndedAboveQuota')).toContain(`Warning: a burst has ended but ${aboveServing}`);
        expect(await eventsOf('BurstBudgetRestored')).toContain(
          'Normal: lowered ResourceQuota bst-batch/tenantgate-quota to bring the project within its budget after its bursts ended: bst-batch gives back requests.cpu 2 (3 → 1)',
        );
        expect(await eventsOf('OverBudgetAfterBurst')).toContain(
          'Warning: its bursts have ended but the project still allocates more than its budget: requests.cpu: 6 allocated, budget 4 (bst-serving uses 5); quotas are lowered further as usage falls',
        );
      },
      { what: 'Events BurstEndedAboveQuota, BurstBudgetRestored, OverBudgetAfterBurst' },
    );
    const metric = await controller.metrics.registry.getSingleMetricAsString(
      'tenantgate_project_over_budget_after_burst',
    );
    expect(metric).toContain(
      `tenantgate_project_over_budget_after_burst{project="bst",tenant="acme",cluster="",namespace="bst-serving",resource="requests.cpu"} 3`,
    );
    expect(await controller.metrics.registry.getSingleMetricAsString('tenantgate_project_burst_active')).toContain(
      'tenantgate_project_burst_active{project="bst",tenant="acme",cluster="",burst="peak"} 0',
    );

    // The pods go: lowered to the declaration, the mark removed, the condition says so.
    await kubectl('alice', ['-n', SERVING, 'delete', 'pods', '--all', '--wait=false']);
    await eventually(
      async () => {
        const q = await hardOf(SERVING);
        expect(q.hard['requests.cpu']).toBe('2');
        expect(q.annotations['tenantgate.io/burst-raised']).toBeUndefined();
      },
      { what: 'serving back at 2 CPU', timeoutMs: 60_000 },
    );
    await eventually(
      async () => expect(condition(await project(), 'BurstEnded')).toMatchObject({ status: 'True', reason: 'Lowered' }),
      { what: 'BurstEnded: Lowered' },
    );
    // The budget is 4 again: serving 2, batch 1; batch to 3 would make 5, refused as before the burst.
    const after = await kubectl(
      'alice',
      ['-n', BATCH, 'patch', 'quota', GUARD, '--type=merge', '-p', '{"spec":{"hard":{"requests.cpu":"3"}}}'],
      { reject: false },
    );
    expect(after.exitCode).not.toBe(0);
    expect(after.stderr).toContain(
      '[Q1] ResourceQuota bst-batch/tenantgate-quota asks requests.cpu 3, project bst has 4 of which 2 are allocated to other namespaces: at most 2 fits',
    );

    // The ended burst cannot be changed (its until moved into the future) [B2]; re-applying it unchanged is fine.
    await setClock(AFTER);
    const extended = await kubectl('admin', ['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'tenantgate.io/v1alpha1',
        kind: 'Project',
        metadata: { name: NAME },
        spec: spec('2026-12-10T00:00:00Z'),
      }),
      reject: false,
    });
    expect(extended.exitCode).not.toBe(0);
    expect(extended.stderr).toContain(
      '[B2] Project bst: spec.bursts[0] (peak) ended at 2026-12-03T00:00:00Z and cannot be changed (now 2026-12-04T00:00:',
    );
    const same = await kubectl('admin', ['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'tenantgate.io/v1alpha1',
        kind: 'Project',
        metadata: { name: NAME },
        spec: spec(),
      }),
      reject: false,
    });
    expect(same.exitCode, same.stderr).toBe(0);
  });
});
