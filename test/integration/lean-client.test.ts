/**
 * The headroom ledger's lean client (src/kube/lean-client.ts) and the ConfigMap ledger on it, against
 * the real apiserver: one keep-alive connection, the apiserver's 404/409 as the errors the ledger
 * reads, compare-and-swap semantics, and credentials asked again after a 401.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { isConflict, isNotFound } from '../../src/kube/errors.js';
import { ApiStatusError, LeanApiClient } from '../../src/kube/lean-client.js';
import { ConfigMapLedger, LEDGER_FINALIZER, LedgerConflict, type LedgerChange } from '../../src/ledger/ledger.js';
import { dropLedger } from '../support/ledger-reset.js';
import { installBase, serviceAccountKubeConfig } from '../support/devcluster/tenantgate.js';
import { cluster, eventually, kubeConfig, kubectl, uniqueName } from '../support/cluster.js';
import { localPortsOfRequestsTo } from '../support/connections.js';

beforeAll(async () => {
  await installBase(cluster()); // the webhook's ServiceAccount and its RBAC on the ledger
}, 180_000);

const entry = (namespace: string, cpu: string) => ({
  namespace,
  allocation: { 'requests.cpu': cpu },
  created: Date.now(),
  expires: Date.now() + 60_000,
});

describe('the lean API client', () => {
  it('makes 100 calls over one connection; a missing object is a 404 the ledger reads as not found', async () => {
    const api = new LeanApiClient(kubeConfig('admin'));
    const { localPorts } = await localPortsOfRequestsTo(Number(new URL(cluster().server).port), async () => {
      for (let i = 0; i < 100; i++) await api.call('GET', '/api/v1/namespaces/default');
    });
    // Every call was seen, and all went over the same connection (one local port).
    expect(localPorts).toHaveLength(100);
    expect(new Set(localPorts).size).toBe(1);
    const missing = await api
      .call('GET', '/api/v1/namespaces/default/configmaps/does-not-exist')
      .catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(ApiStatusError);
    expect(isNotFound(missing)).toBe(true);
    expect((missing as Error).message).toMatch(/configmaps "does-not-exist" not found/);
    api.close();
  });

  it('asks the kubeconfig again after a 401: a token replaced in the kubeconfig is used on the next call', async () => {
    const kc = await serviceAccountKubeConfig(cluster(), 'tenantgate-system', 'tenantgate-webhook');
    const good = kc.getCurrentUser()!.token!;
    (kc.getCurrentUser() as { token?: string }).token = 'not-a-token';
    const api = new LeanApiClient(kc);
    const refused = await api.call('GET', '/api/v1/namespaces?limit=1').catch((e: unknown) => e);
    expect((refused as ApiStatusError).statusCode).toBe(401);
    (kc.getCurrentUser() as { token?: string }).token = good;
    await expect(api.call('GET', '/api/v1/namespaces?limit=1')).resolves.toMatchObject({ kind: 'NamespaceList' });
    api.close();
  });
});

describe('the ConfigMap ledger on it, as the webhook ServiceAccount', () => {
  it('creates, reads and compare-and-swaps; a stale write is a LedgerConflict and changes nothing', async () => {
    const project = uniqueName('lean');
    const ledger = new ConfigMapLedger(
      await serviceAccountKubeConfig(cluster(), 'tenantgate-system', 'tenantgate-webhook'),
      'tenantgate-system',
    );
    try {
      expect(await ledger.read(project)).toEqual({ entries: [] });
      const first = await ledger.write(project, { entries: [] }, [entry(`${project}-a`, '1')]);
      expect(first.resourceVersion).toMatch(/^\d+$/);
      const read = await ledger.read(project);
      expect(read).toEqual(first);
      const second = await ledger.write(project, read, [...read.entries, entry(`${project}-b`, '2')]);
      // A writer that still holds the first version loses.
      const stale = await ledger.write(project, first, [entry(`${project}-c`, '3')]).catch((e: unknown) => e);
      expect(stale).toBeInstanceOf(LedgerConflict);
      expect(await ledger.read(project)).toEqual(second);
      // Creating it again (no resourceVersion) is a conflict too.
      const again = await ledger.write(project, { entries: [] }, []).catch((e: unknown) => e);
      expect(again).toBeInstanceOf(LedgerConflict);
      const stored = JSON.parse(
        (
          await kubectl('admin', [
            '-n',
            'tenantgate-system',
            'get',
            'configmap',
            `tenantgate-ledger-${project}`,
            '-o',
            'json',
          ])
        ).stdout,
      ) as { metadata: { labels: Record<string, string> }; data: { reservations: string } };
      expect(stored.metadata.labels).toMatchObject({
        'app.kubernetes.io/managed-by': 'tenantgate',
        'tenantgate.io/project': project,
      });
      expect(JSON.parse(stored.data.reservations).map((e: { namespace: string }) => e.namespace)).toEqual([
        `${project}-a`,
        `${project}-b`,
      ]);
      expect(isConflict(again)).toBe(false); // the ledger's own error type, not the raw 409
      expect(
        JSON.parse(
          (
            await kubectl('admin', [
              '-n',
              'tenantgate-system',
              'get',
              'configmap',
              `tenantgate-ledger-${project}`,
              '-o',
              'jsonpath={.metadata.finalizers}',
            ])
          ).stdout,
        ),
      ).toEqual([LEDGER_FINALIZER]);
      // Deleted (kubectl delete): the finalizer keeps it, marked, readable and writable.
      await kubectl('admin', [
        '-n',
        'tenantgate-system',
        'delete',
        'configmap',
        `tenantgate-ledger-${project}`,
        '--wait=false',
      ]);
      const marked = await ledger.read(project);
      expect(marked.deleting).toBe(true);
      expect(marked.entries.map((e) => e.namespace)).toEqual([`${project}-a`, `${project}-b`]);
      const kept = await ledger.write(project, marked, [...marked.entries, entry(`${project}-c`, '1')]);
      expect(kept.deleting).toBe(true);
      // Released (the guard does that once nothing in it is live): gone. A writer holding the old state
      // gets a conflict, so the guard reads again and creates it.
      await expect(ledger.release(project, marked)).rejects.toBeInstanceOf(LedgerConflict);
      await ledger.release(project, kept);
      const gone = await ledger.write(project, kept, [entry(`${project}-d`, '1')]).catch((e: unknown) => e);
      expect(gone).toBeInstanceOf(LedgerConflict);
      const fresh = await ledger.read(project);
      expect(fresh).toEqual({ entries: [] });
      expect((await ledger.write(project, fresh, [entry(`${project}-d`, '1')])).resourceVersion).toMatch(/^\d+$/);
    } finally {
      ledger.close();
      await dropLedger(`tenantgate-ledger-${project}`);
    }
  });
});

describe("the ConfigMap ledger's watch, as the webhook ServiceAccount", () => {
  /** A writer and a watcher of one new project's ledger, both as the webhook's ServiceAccount; the changes the watcher was told of. */
  async function writerAndWatcher(prefix: string) {
    const project = uniqueName(prefix);
    const kc = () => serviceAccountKubeConfig(cluster(), 'tenantgate-system', 'tenantgate-webhook');
    const writer = new ConfigMapLedger(await kc(), 'tenantgate-system');
    const watcher = new ConfigMapLedger(await kc(), 'tenantgate-system');
    const seen: LedgerChange[] = [];
    watcher.subscribe((change) => seen.push(change));
    return { project, writer, watcher, seen, ofProject: () => seen.filter((c) => c.project === project) };
  }

  it("tells a subscriber of another writer's writes (version and entries) and of the deletion, and nothing of other ConfigMaps", async () => {
    const { project, writer, watcher, seen, ofProject } = await writerAndWatcher('watched');
    try {
      // The watch starts from the current version: wait until it is connected (a write lands in it).
      await eventually(
        async () => {
          await writer.write(project, await writer.read(project), []);
          expect(ofProject().length).toBeGreaterThan(0);
        },
        { timeoutMs: 15_000, what: 'the watch to connect' },
      );
      const before = ofProject().length;
      const written = await writer.write(project, await writer.read(project), [entry(`${project}-a`, '2')]);
      await eventually(async () => expect(ofProject().length).toBe(before + 1), {
        timeoutMs: 15_000,
        what: 'the write on the watch',
      });
      const change = ofProject().at(-1)!;
      expect('deleted' in change).toBe(false);
      if (!('deleted' in change)) {
        expect(change.resourceVersion).toBe(written.resourceVersion);
        expect(change.state()?.entries.map((e) => [e.namespace, e.allocation])).toEqual([
          [`${project}-a`, { 'requests.cpu': '2' }],
        ]);
      }
      // A ConfigMap that is no ledger, in the same namespace: not delivered.
      await kubectl('admin', [
        '-n',
        'tenantgate-system',
        'create',
        'configmap',
        `${project}-other`,
        '--from-literal=a=b',
      ]);
      await kubectl('admin', ['-n', 'tenantgate-system', 'delete', 'configmap', `${project}-other`]);
      // Deleted and its finalizer released: the subscriber is told.
      await kubectl('admin', [
        '-n',
        'tenantgate-system',
        'delete',
        'configmap',
        `tenantgate-ledger-${project}`,
        '--wait=false',
      ]);
      await writer.release(project, await writer.read(project));
      await eventually(async () => expect(ofProject().some((c) => 'deleted' in c)).toBe(true), {
        timeoutMs: 15_000,
        what: 'the deletion on the watch',
      });
      expect(seen.every((c) => c.project !== `${project}-other` && !c.project.startsWith(`${project}-`))).toBe(true);
    } finally {
      watcher.close();
      writer.close();
      await dropLedger(`tenantgate-ledger-${project}`);
    }
  });

  it('an announcement moves the version and keeps the entries, whatever the version; the watch says it is one; the next write is not', async () => {
    const { project, writer, watcher, ofProject } = await writerAndWatcher('announced');
    try {
      expect(await writer.announce(project), 'no ledger: nothing to announce').toBeUndefined();
      await eventually(
        async () => {
          await writer.write(project, await writer.read(project), [entry(`${project}-a`, '2')]);
          expect(ofProject().length).toBeGreaterThan(0);
        },
        { timeoutMs: 15_000, what: 'the watch to connect' },
      );
      const stale = await writer.read(project);
      const announced = (await writer.announce(project))!;
      expect(BigInt(announced.resourceVersion!)).toBeGreaterThan(BigInt(stale.resourceVersion!));
      expect(announced.entries.map((e) => e.namespace)).toEqual([`${project}-a`]);
      // A second one at once moves it again (whatever the version in hand).
      const again = (await writer.announce(project))!;
      expect(BigInt(again.resourceVersion!)).toBeGreaterThan(BigInt(announced.resourceVersion!));
      // A write decided before the announcement loses its compare-and-swap.
      await expect(writer.write(project, stale, [])).rejects.toBeInstanceOf(LedgerConflict);
      const written = await writer.write(project, again, [entry(`${project}-b`, '1')]);
      await eventually(
        async () =>
          expect(ofProject().some((c) => !('deleted' in c) && c.resourceVersion === written.resourceVersion)).toBe(
            true,
          ),
        { timeoutMs: 15_000, what: 'the write on the watch' },
      );
      const byVersion = new Map(
        ofProject().flatMap((c) => ('deleted' in c ? [] : [[c.resourceVersion, c.announced === true] as const])),
      );
      expect([
        byVersion.get(announced.resourceVersion!),
        byVersion.get(again.resourceVersion!),
        byVersion.get(written.resourceVersion!),
      ]).toEqual([true, true, false]);
    } finally {
      watcher.close();
      writer.close();
      await dropLedger(`tenantgate-ledger-${project}`);
    }
  });

  it('resumes when the apiserver ends each watch (every second here) and still delivers every later write', async () => {
    const project = uniqueName('resumed');
    const kc = () => serviceAccountKubeConfig(cluster(), 'tenantgate-system', 'tenantgate-webhook');
    const writer = new ConfigMapLedger(await kc(), 'tenantgate-system');
    const logged: string[] = [];
    const watcher = new ConfigMapLedger(await kc(), 'tenantgate-system', (m) => logged.push(m), 1);
    const versions: string[] = [];
    watcher.subscribe((change) => {
      if (change.project === project && !('deleted' in change)) versions.push(change.resourceVersion);
    });
    try {
      await eventually(
        async () => {
          await writer.write(project, await writer.read(project), []);
          expect(versions.length).toBeGreaterThan(0);
        },
        { timeoutMs: 15_000, what: 'the watch to connect' },
      );
      const written: string[] = [];
      for (let i = 0; i < 4; i++) {
        await new Promise((r) => setTimeout(r, 1200)); // past the watch's end: the next write lands in a resumed one
        written.push(
          (await writer.write(project, await writer.read(project), [entry(`${project}-${i}`, String(i + 1))]))
            .resourceVersion!,
        );
      }
      await eventually(async () => expect(versions).toEqual(expect.arrayContaining(written)), {
        timeoutMs: 15_000,
        what: 'every write on the resumed watches',
      });
      expect(watcher.watchesBegun).toBeGreaterThanOrEqual(4);
      expect(logged.filter((m) => /ledger watch/.test(m))).toEqual([]);
    } finally {
      watcher.close();
      writer.close();
      await dropLedger(`tenantgate-ledger-${project}`);
    }
  });
});
