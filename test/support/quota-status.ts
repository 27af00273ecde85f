/**
 * A namespace's ResourceQuota as the apiserver stores it, and its `status.used` as the quota controller
 * reports it (e2e tests: kube-controller-manager's quota controller runs in the harness's control plane).
 */
import { expect } from 'vitest';
import { eventually, kubectl } from './cluster.js';

/** The controller's default quota (docs/budgets.md). */
export const DEFAULT_QUOTA_NAME = 'tenantgate-quota';

export interface QuotaJson {
  spec: { hard: Record<string, string> };
  status?: { hard?: Record<string, string>; used?: Record<string, string> };
}

/** The quota `name` (default: the controller's default quota) of `namespace`, read as admin. */
export async function quotaObject(namespace: string, name = DEFAULT_QUOTA_NAME): Promise<QuotaJson> {
  return JSON.parse(
    (await kubectl('admin', ['-n', namespace, 'get', 'resourcequota', name, '-o', 'json'])).stdout,
  ) as QuotaJson;
}

/** The quota controller's status.used of the namespace's default quota, once it reports every `want` key with that value (60 s at most). */
export async function usedReaches(namespace: string, want: Record<string, string>): Promise<Record<string, string>> {
  return eventually(
    async () => {
      const used = (await quotaObject(namespace)).status?.used ?? {};
      for (const [k, v] of Object.entries(want)) expect(used[k], `${namespace} status.used[${k}]`).toBe(v);
      return used;
    },
    { timeoutMs: 60_000, what: `${namespace}: status.used ${JSON.stringify(want)}` },
  );
}
