/**
 * Removes a headroom ledger ConfigMap for good, as the controller does for a gone Project: its
 * finalizer (src/ledger/ledger.ts) first, then the object. A plain `kubectl delete` only marks it
 * (and waits for the finalizer). For tests that start from an empty ledger.
 */
import { kubectl } from './cluster.js';

export async function dropLedger(name: string, namespace = 'tenantgate-system'): Promise<void> {
  const patched = await kubectl(
    'admin',
    ['-n', namespace, 'patch', 'configmap', name, '--type=merge', '-p', '{"metadata":{"finalizers":null}}'],
    { reject: false },
  );
  if (patched.exitCode !== 0 && !/NotFound|not found/i.test(patched.stderr))
    throw new Error(`removing the finalizer of ConfigMap ${namespace}/${name} failed: ${patched.stderr}`);
  await kubectl('admin', ['-n', namespace, 'delete', 'configmap', name, '--ignore-not-found']);
}
