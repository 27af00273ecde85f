/**
 * The webhook's and the controller's API clients (src/kube/kubeconfig.ts) reuse their connection to
 * the real apiserver instead of a new TCP + TLS connection per call (client-node 2.0's default).
 */
import * as k8s from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { loadKubeConfig } from '../../src/kube/kubeconfig.js';
import { cluster } from '../support/cluster.js';
import { localPortsOfRequestsTo } from '../support/connections.js';

describe('API clients of tenantgate webhook and controller', () => {
  it('make 100 calls over at most 2 connections, and still authenticate every call', async () => {
    const core = loadKubeConfig(cluster().kubeconfigs.admin!).makeApiClient(k8s.CoreV1Api);
    const { localPorts } = await localPortsOfRequestsTo(Number(new URL(cluster().server).port), async () => {
      for (let i = 0; i < 100; i++) await core.readNamespace({ name: 'default' });
    });
    // Every call was seen; a client with a new connection per call would show up to 100 local ports.
    expect(localPorts).toHaveLength(100);
    expect(new Set(localPorts).size).toBeLessThanOrEqual(2);

    // The reused connection does not carry one user's identity to another's client.
    const nobody = loadKubeConfig(cluster().kubeconfigs.nobody!).makeApiClient(k8s.CoreV1Api);
    await expect(nobody.readNamespace({ name: 'default' })).rejects.toMatchObject({ code: 403 });
    await expect(core.readNamespace({ name: 'default' })).resolves.toMatchObject({ metadata: { name: 'default' } });
  });
});
