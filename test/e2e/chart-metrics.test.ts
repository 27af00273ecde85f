/**
 * What the chart gives a Prometheus for the controller's secure /metrics
 * (docs/adr/0033-observability.md), rendered with helm: the controller may create
 * TokenReviews and SubjectAccessReviews, serves /metrics with a mounted certificate and its probes on a
 * port of their own; the ClusterRole tenantgate-metrics-reader and, from values, its binding; the
 * ServiceMonitor (off by default) scraping over HTTPS with Prometheus' token and a CA that verifies the
 * certificate the controller serves. test/e2e/project-metrics.test.ts scrapes a running controller.
 */
import { parseAllDocuments } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { helmBinary, helmTemplate } from '../../hack/chart-manifests.js';

interface K8sObject {
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [key: string]: any;
}

let helm: string;
const render = async (args: string[] = []) =>
  parseAllDocuments(await helmTemplate(args, helm))
    .map((d) => d.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);
const find = (objects: K8sObject[], kind: string, name: string) =>
  objects.find((o) => o.kind === kind && o.metadata.name === name);

beforeAll(async () => {
  helm = await helmBinary();
}, 1_800_000);

describe("the chart and the controller's secure /metrics", () => {
  it('default values: review permissions, the reader ClusterRole without a binding, /metrics over the mounted certificate, probes apart, no ServiceMonitor', async () => {
    const objects = await render();
    const rules = find(objects, 'ClusterRole', 'tenantgate-controller')!.rules as Array<{
      apiGroups?: string[];
      resources?: string[];
      verbs: string[];
    }>;
    expect(rules).toContainEqual({
      apiGroups: ['authentication.k8s.io'],
      resources: ['tokenreviews'],
      verbs: ['create'],
    });
    expect(rules).toContainEqual({
      apiGroups: ['authorization.k8s.io'],
      resources: ['subjectaccessreviews'],
      verbs: ['create'],
    });
    expect(find(objects, 'ClusterRole', 'tenantgate-metrics-reader')!.rules).toEqual([
      { nonResourceURLs: ['/metrics'], verbs: ['get'] },
    ]);
    expect(find(objects, 'ClusterRoleBinding', 'tenantgate-metrics-reader')).toBeUndefined();
    expect(objects.some((o) => o.kind === 'ServiceMonitor')).toBe(false);

    const pod = find(objects, 'Deployment', 'tenantgate-controller')!.spec.template.spec;
    const c = pod.containers[0];
    expect(c.args).toEqual(
      expect.arrayContaining([
        '--metrics-port=8080',
        '--metrics-cert=/certs/tls.crt',
        '--metrics-key=/certs/tls.key',
        '--probe-port=8081',
      ]),
    );
    expect(c.ports).toEqual(
      expect.arrayContaining([
        { name: 'metrics', containerPort: 8080 },
        { name: 'probes', containerPort: 8081 },
      ]),
    );
    expect(c.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'probes' });
    expect(c.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'probes' });
    expect(c.volumeMounts).toContainEqual({ name: 'certs', mountPath: '/certs', readOnly: true });
    expect(pod.volumes).toContainEqual({ name: 'certs', secret: { secretName: 'tenantgate-webhook-tls' } });
    expect(find(objects, 'Service', 'tenantgate-controller-metrics')!.spec.ports).toEqual([
      { name: 'metrics', port: 8080, targetPort: 'metrics' },
    ]);
  });

  it('metrics.readers binds the ClusterRole; a ServiceAccount without a namespace is refused', async () => {
    const objects = await render([
      '--set',
      'metrics.readers[0].kind=ServiceAccount',
      '--set',
      'metrics.readers[0].name=prometheus-k8s',
      '--set',
      'metrics.readers[0].namespace=monitoring',
      '--set',
      'metrics.readers[1].kind=Group',
      '--set',
      'metrics.readers[1].name=sre',
    ]);
    const binding = find(objects, 'ClusterRoleBinding', 'tenantgate-metrics-reader')!;
    expect(binding.roleRef).toEqual({
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: 'tenantgate-metrics-reader',
    });
    expect(binding.subjects).toEqual([
      { kind: 'ServiceAccount', name: 'prometheus-k8s', namespace: 'monitoring' },
      { kind: 'Group', name: 'sre', apiGroup: 'rbac.authorization.k8s.io' },
    ]);
    await expect(
      render(['--set', 'metrics.readers[0].kind=ServiceAccount', '--set', 'metrics.readers[0].name=prometheus-k8s']),
    ).rejects.toThrow(/metrics.readers: a ServiceAccount needs its namespace/);
  });

  it("the ServiceMonitor scrapes HTTPS with Prometheus' token, verifying the certificate the controller serves", async () => {
    const endpoint = (objects: K8sObject[]) =>
      find(objects, 'ServiceMonitor', 'tenantgate-controller')!.spec.endpoints[0];
    const withSecretCa = await render([
      '--set',
      'metrics.serviceMonitor.enabled=true',
      '--set',
      'metrics.serviceMonitor.labels.release=kube-prometheus-stack',
    ]);
    const monitor = find(withSecretCa, 'ServiceMonitor', 'tenantgate-controller')!;
    expect(monitor.metadata.labels).toMatchObject({ release: 'kube-prometheus-stack' });
    expect(monitor.spec.selector.matchLabels).toEqual(
      find(withSecretCa, 'Service', 'tenantgate-controller-metrics')!.metadata.labels,
    );
    expect(endpoint(withSecretCa)).toEqual({
      port: 'metrics',
      path: '/metrics',
      scheme: 'https',
      interval: '15s',
      bearerTokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token',
      tlsConfig: {
        serverName: 'tenantgate-webhook.tenantgate-system.svc',
        ca: { secret: { name: 'tenantgate-webhook-tls', key: 'ca.crt' } },
      },
    });

    const pem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
    const withBundle = await render([
      '--set',
      'metrics.serviceMonitor.enabled=true',
      '--set',
      `certificates.caBundle=${Buffer.from(pem).toString('base64')}`,
    ]);
    expect(endpoint(withBundle).tlsConfig).toEqual({
      serverName: 'tenantgate-webhook.tenantgate-system.svc',
      ca: { configMap: { name: 'tenantgate-metrics-ca', key: 'ca.crt' } },
    });
    expect(find(withBundle, 'ConfigMap', 'tenantgate-metrics-ca')!.data).toEqual({ 'ca.crt': pem });

    const ownView = await render(['--set', 'metrics.serviceMonitor.enabled=true', '--set', 'view.secretName=view-tls']);
    expect(endpoint(ownView).tlsConfig).toEqual({
      serverName: 'tenantgate-view.tenantgate-system.svc',
      ca: { secret: { name: 'view-tls', key: 'ca.crt' } },
    });
    expect(find(ownView, 'Deployment', 'tenantgate-controller')!.spec.template.spec.volumes).toContainEqual({
      name: 'certs',
      secret: { secretName: 'view-tls' },
    });

    const custom = await render([
      '--set',
      'metrics.serviceMonitor.enabled=true',
      '--set',
      'metrics.serviceMonitor.tlsConfig.insecureSkipVerify=true',
    ]);
    expect(endpoint(custom).tlsConfig).toEqual({ insecureSkipVerify: true });
  });
});
