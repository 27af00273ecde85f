/**
 * Q5 fails closed on a ledger it cannot read (src/ledger/ledger-format.ts; docs/design.md, "An unreadable
 * ledger"), on the real API server: the webhook (in this process, ledger on) admits a growth, a cluster
 * administrator edits the project's ledger ConfigMap into something that is no ledger (the reservations
 * cut short; the settled marks of the wrong type), and the next growth is refused with [Q5] naming the
 * ConfigMap, the data key and what is wrong, while the webhook leaves the ConfigMap as the edit left it.
 * Each of the two repairs docs/design.md gives (put back `reservations: "[]"` without `settled`; delete
 * the ConfigMap with its finalizer) makes growth decided again.
 */
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { LEDGER_PREFIX, type Project } from '../../src/validate/types.js';
import {
  applyOwnerBindings,
  installBase,
  startLocalWebhook,
  type LocalWebhook,
} from '../support/devcluster/tenantgate.js';
import { cluster, eventually, kubeConfig, kubectl, uniqueName } from '../support/cluster.js';
import { dropLedger } from '../support/ledger-reset.js';
import { removeProjects } from '../support/leftovers.js';

const PROJECT = uniqueName('lbad');
const NAMESPACE = `${PROJECT}-a`;
const LEDGER = `${LEDGER_PREFIX}${PROJECT}`;
const SYSTEM = DEFAULT_CONFIG.systemNamespace;

let hook: LocalWebhook | undefined;
const core = (user: string) => kubeConfig(user).makeApiClient(k8s.CoreV1Api);

/** alice sets quota q1's CPU; the refusal's message, or undefined when admitted. */
async function setCpu(cpu: string): Promise<string | undefined> {
  const body = { metadata: { name: 'q1' }, spec: { hard: { 'requests.cpu': cpu } } };
  const alice = core('alice');
  try {
    const existing = await alice
      .readNamespacedResourceQuota({ namespace: NAMESPACE, name: 'q1' })
      .catch(() => undefined);
    if (existing)
      await alice.replaceNamespacedResourceQuota({
        namespace: NAMESPACE,
        name: 'q1',
        body: { ...existing, spec: body.spec },
      });
    else await alice.createNamespacedResourceQuota({ namespace: NAMESPACE, body });
    return undefined;
  } catch (err) {
    const body = (err as { body?: unknown }).body;
    // The API server's Status: its message is the webhook's refusal.
    return typeof body === 'string' ? (JSON.parse(body) as { message: string }).message : String(err);
  }
}

const ledger = () => core('admin').readNamespacedConfigMap({ namespace: SYSTEM, name: LEDGER });
const storedCpu = async () =>
  (await core('admin').readNamespacedResourceQuota({ namespace: NAMESPACE, name: 'q1' })).spec?.hard?.['requests.cpu'];

/** The administrator's hand edit of the ledger's data (a merge patch: null removes a key). */
const editLedger = (data: Record<string, string | null>) =>
  kubectl('admin', ['-n', SYSTEM, 'patch', 'configmap', LEDGER, '--type=merge', '-p', JSON.stringify({ data })]);

beforeAll(async () => {
  const info = cluster();
  await installBase(info);
  const project = {
    apiVersion: 'tenantgate.io/v1alpha1',
    kind: 'Project',
    metadata: { name: PROJECT },
    spec: { tenant: 'acme', owners: [{ kind: 'User', name: 'alice' }], quota: { hard: { 'requests.cpu': '4' } } },
  };
  await kubectl('admin', ['apply', '-f', '-'], { input: JSON.stringify(project) });
  await kubectl('admin', ['apply', '-f', '-'], {
    input: JSON.stringify({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: NAMESPACE, labels: { 'tenantgate.io/project': PROJECT, 'tenantgate.io/tenant': 'acme' } },
    }),
  });
  await applyOwnerBindings(info, project as unknown as Project, [NAMESPACE]);
  hook = await startLocalWebhook(info, { crossReplicaReservation: true, ledgerSettlement: true });
  await eventually(async () => expect(hook!.webhook.cache.snapshot.namespace(NAMESPACE)).toBeDefined(), {
    what: `namespace ${NAMESPACE} in the webhook's cache`,
  });
}, 300_000);

afterAll(async () => {
  await hook?.stop();
  await removeProjects([PROJECT], { cascadeMs: 0 });
  await dropLedger(LEDGER, SYSTEM);
});

describe('an unreadable headroom ledger (Q5 fails closed)', () => {
  it('refuses growth with [Q5] naming the ConfigMap, the key and the problem; each documented repair lets growth through again', async () => {
    expect(await setCpu('1')).toBeUndefined();
    expect(JSON.parse((await ledger()).data?.reservations ?? 'null')).not.toEqual([]);

    // The reservations cut short, as a truncated hand edit leaves them.
    const reservations = (await ledger()).data!.reservations!;
    await editLedger({ reservations: reservations.slice(0, -1) });
    const refused = await setCpu('2');
    expect(refused).toContain(
      `[Q5] project ${PROJECT}: the headroom ledger cannot be read (ConfigMap ${SYSTEM}/${LEDGER}, data key reservations: not JSON (`,
    );
    expect(refused).toContain(
      'until an operator repairs it (docs/design.md, "An unreadable ledger"); nothing was reserved',
    );
    expect(await storedCpu()).toBe('1');
    // The webhook wrote nothing over it: the edit is as the administrator left it.
    expect((await ledger()).data?.reservations).toBe(reservations.slice(0, -1));

    // Repair 1: reservations put back empty, no settled marks.
    await editLedger({ reservations: '[]', settled: null });
    expect(await setCpu('2')).toBeUndefined();
    expect(await storedCpu()).toBe('2');

    // Settled marks of the wrong type.
    await editLedger({ settled: '{"Namespace":1,"ResourceQuota":"1"}' });
    const refusedAgain = await setCpu('3');
    expect(refusedAgain).toContain(
      `[Q5] project ${PROJECT}: the headroom ledger cannot be read (ConfigMap ${SYSTEM}/${LEDGER}, data key settled: settled.Namespace is 1, allowed: a resourceVersion (decimal digits))`,
    );
    expect(await storedCpu()).toBe('2');

    // Repair 2: the ConfigMap deleted with its finalizer; the next growth starts a new ledger.
    await dropLedger(LEDGER, SYSTEM);
    expect(await setCpu('3')).toBeUndefined();
    expect(await storedCpu()).toBe('3');
    // And the budget still holds: 5 CPUs of 4 is refused by Q1, not Q5.
    expect(await setCpu('5')).toMatch(/\[Q1\]/);
  }, 120_000);
});
