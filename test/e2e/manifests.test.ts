/**
 * The shipped manifests are accepted by a real API server (kubectl apply --dry-run=server): CRD,
 * webhook, controller, RBAC and the Argo CD parts that are Kubernetes objects. plugin.yaml is read by
 * Argo CD's cmp-server from a file, not applied; it and the example Application (an Argo CD CRD this
 * cluster does not have) are checked by test/unit/argocd-lua.test.ts.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { installBase, MANIFESTS } from '../support/devcluster/tenantgate.js';
import { cluster, kubectl } from '../support/cluster.js';

const files = (dir: string) =>
  readdirSync(join(MANIFESTS, dir))
    .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
    .map((f) => join(MANIFESTS, dir, f));

/** The webhook configurations as they are (or their absence), by name and resourceVersion. */
async function webhookConfigurations(): Promise<string> {
  const got = await kubectl('admin', [
    'get',
    'validatingwebhookconfigurations,mutatingwebhookconfigurations',
    '-o',
    'jsonpath={range .items[*]}{.kind}/{.metadata.name}@{.metadata.resourceVersion}{"\\n"}{end}',
  ]);
  return got.stdout.split('\n').filter(Boolean).sort().join('\n');
}
let webhooksBefore: string;

beforeAll(async () => {
  await installBase(cluster());
  // Whatever other test files left registered: the dry runs below must not change it.
  webhooksBefore = await webhookConfigurations();
  // Argo CD's namespace and a stand-in repo-server Deployment for the sidecar patch to apply to.
  await kubectl('admin', ['apply', '-f', '-'], {
    input: JSON.stringify({
      apiVersion: 'v1',
      kind: 'List',
      items: [
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'argocd' } },
        {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name: 'argocd-repo-server', namespace: 'argocd' },
          spec: {
            selector: { matchLabels: { app: 'repo' } },
            template: {
              metadata: { labels: { app: 'repo' } },
              spec: {
                volumes: [
                  { name: 'var-files', emptyDir: {} },
                  { name: 'plugins', emptyDir: {} },
                ],
                containers: [{ name: 'argocd-repo-server', image: 'quay.io/argoproj/argocd:v3.1.0' }],
              },
            },
          },
        },
      ],
    }),
  });
});

describe('manifests/ against the real API server', () => {
  it.each(['crd', 'config', 'controller', 'webhook', 'policies', 'rbac', 'self-service'])(
    'manifests/%s applies with --dry-run=server',
    async (dir) => {
      for (const file of files(dir)) {
        const result = await kubectl('admin', ['apply', '--dry-run=server', '-f', file], { reject: false });
        expect(result.exitCode, `${file}: ${result.stderr}`).toBe(0);
        expect(result.stdout).toMatch(/\(server dry run\)/);
      }
    },
  );

  it('the Argo CD ConfigMaps apply, and the repo-server sidecar patch applies to a repo-server Deployment', async () => {
    for (const file of ['cmp-plugin-configmap.yaml', 'argocd-cm-patch.yaml']) {
      const result = await kubectl('admin', ['apply', '--dry-run=server', '-f', join(MANIFESTS, 'argocd', file)], {
        reject: false,
      });
      expect(result.exitCode, `${file}: ${result.stderr}`).toBe(0);
    }
    const patched = await kubectl('admin', [
      '-n',
      'argocd',
      'patch',
      'deployment',
      'argocd-repo-server',
      '--type=strategic',
      '--patch-file',
      join(MANIFESTS, 'argocd', 'repo-server-patch.yaml'),
      '--dry-run=server',
      '-o',
      'json',
    ]);
    const containers = (
      JSON.parse(patched.stdout) as { spec: { template: { spec: { containers: Array<{ name: string }> } } } }
    ).spec.template.spec.containers.map((c) => c.name);
    expect(containers).toEqual(expect.arrayContaining(['argocd-repo-server', 'tenantgate-cmp']));
  });

  it('a dry run registered nothing: the webhook configurations are exactly as before the dry runs', async () => {
    expect(await webhookConfigurations()).toBe(webhooksBefore);
  });
});
