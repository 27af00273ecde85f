/**
 * charts/tenantgate with Helm v4 (built from Go modules): lint, template with the default values and
 * two other value sets (charts/tenantgate/ci/), and `kubectl apply --dry-run=server` of every output
 * against the real control plane; manifests/ is exactly the chart's default rendering (ADR 0010), and
 * the kustomize base manifests/kustomization.yaml builds the same objects.
 */
import { execa } from 'execa';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, parseConfig } from '../../src/config/config.js';
import { CHART_DIR, GENERATED_DIRS, helmBinary, helmTemplate, manifestsFromChart } from '../../hack/chart-manifests.js';
import { installBase, MANIFESTS } from '../support/devcluster/tenantgate.js';
import { cachedKustomize } from '../support/tools.js';
import { cluster, kubectl } from '../support/cluster.js';
import { PACKAGE_VERSION } from '../support/package-version.js';
import { LABEL_MANAGED_BY, LABEL_PROJECT, MANAGED_BY } from '../../src/validate/types.js';
import { LIMITRANGE_NAME, NETWORK_POLICY_NAME, OWNERS_BINDING_NAME } from '../../src/validate/managed-names.js';

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; annotations?: Record<string, string>; labels?: Record<string, string> };
  [key: string]: any;
}

let helm: string;
const CUSTOM_NAMESPACE = 'platform-tenancy';
const valueSets = {
  default: { args: [] as string[], namespace: 'tenantgate-system' },
  custom: {
    args: ['-f', join(CHART_DIR, 'ci', 'custom-values.yaml'), '--namespace', CUSTOM_NAMESPACE],
    namespace: CUSTOM_NAMESPACE,
  },
  certManager: { args: ['-f', join(CHART_DIR, 'ci', 'cert-manager-values.yaml')], namespace: 'tenantgate-system' },
  fleet: { args: ['-f', join(CHART_DIR, 'ci', 'fleet-values.yaml')], namespace: 'tenantgate-system' },
};
const rendered: Record<keyof typeof valueSets, K8sObject[]> = { default: [], custom: [], certManager: [], fleet: [] };

const objectsOf = (text: string) =>
  parseAllDocuments(text)
    .map((d) => d.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);
const key = (o: K8sObject) => `${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name}`;
const find = (objects: K8sObject[], kind: string, name: string) => {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in ${objects.map(key).join(', ')}`);
  return found;
};
const container = (deployment: K8sObject) => deployment.spec.template.spec.containers[0];

beforeAll(async () => {
  helm = await helmBinary();
  for (const [name, set] of Object.entries(valueSets)) {
    // The last --namespace wins: the custom set installs into its own namespace.
    rendered[name as keyof typeof valueSets] = objectsOf(await helmTemplate(set.args, helm));
  }
}, 1_800_000);

describe('helm lint', () => {
  it.each(['', 'custom-values.yaml', 'cert-manager-values.yaml', 'fleet-values.yaml'])(
    'passes with %s',
    async (values) => {
      const result = await execa(helm, ['lint', CHART_DIR, ...(values ? ['-f', join(CHART_DIR, 'ci', values)] : [])], {
        reject: false,
      });
      expect(result.exitCode, result.stdout + result.stderr).toBe(0);
      expect(result.stdout).toContain('0 chart(s) failed');
    },
  );

  it('refuses webhook.failurePolicy Ignore (an unanswered review must never admit), naming the field and what is allowed', async () => {
    for (const command of ['template', 'lint']) {
      const ignore = await execa(helm, [command, CHART_DIR, '--set', 'webhook.failurePolicy=Ignore'], {
        reject: false,
      });
      expect(ignore.exitCode, command).not.toBe(0);
      expect(ignore.stdout + ignore.stderr, command).toContain("at '/webhook/failurePolicy': value must be 'Fail'");
    }
    // Without the schema, the template refuses it itself.
    const unchecked = await execa(
      helm,
      ['template', CHART_DIR, '--skip-schema-validation', '--set', 'webhook.failurePolicy=Ignore'],
      { reject: false },
    );
    expect(unchecked.exitCode).not.toBe(0);
    expect(unchecked.stderr).toContain('webhook.failurePolicy is "Ignore"; allowed: Fail');
  });

  it('rejects values outside values.schema.json, naming the field', async () => {
    const typo = await execa(helm, ['template', CHART_DIR, '--set', 'webhok.replicas=3'], { reject: false });
    expect(typo.exitCode).not.toBe(0);
    expect(typo.stderr).toMatch(/webhok/);
    const resources = await execa(helm, ['lint', CHART_DIR, '--set', 'webhook.resources=not-a-map'], { reject: false });
    expect(resources.exitCode).not.toBe(0);
    expect(resources.stdout + resources.stderr).toMatch(/webhook\.resources|\/webhook\/resources/);
  });
});

describe('manifests/ is the chart with default values', () => {
  it('every generated file matches `make manifests` byte for byte, and there are no others', async () => {
    const expected = await manifestsFromChart(helm);
    const onDisk = new Map<string, string>();
    for (const dir of GENERATED_DIRS) {
      for (const file of (await readdir(join(MANIFESTS, dir))).filter((f) => f.endsWith('.yaml'))) {
        onDisk.set(`${dir}/${file}`, await readFile(join(MANIFESTS, dir, file), 'utf8'));
      }
    }
    onDisk.delete('self-service/kustomization.yaml');
    for (const file of ['kustomization.yaml', 'self-service/kustomization.yaml'])
      onDisk.set(file, await readFile(join(MANIFESTS, file), 'utf8'));
    expect([...onDisk.keys()].sort(), 'run `make manifests` and commit manifests/').toEqual(
      [...expected.keys()].sort(),
    );
    for (const [path, text] of expected)
      expect(
        onDisk.get(path),
        `manifests/${path} differs from the chart: edit charts/tenantgate/templates, then run \`make manifests\``,
      ).toBe(text);
  });

  it('the kustomize base and manifests/self-service build the same objects as helm template', async () => {
    const kustomize = cachedKustomize();
    if (!kustomize) throw new Error('no kustomize in .cache/tools: run make kustomize');
    const base = objectsOf((await execa(kustomize, ['build', MANIFESTS])).stdout);
    const built = [...base, ...objectsOf((await execa(kustomize, ['build', join(MANIFESTS, 'self-service')])).stdout)];
    const byKey = (objects: K8sObject[]) => new Map(objects.map((o) => [key(o), o]));
    // Helm's uninstall hook is not a manifest (hack/chart-manifests.ts leaves it out).
    const fromHelm = byKey(rendered.default.filter((o) => o.metadata.annotations?.['helm.sh/hook'] !== 'pre-delete'));
    expect([...byKey(built).keys()].sort()).toEqual([...fromHelm.keys()].sort());
    for (const object of built) expect(object, key(object)).toEqual(fromHelm.get(key(object)));
  });
});

describe('install order: tenants are granted nothing before the webhooks that judge them exist', () => {
  const grantsTenants = (o: K8sObject) =>
    o.kind === 'ClusterRoleBinding' && (o.subjects ?? []).some((s: { name: string }) => s.name === 'tenants');

  it('the kustomize base holds no binding for tenants; manifests/self-service (applied second) holds exactly that one', async () => {
    const kustomize = cachedKustomize();
    if (!kustomize) throw new Error('no kustomize in .cache/tools: run make kustomize');
    const base = objectsOf((await execa(kustomize, ['build', MANIFESTS])).stdout);
    expect(base.filter(grantsTenants).map(key)).toEqual([]);
    expect(base.map((o) => o.kind)).toEqual(
      expect.arrayContaining(['ValidatingWebhookConfiguration', 'MutatingWebhookConfiguration']),
    );
    const second = objectsOf((await execa(kustomize, ['build', join(MANIFESTS, 'self-service')])).stdout);
    expect(second.map(key)).toEqual(['ClusterRoleBinding /tenantgate-self-service']);
  });

  it('helm applies the binding as a post-install/post-upgrade hook, after the webhook configurations', () => {
    const bindings = rendered.default.filter(
      (o) => o.kind === 'ClusterRoleBinding' && o.metadata.name === 'tenantgate-self-service',
    );
    expect(bindings.map((b) => b.metadata.annotations?.['helm.sh/hook'])).toEqual([
      'post-install,post-upgrade',
      'pre-delete',
    ]);
    expect(rendered.default.filter(grantsTenants).map(key)).toEqual(['ClusterRoleBinding /tenantgate-self-service']);
    // The uninstall hook of the same name binds nobody; Helm deletes the grant before it and it after
    // itself (test/e2e/chart-install.test.ts shows nothing is left).
    expect(bindings[1]!.subjects).toEqual([]);
    expect(bindings[1]!.metadata.annotations?.['helm.sh/hook-delete-policy']).toBe(
      'before-hook-creation,hook-succeeded',
    );
  });

  it('without the webhook (webhook.enabled=false) the chart grants tenants nothing at all', async () => {
    const objects = objectsOf(await helmTemplate(['--set', 'webhook.enabled=false'], helm));
    expect(objects.filter(grantsTenants).map(key)).toEqual([]);
    expect(objects.map((o) => o.kind)).not.toContain('ValidatingWebhookConfiguration');
  });
});

describe('helm template', () => {
  it('default values: the CRD, both components, the shipped image, caBundle left to cert-manager or the operator', () => {
    const objects = rendered.default;
    expect(objects.map((o) => o.kind)).toEqual(
      expect.arrayContaining([
        'CustomResourceDefinition',
        'Namespace',
        'Deployment',
        'ValidatingWebhookConfiguration',
        'MutatingWebhookConfiguration',
      ]),
    );
    for (const name of ['tenantgate-webhook', 'tenantgate-controller']) {
      const deployment = find(objects, 'Deployment', name);
      expect(container(deployment).image).toBe(`ghcr.io/tenantgate/tenantgate:${PACKAGE_VERSION}`);
      expect(deployment.spec.replicas).toBe(2);
    }
    const validating = find(objects, 'ValidatingWebhookConfiguration', 'tenantgate');
    expect(validating.metadata.annotations?.['cert-manager.io/inject-ca-from']).toBe(
      'tenantgate-system/tenantgate-webhook',
    );
    expect(validating.webhooks[0].clientConfig.caBundle).toBeUndefined();
    // The shipped configuration, which both components need to start: the built-in defaults.
    const config = parseConfig(
      find(objects, 'ConfigMap', 'tenantgate-config').data['tenantgate.yaml'],
      'tenantgate-config',
    );
    expect(config).toEqual(DEFAULT_CONFIG);
  });

  it('custom values: another namespace, a digest, replicas, resources, placement, tenantgate.yaml, a provided Secret', () => {
    const objects = rendered.custom;
    // Everything namespaced goes to the release's namespace, but the controller's events Role: Events about
    // cluster-scoped Projects live in `default` (ADR 0033).
    const eventsRbac = (o: { kind: string; metadata: { name: string } }) =>
      (o.kind === 'Role' || o.kind === 'RoleBinding') && o.metadata.name === 'tenantgate-controller-events';
    for (const o of objects.filter((x) => x.metadata.namespace !== undefined))
      expect(o.metadata.namespace, key(o)).toBe(eventsRbac(o) ? 'default' : CUSTOM_NAMESPACE);
    expect(objects.filter(eventsRbac)).toHaveLength(2);
    expect(find(objects, 'RoleBinding', 'tenantgate-controller-events').subjects).toEqual([
      { kind: 'ServiceAccount', name: 'tenantgate-controller', namespace: CUSTOM_NAMESPACE },
    ]);
    const webhook = find(objects, 'Deployment', 'tenantgate-webhook');
    expect(container(webhook).image).toBe(
      'registry.example.com/mirror/tenantgate@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef',
    );
    expect(container(webhook).imagePullPolicy).toBe('IfNotPresent');
    expect(webhook.spec.replicas).toBe(3);
    expect(container(webhook).resources).toEqual({
      requests: { cpu: '250m', memory: '256Mi' },
      limits: { memory: '1Gi' },
    });
    expect(webhook.spec.template.spec.nodeSelector).toEqual({ 'node-role.kubernetes.io/control-plane': '' });
    expect(webhook.spec.template.spec.imagePullSecrets).toEqual([{ name: 'registry-credentials' }]);
    expect(webhook.spec.template.spec.volumes).toContainEqual({
      name: 'certs',
      secret: { secretName: 'tenantgate-webhook-serving' },
    });
    expect(webhook.spec.template.metadata.annotations['checksum/config']).toMatch(/^[0-9a-f]{64}$/);
    const controller = find(objects, 'Deployment', 'tenantgate-controller');
    expect(controller.spec.replicas).toBe(1);
    expect(container(controller).args).toContain('--workers=8');

    // tenantgate.yaml is accepted by tenantgate's own parser, and follows the release namespace.
    const config = parseConfig(
      find(objects, 'ConfigMap', 'tenantgate-config').data['tenantgate.yaml'],
      'tenantgate-config',
    );
    expect(config.clusterName).toBe('prod-eu');
    expect(config.headroomWarningThreshold).toBe(0.2);
    expect(config.systemNamespace).toBe(CUSTOM_NAMESPACE);
    expect(config.privileged.users).toEqual([`system:serviceaccount:${CUSTOM_NAMESPACE}:tenantgate-controller`]);
    // Lists given in values replace the defaults; keys not given keep them.
    expect(config.reserved.prefixes).toEqual(['kube-', 'openshift-', 'tenantgate-', 'platform-']);
    expect(config.protectedNamespaceMetadata).toEqual(DEFAULT_CONFIG.protectedNamespaceMetadata);
    expect(config.reservationTtlSeconds).toBe(DEFAULT_CONFIG.reservationTtlSeconds);

    for (const kind of ['ValidatingWebhookConfiguration', 'MutatingWebhookConfiguration']) {
      const configuration = find(objects, kind, 'tenantgate');
      expect(configuration.metadata.annotations).toBeUndefined();
      // Every webhook of both configurations, not only the first: each takes the values on its own.
      for (const webhook of configuration.webhooks) {
        expect(webhook.clientConfig.caBundle, webhook.name).toMatch(/^LS0t/);
        expect(webhook.clientConfig.service.namespace, webhook.name).toBe(CUSTOM_NAMESPACE);
        expect(webhook.timeoutSeconds, webhook.name).toBe(10);
        expect(webhook.failurePolicy, webhook.name).toBe('Fail');
        const skipped = webhook.namespaceSelector.matchExpressions.find(
          (e: { key: string }) => e.key === 'kubernetes.io/metadata.name',
        );
        expect(skipped, webhook.name).toEqual({
          key: 'kubernetes.io/metadata.name',
          operator: 'NotIn',
          values: ['kube-system', CUSTOM_NAMESPACE],
        });
      }
    }
    expect(
      find(objects, 'ClusterRoleBinding', 'tenantgate-self-service').subjects.map((s: { name: string }) => s.name),
    ).toEqual(['team-a', 'oidc:team-b']);
  });

  it('the validating webhook skips only the subresource writes of the subjects tenantgate.yaml trusts with them; the mutating one sees Namespaces on CREATE only (ADR 0004)', () => {
    for (const objects of [rendered.default, rendered.custom]) {
      const config = parseConfig(
        find(objects, 'ConfigMap', 'tenantgate-config').data['tenantgate.yaml'],
        'tenantgate-config',
      );
      const validate = find(objects, 'ValidatingWebhookConfiguration', 'tenantgate').webhooks.find(
        (w: { name: string }) => w.name === 'validate.tenantgate.io',
      );
      expect(validate.matchConditions).toHaveLength(1);
      const expression = validate.matchConditions[0].expression as string;
      // The CEL lists, read back: exactly the subjects reviewSubresource admits (systemControllers, privileged).
      const lists = [...expression.matchAll(/ in (\[[^\]]*\])/g)].map(
        (m) => JSON.parse(m[1]!.replace(/'/g, '"')) as string[],
      );
      expect(lists).toEqual([
        ['status', 'finalize'],
        [...new Set([...config.systemControllers, ...config.privileged.users])],
        config.privileged.groups,
      ]);
      expect(expression).toMatch(/^!\(has\(request\.subResource\) && /);
      const mutate = find(objects, 'MutatingWebhookConfiguration', 'tenantgate').webhooks[0];
      expect(mutate.rules.filter((r: { resources: string[] }) => r.resources.includes('namespaces'))).toEqual([
        { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['namespaces'], scope: 'Cluster' },
      ]);
    }
    // The custom release's controller (another namespace) is among the trusted users.
    expect(
      find(rendered.custom, 'ValidatingWebhookConfiguration', 'tenantgate').webhooks[0].matchConditions[0].expression,
    ).toContain('system:serviceaccount:platform-tenancy:tenantgate-controller');
  });

  it('allow.tenantgate.io matches claims and PersistentVolumes only, and only the writes that bind (ADR 0095)', () => {
    for (const objects of [rendered.default, rendered.custom]) {
      const validating = find(objects, 'ValidatingWebhookConfiguration', 'tenantgate');
      const allow = validating.webhooks.find((w: { name: string }) => w.name === 'allow.tenantgate.io');
      expect(allow.rules).toEqual([
        {
          apiGroups: [''],
          apiVersions: ['v1'],
          operations: ['CREATE', 'UPDATE'],
          resources: ['persistentvolumeclaims'],
          scope: 'Namespaced',
        },
        {
          apiGroups: [''],
          apiVersions: ['v1'],
          operations: ['CREATE', 'UPDATE'],
          resources: ['persistentvolumes'],
          scope: 'Cluster',
        },
      ]);
      // No webhook of tenantgate is sent pods, Services, Ingresses, Gateway API or resource.k8s.io objects:
      // the API server's policies judge those, and they never wait for a webhook.
      const configurations = [validating, find(objects, 'MutatingWebhookConfiguration', 'tenantgate')];
      const matched = configurations.flatMap((c) =>
        c.webhooks.flatMap((w: { rules: Array<{ apiGroups: string[]; resources: string[] }> }) => w.rules),
      );
      const resources = matched.flatMap((r: { resources: string[] }) => r.resources);
      for (const resource of [
        'pods',
        'pods/ephemeralcontainers',
        'services',
        'ingresses',
        'gateways',
        'httproutes',
        'resourceclaims',
      ]) {
        expect(resources).not.toContain(resource);
      }
      const groups = matched.flatMap((r: { apiGroups: string[] }) => r.apiGroups);
      for (const group of ['gateway.networking.k8s.io', 'resource.k8s.io']) expect(groups).not.toContain(group);
      // networking.k8s.io only for the isolation NetworkPolicy (T7, objects.tenantgate.io).
      const networking = matched.filter((r: { apiGroups: string[] }) => r.apiGroups.includes('networking.k8s.io'));
      expect(networking.flatMap((r: { resources: string[] }) => r.resources)).toEqual(['networkpolicies']);
      expect(allow.matchConditions.map((c: { name: string }) => c.name)).toEqual([
        'claim-sets-a-volume-name',
        'volume-sets-a-claim-ref',
      ]);
      const [claim, volume] = allow.matchConditions.map((c: { expression: string }) => c.expression) as [
        string,
        string,
      ];
      expect(claim).toMatch(/^request\.resource\.resource != 'persistentvolumeclaims' \|\| /);
      expect(claim).toContain('oldObject.spec.volumeName != object.spec.volumeName');
      expect(volume).toMatch(/^request\.resource\.resource != 'persistentvolumes' \|\| /);
      // The label key the CEL reads is the one X10 reads; the claimRef fields it compares are what newClaimRef compares.
      expect([...volume.matchAll(/'([^' ]+\/[^' ]+)'/g)].map((m) => m[1])).toEqual([LABEL_PROJECT]);
      for (const field of ['namespace', 'name', 'uid'])
        expect(volume).toContain(
          `oldObject.spec.claimRef.?${field}.orValue('') != object.spec.claimRef.?${field}.orValue('')`,
        );
      // Claims outside projects are not sent; PersistentVolumes are cluster-scoped, the selector does not apply to them.
      expect(allow.namespaceSelector.matchExpressions[0]).toEqual({ key: LABEL_PROJECT, operator: 'Exists' });
    }
  });

  it('the mutating webhook is not sent a ResourceQuota UPDATE that keeps the project label the code sets (ADR 0004)', () => {
    for (const objects of [rendered.default, rendered.custom]) {
      const mutate = find(objects, 'MutatingWebhookConfiguration', 'tenantgate').webhooks[0];
      expect(mutate.matchConditions.map((c: { name: string }) => c.name)).toEqual([
        'not-a-quota-update-keeping-its-project-label',
      ]);
      const expression = mutate.matchConditions[0].expression as string;
      expect(expression).toMatch(
        /^!\(request\.operation == 'UPDATE' && request\.resource\.resource == 'resourcequotas' && /,
      );
      // Every label key the CEL reads is the one mutateQuota writes.
      const keys = [...expression.matchAll(/'([^' ]+\/[^' ]+)'/g)].map((m) => m[1]);
      expect(keys.length).toBe(4);
      expect(new Set(keys)).toEqual(new Set([LABEL_PROJECT]));
    }
  });

  it("objects.tenantgate.io is not sent the controller's own writes of the objects it keeps: its ServiceAccount in the release's namespace, their names, their managed-by label; only while tenantgate.yaml makes it privileged (ADR 0004)", async () => {
    for (const [objects, namespace] of [
      [rendered.default, valueSets.default.namespace],
      [rendered.custom, CUSTOM_NAMESPACE],
    ] as const) {
      const config = parseConfig(
        find(objects, 'ConfigMap', 'tenantgate-config').data['tenantgate.yaml'],
        'tenantgate-config',
      );
      const controller = `system:serviceaccount:${namespace}:tenantgate-controller`;
      // The webhook admits every privileged write of these objects (reviewProtectedObject): the skip changes no verdict.
      expect(config.privileged.users).toContain(controller);
      const hook = find(objects, 'ValidatingWebhookConfiguration', 'tenantgate').webhooks.find(
        (w: { name: string }) => w.name === 'objects.tenantgate.io',
      );
      expect(hook.matchConditions.map((c: { name: string }) => c.name)).toEqual(['not-the-controllers-own-object']);
      const expression = hook.matchConditions[0].expression as string;
      // The user exactly (no prefix, suffix, pattern or group: a tenant's ServiceAccount of that name is another user).
      expect(expression.startsWith(`!(request.userInfo.username == '${controller}' && `)).toBe(true);
      expect(expression).not.toMatch(/endsWith|startsWith|matches|contains|groups/);
      // The names the webhook judges, and the label the controller gives them.
      const names = /object\.metadata\.name in (\[[^\]]*\])/.exec(expression)?.[1] ?? '[]';
      expect(new Set(JSON.parse(names.replace(/'/g, '"')) as string[])).toEqual(
        new Set([LIMITRANGE_NAME, NETWORK_POLICY_NAME, OWNERS_BINDING_NAME]),
      );
      expect(expression).toContain(`object.metadata.labels['${LABEL_MANAGED_BY}'] == '${MANAGED_BY}'`);
    }
    // A tenantgate.yaml that does not make the controller privileged: its writes are judged as anyone's, so all are sent.
    const unprivileged = objectsOf(await helmTemplate(['--set-json', 'config.privileged.users=["ops"]'], helm));
    const hook = find(unprivileged, 'ValidatingWebhookConfiguration', 'tenantgate').webhooks.find(
      (w: { name: string }) => w.name === 'objects.tenantgate.io',
    );
    expect(hook.matchConditions).toBeUndefined();
  });

  it('cert-manager values: the webhook alone, with a Certificate (ECDSA key) for its Service that fills the Secret it mounts', () => {
    const objects = rendered.certManager;
    expect(objects.map((o) => o.kind)).not.toContain('CustomResourceDefinition');
    expect(objects.map((o) => o.kind)).not.toContain('Namespace');
    expect(objects.some((o) => o.metadata.name === 'tenantgate-controller')).toBe(false);
    const certificate = find(objects, 'Certificate', 'tenantgate-webhook');
    expect(certificate.spec.dnsNames).toContain('tenantgate-webhook.tenantgate-system.svc');
    expect(certificate.spec.issuerRef).toEqual({ name: 'tenantgate-webhook-ca', kind: 'Issuer' });
    // An ECDSA P-256 serving key (cheaper handshakes: ADR 0034), no RSA-only usage.
    expect(certificate.spec.privateKey).toEqual({ algorithm: 'ECDSA', size: 256, rotationPolicy: 'Always' });
    expect(certificate.spec.usages).toEqual(['server auth', 'digital signature']);
    expect(find(objects, 'Certificate', 'tenantgate-webhook-ca').spec.isCA).toBe(true);
    const webhook = find(objects, 'Deployment', 'tenantgate-webhook');
    expect(webhook.spec.template.spec.volumes).toContainEqual({
      name: 'certs',
      secret: { secretName: certificate.spec.secretName },
    });
    const annotation = find(objects, 'ValidatingWebhookConfiguration', 'tenantgate').metadata.annotations?.[
      'cert-manager.io/inject-ca-from'
    ];
    expect(annotation).toBe(`${certificate.metadata.namespace}/${certificate.metadata.name}`);
  });

  it("who may send reviews: by default no client CA and a NetworkPolicy keeping project namespaces' pods out; custom values mount the apiserver's client CA", () => {
    const policy = find(rendered.default, 'NetworkPolicy', 'tenantgate-no-project-pods');
    expect(policy.spec.podSelector).toEqual({ matchLabels: { 'app.kubernetes.io/name': 'tenantgate' } });
    expect(policy.spec.policyTypes).toEqual(['Ingress']);
    expect(policy.spec.ingress).toEqual([
      {
        from: [
          { namespaceSelector: { matchExpressions: [{ key: 'tenantgate.io/project', operator: 'DoesNotExist' }] } },
          { ipBlock: { cidr: '0.0.0.0/0' } },
          { ipBlock: { cidr: '::/0' } },
        ],
      },
    ]);
    // Both components' pods carry the label the policy selects.
    for (const name of ['tenantgate-webhook', 'tenantgate-controller'])
      expect(find(rendered.default, 'Deployment', name).spec.template.metadata.labels['app.kubernetes.io/name']).toBe(
        'tenantgate',
      );
    expect(
      container(find(rendered.default, 'Deployment', 'tenantgate-webhook')).args.some((a: string) =>
        a.startsWith('--client-ca'),
      ),
    ).toBe(false);

    expect(find(rendered.custom, 'NetworkPolicy', 'tenantgate-no-project-pods').spec.ingress[0].from[1]).toEqual({
      ipBlock: { cidr: '0.0.0.0/0', except: ['10.244.0.0/16'] },
    });
    const webhook = find(rendered.custom, 'Deployment', 'tenantgate-webhook');
    expect(container(webhook).args).toEqual(
      expect.arrayContaining(['--client-ca=/client-ca/ca.crt', '--client-allowed-names=kube-apiserver-webhook-client']),
    );
    expect(container(webhook).volumeMounts).toContainEqual({
      name: 'client-ca',
      mountPath: '/client-ca',
      readOnly: true,
    });
    expect(webhook.spec.template.spec.volumes).toContainEqual({
      name: 'client-ca',
      configMap: { name: 'apiserver-webhook-client-ca' },
    });
  });
});

describe('helm template with fleet values (docs/fleet.md)', () => {
  it("the hub: namespace tenantgate-fleet, a ServiceAccount and RoleBinding per member, update-only status RBAC, the operator's release verb, the admission policy", () => {
    const objects = rendered.fleet;
    const inFleet = objects.filter((o) => o.metadata.namespace === 'tenantgate-fleet');
    expect(find(objects, 'Namespace', 'tenantgate-fleet').metadata.labels?.['pod-security.kubernetes.io/enforce']).toBe(
      'restricted',
    );
    expect(
      inFleet
        .filter((o) => o.kind === 'ServiceAccount')
        .map((o) => o.metadata.name)
        .sort(),
    ).toEqual(['member-prod-eu', 'member-prod-us', 'tenantgate-fleet-operator']);
    expect(find(objects, 'RoleBinding', 'member-prod-us').subjects).toEqual([
      { kind: 'ServiceAccount', name: 'member-prod-us', namespace: 'tenantgate-fleet' },
    ]);
    expect(find(objects, 'Role', 'tenantgate-fleet-member').rules).toEqual([
      { apiGroups: ['tenantgate.io'], resources: ['fleetbudgets'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: ['tenantgate.io'], resources: ['fleetbudgets/status'], verbs: ['update'] },
    ]);
    expect(find(objects, 'Role', 'tenantgate-fleet-operator').rules[0].verbs).toContain('release');
    // Each member renews its own heartbeat Lease (create cannot be limited by name), the operator reads them.
    expect(find(objects, 'Role', 'member-prod-eu-heartbeat').rules).toEqual([
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        resourceNames: ['member-prod-eu'],
        verbs: ['get', 'update'],
      },
    ]);
    expect(find(objects, 'RoleBinding', 'member-prod-eu-heartbeat').subjects).toEqual([
      { kind: 'ServiceAccount', name: 'member-prod-eu', namespace: 'tenantgate-fleet' },
    ]);
    expect(find(objects, 'Role', 'tenantgate-fleet-operator').rules).toContainEqual({
      apiGroups: ['coordination.k8s.io'],
      resources: ['leases'],
      verbs: ['get', 'list'],
    });
    expect(find(objects, 'RoleBinding', 'tenantgate-fleet-operator').subjects).toContainEqual({
      kind: 'Group',
      name: 'platform-admins',
      apiGroup: 'rbac.authorization.k8s.io',
    });
    expect(
      find(objects, 'Secret', 'member-prod-eu-token').metadata.annotations?.['kubernetes.io/service-account.name'],
    ).toBe('member-prod-eu');
    expect(find(objects, 'ValidatingAdmissionPolicy', 'tenantgate-fleet-shares').spec.failurePolicy).toBe('Fail');
    expect(find(objects, 'ValidatingAdmissionPolicyBinding', 'tenantgate-fleet-shares').spec.validationActions).toEqual(
      ['Deny'],
    );
    expect(find(objects, 'CustomResourceDefinition', 'fleetbudgets.tenantgate.io').spec.scope).toBe('Namespaced');
    // Nothing of the hub with default values (the FleetBudget CRD alone comes with crd.enabled).
    expect(
      rendered.default.some(
        (o) => o.metadata.namespace === 'tenantgate-fleet' || o.metadata.name === 'tenantgate-fleet-shares',
      ),
    ).toBe(false);
  });

  it('the member: tenantgate.yaml names the cluster and the hub kubeconfig, which webhook and controller mount from the Secret tenantgate-fleet-hub', () => {
    const config = parseConfig(
      find(rendered.fleet, 'ConfigMap', 'tenantgate-config').data['tenantgate.yaml'],
      'tenantgate-config',
    );
    expect(config.clusterName).toBe('prod-eu');
    expect(config.fleet.hubKubeconfig).toBe('/etc/tenantgate-fleet-hub/kubeconfig');
    expect(config.fleet.offerAfterSeconds).toBe(DEFAULT_CONFIG.fleet.offerAfterSeconds);
    for (const name of ['tenantgate-webhook', 'tenantgate-controller']) {
      const deployment = find(rendered.fleet, 'Deployment', name);
      expect(container(deployment).volumeMounts).toContainEqual({
        name: 'fleet-hub',
        mountPath: '/etc/tenantgate-fleet-hub',
        readOnly: true,
      });
      expect(deployment.spec.template.spec.volumes).toContainEqual({
        name: 'fleet-hub',
        secret: { secretName: 'tenantgate-fleet-hub' },
      });
      expect(
        find(rendered.default, 'Deployment', name).spec.template.spec.volumes.map((v: { name: string }) => v.name),
      ).not.toContain('fleet-hub');
    }
  });
});

describe('the rendered charts against the real API server', () => {
  beforeAll(async () => {
    await installBase(cluster());
    // The custom set's namespace exists (its Namespace object then applies as an update): a server
    // dry run does not create a namespace for the objects that follow it.
    // An earlier file may have deleted one without waiting (fleet-hub-policy deletes tenantgate-fleet): a
    // namespace still Terminating takes no new objects, so it is waited out before it is made again.
    for (const namespace of [CUSTOM_NAMESPACE, 'tenantgate-fleet']) {
      const deleting = await kubectl(
        'admin',
        ['get', 'namespace', namespace, '-o', 'jsonpath={.metadata.deletionTimestamp}'],
        {
          reject: false,
        },
      );
      if (deleting.stdout.trim() !== '')
        await kubectl('admin', ['wait', '--for=delete', `namespace/${namespace}`, '--timeout=180s']);
      await kubectl('admin', ['create', 'namespace', namespace], { reject: false });
    }
  });

  it.each(Object.keys(valueSets))('%s values apply with --dry-run=server', async (name) => {
    // cert-manager's kinds need cert-manager's CRDs, which this control plane does not have; their
    // shape is checked above.
    const objects = rendered[name as keyof typeof valueSets].filter(
      (o) => !o.apiVersion.startsWith('cert-manager.io/'),
    );
    const result = await kubectl('admin', ['apply', '--dry-run=server', '-f', '-'], {
      input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }),
      reject: false,
    });
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stdout.split('\n').filter((l) => l.includes('(server dry run)'))).toHaveLength(objects.length);
  });

  it('the kustomize base applies with kubectl apply -k --dry-run=server', async () => {
    const result = await kubectl('admin', ['apply', '-k', MANIFESTS, '--dry-run=server'], { reject: false });
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/deployment\.apps\/tenantgate-webhook .*\(server dry run\)/);
  });
});
