/**
 * The watch streams' probe (src/kube/watermark-probe.ts) as the webhook's ServiceAccount, under the
 * shipped ValidatingAdmissionPolicy that guards tenantgate-system (manifests/webhook/excluded-namespaces-policy.yaml):
 * the probe's two writes are admitted, and nothing else of that namespace opens to that ServiceAccount.
 * Without the probe, a replica whose streams are behind a ledger's settled marks (another replica's
 * watch brought a newer bookmark) refuses the project's decisions with [Q5] until its own next bookmark.
 */
import { execa } from 'execa';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { loadKubeConfig } from '../../src/kube/kubeconfig.js';
import { WATERMARK_ANNOTATION, WATERMARK_QUOTA, WatermarkProbe } from '../../src/kube/watermark-probe.js';
import { installBase, serviceAccountKubeconfigFile } from '../support/devcluster/tenantgate.js';
import { cluster, eventually, kubectl } from '../support/cluster.js';

const NS = DEFAULT_CONFIG.systemNamespace;
let kubeconfig: string;

/** kubectl as the webhook's ServiceAccount. */
async function asWebhook(
  args: string[],
  input?: string,
): Promise<{ exitCode: number | undefined; stderr: string; stdout: string }> {
  const r = await execa(join(cluster().binDir, 'kubectl'), args, {
    env: { KUBECONFIG: kubeconfig },
    reject: false,
    encoding: 'utf8',
    timeout: 60_000,
    ...(input !== undefined ? { input } : {}),
  });
  return { exitCode: r.exitCode, stderr: String(r.stderr), stdout: String(r.stdout) };
}

const refusedByPolicy = (stderr: string) => expect(stderr).toMatch(/tenantgate-excluded-namespaces.*\[T6\]/);

beforeAll(async () => {
  const info = cluster();
  await installBase(info);
  kubeconfig = await serviceAccountKubeconfigFile(info, NS, 'tenantgate-webhook');
  // A policy just applied is enforced once the apiserver has loaded it: until then everything passes.
  await eventually(
    async () =>
      refusedByPolicy(
        (await asWebhook(['-n', NS, 'create', 'quota', 'policy-loaded', '--hard=pods=1', '--dry-run=server'])).stderr,
      ),
    { what: 'the policy enforced' },
  );
}, 120_000);

describe('the watermark probe under the policy that guards tenantgate-system', () => {
  it("the webhook's ServiceAccount writes both markers, twice (created, then updated), and each write moves the stream it is for", async () => {
    const probe = new WatermarkProbe(loadKubeConfig(kubeconfig), NS);
    try {
      for (let i = 0; i < 2; i++) {
        const before = JSON.parse((await kubectl('admin', ['get', 'namespace', NS, '-o', 'json'])).stdout) as {
          metadata: { resourceVersion: string; annotations?: Record<string, string> };
        };
        await probe.probe();
        const ns = JSON.parse((await kubectl('admin', ['get', 'namespace', NS, '-o', 'json'])).stdout) as {
          metadata: { resourceVersion: string; annotations?: Record<string, string> };
        };
        expect(ns.metadata.annotations?.[WATERMARK_ANNOTATION]).toBeDefined();
        expect(ns.metadata.annotations?.[WATERMARK_ANNOTATION]).not.toBe(
          before.metadata.annotations?.[WATERMARK_ANNOTATION],
        );
        expect(BigInt(ns.metadata.resourceVersion)).toBeGreaterThan(BigInt(before.metadata.resourceVersion));
        const quota = await kubectl('admin', [
          '-n',
          NS,
          'get',
          'resourcequota',
          WATERMARK_QUOTA,
          '-o',
          `jsonpath={.metadata.annotations.tenantgate\\.io/watermark-probe}`,
        ]);
        expect(quota.stdout).toBe(ns.metadata.annotations?.[WATERMARK_ANNOTATION]);
      }
    } finally {
      probe.close();
    }
  });

  it("nothing else: not the namespace's labels (its PodSecurity level), not another quota, not a limit in the marker quota, not deleting the namespace", async () => {
    // Updates (the verb its RBAC grants on this one Namespace), each changing one more thing than the probe does.
    const current = () =>
      kubectl('admin', ['get', 'namespace', NS, '-o', 'json']).then(
        (r) =>
          JSON.parse(r.stdout) as {
            metadata: { labels?: Record<string, string>; annotations?: Record<string, string>; finalizers?: string[] };
          },
      );
    const labelled = await current();
    labelled.metadata.labels = { ...labelled.metadata.labels, 'pod-security.kubernetes.io/enforce': 'privileged' };
    refusedByPolicy((await asWebhook(['replace', '-f', '-'], JSON.stringify(labelled))).stderr);
    const annotated = await current();
    annotated.metadata.annotations = {
      ...annotated.metadata.annotations,
      [WATERMARK_ANNOTATION]: 'x',
      another: 'annotation',
    };
    refusedByPolicy((await asWebhook(['replace', '-f', '-'], JSON.stringify(annotated))).stderr);
    const finalized = await current();
    finalized.metadata.finalizers = [...(finalized.metadata.finalizers ?? []), 'example.com/hold'];
    refusedByPolicy((await asWebhook(['replace', '-f', '-'], JSON.stringify(finalized))).stderr);
    expect((await current()).metadata.labels?.['pod-security.kubernetes.io/enforce']).not.toBe('privileged');
    refusedByPolicy((await asWebhook(['-n', NS, 'create', 'quota', 'not-the-marker', '--hard=pods=1'])).stderr);
    const limiting = {
      apiVersion: 'v1',
      kind: 'ResourceQuota',
      metadata: { name: WATERMARK_QUOTA, namespace: NS },
      spec: { hard: { pods: '0' } },
    };
    refusedByPolicy((await asWebhook(['replace', '-f', '-'], JSON.stringify(limiting))).stderr);
    const deleted = await asWebhook(['delete', 'namespace', NS, '--dry-run=server']);
    expect(deleted.exitCode).not.toBe(0);
    expect(deleted.stderr).toMatch(/\[T6\]|forbidden/);
    // The same marker write by a tenant: not theirs (RBAC, or the policy).
    const tenant = await kubectl('alice', ['annotate', 'namespace', NS, `${WATERMARK_ANNOTATION}=x`, '--overwrite'], {
      reject: false,
    });
    expect(tenant.exitCode).not.toBe(0);
    expect(tenant.stderr).toMatch(/forbidden|\[T6\]/);
  });
});
