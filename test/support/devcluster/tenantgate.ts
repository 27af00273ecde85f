/**
 * Installs tenantgate into a local control plane (shared by `make run` and the e2e tests): the CRD,
 * its namespace, RBAC, and webhooks served from this machine (registered by URL with a caBundle).
 */
import * as k8s from '@kubernetes/client-node';
import { execa } from 'execa';
import { readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { DEFAULT_CONFIG, parseConfig, type TenantgateConfig } from '../../../src/config/config.js';
import { generateWebhookCerts, type WebhookCertFiles } from '../../../src/certs/files.js';
import { REPO_ROOT } from '../paths.js';
import { ownerBinding } from '../../../src/render/owner-binding.js';
import { allowListFor } from '../../../src/validate/allow-list-params.js';
import type { Project } from '../../../src/validate/types.js';
import { startWebhook, type RunningWebhook } from '../../../src/webhook/start.js';
import type { AdmissionDecision } from '../../../src/webhook/server.js';
import { kubeconfigYaml, type ClusterInfo } from './controlplane.js';
import { PooledKubeConfig } from '../../../src/kube/kubeconfig.js';

export const MANIFESTS = join(REPO_ROOT, 'manifests');

const EXAMPLE_CONFIG = parseConfig(readFileSync(join(REPO_ROOT, 'examples', 'gitops', 'tenantgate.yaml'), 'utf8'));

/**
 * The price sheet of examples/gitops/tenantgate.yaml. The local webhooks run with it, as the example
 * repository's clusters would: its Project ml has a spec.costBudget, which a webhook without pricing
 * refuses (C1, docs/budgets.md#cost).
 */
export const EXAMPLE_PRICING = EXAMPLE_CONFIG.pricing;

/**
 * The network baseline of examples/gitops/tenantgate.yaml. A controller beside the rendered examples
 * runs with it: it sets the isolation policy back to what it computes, so with another baseline it and
 * Argo CD would keep writing two different policies (docs/network.md).
 */
export const EXAMPLE_NETWORK = EXAMPLE_CONFIG.network;

export async function kubectlAs(info: ClusterInfo, user: string, args: string[], input?: string) {
  return execa(join(info.binDir, 'kubectl'), args, {
    env: { KUBECONFIG: info.kubeconfigs[user] ?? '' },
    input,
    timeout: 120_000,
  });
}

/** CRDs (Established), the tenantgate-system namespace, the components' ServiceAccounts and RBAC, tenants' RBAC, the policies. */
export async function installBase(info: ClusterInfo): Promise<void> {
  await kubectlAs(info, 'admin', [
    'apply',
    '--server-side',
    '--force-conflicts',
    '-f',
    join(MANIFESTS, 'crd', 'projects.tenantgate.io.yaml'),
  ]);
  await kubectlAs(info, 'admin', [
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/projects.tenantgate.io',
  ]);
  // The allow-list policies' parameters (docs/adr/0095-allow-lists-in-the-api-server.md) and their guard (T9).
  await kubectlAs(info, 'admin', [
    'apply',
    '--server-side',
    '--force-conflicts',
    '-f',
    join(MANIFESTS, 'crd', 'allowlists.tenantgate.io.yaml'),
  ]);
  await kubectlAs(info, 'admin', [
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/allowlists.tenantgate.io',
  ]);
  await kubectlAs(info, 'admin', [
    'apply',
    '-f',
    join(MANIFESTS, 'controller', '00-namespace.yaml'),
    '-f',
    join(MANIFESTS, 'rbac', 'self-service.yaml'),
    '-f',
    join(MANIFESTS, 'self-service', 'binding.yaml'),
    '-f',
    join(MANIFESTS, 'webhook', 'rbac.yaml'),
    '-f',
    join(MANIFESTS, 'controller', 'rbac.yaml'),
    '-f',
    join(MANIFESTS, 'webhook', 'excluded-namespaces-policy.yaml'),
    '-f',
    join(MANIFESTS, 'webhook', 'owner-references-policy.yaml'),
    '-f',
    join(MANIFESTS, 'policies', 'allow-list-params-policy.yaml'),
    // The allow-list policies tenantgate-allow-* (ADR 0095): after their parameters' CRD is Established.
    '-f',
    join(MANIFESTS, 'policies', 'allow-lists.yaml'),
    // D1 (who confirms a deletion) and D3 (the Project CRD is not deleted while a Project exists), ADR 0096.
    '-f',
    join(MANIFESTS, 'policies', 'deletion.yaml'),
    '-f',
    join(MANIFESTS, 'rbac', 'deletion-confirmer.yaml'),
  ]);
}

/**
 * The owners' RoleBindings of a project's namespaces, applied as admin: what render emits for declared
 * namespaces and what the controller creates for self-service ones (for tests that run the webhook
 * without the controller).
 */
export async function applyOwnerBindings(info: ClusterInfo, project: Project, namespaces: string[]): Promise<void> {
  const docs = namespaces.map((ns) => JSON.stringify(ownerBinding(project, ns)));
  await kubectlAs(info, 'admin', ['apply', '-f', '-'], docs.join('\n'));
}

/**
 * The AllowList `tenantgate-allow` of a project's namespaces (the allow-list policies' parameters),
 * applied as admin: what render emits for declared namespaces and what the controller writes in every
 * project namespace (for tests that run the webhook without the controller). `config`: tenantgate.yaml
 * (its `allow` defaults the Project's lists; DEFAULT_CONFIG when not given).
 */
export async function applyAllowListParams(
  info: ClusterInfo,
  project: Project,
  namespaces: string[],
  config: TenantgateConfig = DEFAULT_CONFIG,
): Promise<void> {
  const docs = namespaces.map((ns) => JSON.stringify(unheld(allowListFor(config, project, ns))));
  await kubectlAs(info, 'admin', ['apply', '-f', '-'], docs.join('\n'));
}

/**
 * An AllowList without its finalizer, for a test or a bench that writes it with no controller running: nobody
 * would take the finalizer off, and a deleted namespace would stay Terminating.
 */
export function unheld<T extends { metadata: { finalizers: string[] } }>(allowList: T): T {
  return { ...allowList, metadata: { ...allowList.metadata, finalizers: [] } };
}

/** A kubeconfig file for a ServiceAccount (TokenRequest), for components run as separate processes. */
export async function serviceAccountKubeconfigFile(
  info: ClusterInfo,
  namespace: string,
  name: string,
): Promise<string> {
  const token = (
    await kubectlAs(info, 'admin', ['-n', namespace, 'create', 'token', name, '--duration=24h'])
  ).stdout.trim();
  const file = join(info.dir, `kubeconfig-sa-${namespace}-${name}`);
  await writeFile(
    file,
    kubeconfigYaml(
      info.server,
      await readFile(info.caFile, 'utf8'),
      `system:serviceaccount:${namespace}:${name}`,
      token,
    ),
    { mode: 0o600 },
  );
  return file;
}

/**
 * A kubeconfig for a ServiceAccount (TokenRequest), so components run with their own RBAC. `server`
 * replaces the apiserver's URL (e.g. a TCP proxy in front of it that a test can cut).
 */
export async function serviceAccountKubeConfig(
  info: ClusterInfo,
  namespace: string,
  name: string,
  server = info.server,
): Promise<k8s.KubeConfig> {
  const token = (
    await kubectlAs(info, 'admin', ['-n', namespace, 'create', 'token', name, '--duration=24h'])
  ).stdout.trim();
  const kc = new PooledKubeConfig();
  kc.loadFromString(
    kubeconfigYaml(server, await readFile(info.caFile, 'utf8'), `system:serviceaccount:${namespace}:${name}`, token),
  );
  return kc;
}

/**
 * The shipped WebhookConfigurations (or `shipped`, another version of that file), with the Service
 * reference replaced by a URL on this machine.
 */
export async function localWebhookConfigurations(url: string, caBundle: string, shipped?: string): Promise<string> {
  const text = shipped ?? (await readFile(join(MANIFESTS, 'webhook', 'webhook-configurations.yaml'), 'utf8'));
  const docs = parseAllDocuments(text).map(
    (d) =>
      d.toJS() as {
        metadata: { annotations?: Record<string, string> };
        webhooks: Array<{ clientConfig: Record<string, unknown> }>;
      },
  );
  for (const doc of docs) {
    delete doc.metadata.annotations;
    for (const hook of doc.webhooks) {
      const path = (hook.clientConfig.service as { path: string }).path;
      hook.clientConfig = { url: `${url}${path}`, caBundle };
    }
  }
  return docs.map((d) => `---\n${stringify(d)}`).join('');
}

export async function registerWebhooks(info: ClusterInfo, url: string, caBundle: string): Promise<void> {
  await kubectlAs(info, 'admin', ['apply', '-f', '-'], await localWebhookConfigurations(url, caBundle));
}

export async function unregisterWebhooks(info: ClusterInfo): Promise<void> {
  await kubectlAs(info, 'admin', [
    'delete',
    'validatingwebhookconfiguration/tenantgate',
    'mutatingwebhookconfiguration/tenantgate',
    '--ignore-not-found',
  ]);
}

export interface LocalWebhook {
  webhook: RunningWebhook;
  certs: WebhookCertFiles;
  url: string;
  stop(): Promise<void>;
}

/** The webhook options that accept reviews from this cluster's apiserver only (its client certificate, ADR 0034). */
function apiserverOnly(info: ClusterInfo): { clientCa: string; clientAllowedNames: string[] } {
  return { clientCa: info.webhookClient.caFile, clientAllowedNames: [info.webhookClient.name] };
}

/**
 * Starts the webhook in this process under its ServiceAccount and registers it with the apiserver.
 * It accepts reviews from the apiserver only, unless `clientAuth: false`; `clientCa` replaces the
 * control plane's client CA file and name (a test that rotates them gives its own). `server`: the URL
 * the webhook reaches the apiserver at (default the control plane's; e.g. a TCP proxy a test can cut).
 */
export async function startLocalWebhook(
  info: ClusterInfo,
  config: Partial<TenantgateConfig> = {},
  options: {
    register?: boolean;
    certs?: WebhookCertFiles;
    log?: (m: string) => void;
    onDecision?: (decision: AdmissionDecision) => void;
    clientAuth?: boolean;
    clientCa?: { file: string; allowedNames: string[] };
    server?: string;
  } = {},
): Promise<LocalWebhook> {
  const certs = options.certs ?? (await generateWebhookCerts(join(info.dir, 'webhook-certs')));
  const kubeConfig = await serviceAccountKubeConfig(
    info,
    DEFAULT_CONFIG.systemNamespace,
    'tenantgate-webhook',
    options.server,
  );
  const webhook = await startWebhook({
    config: { ...DEFAULT_CONFIG, ...(EXAMPLE_PRICING ? { pricing: EXAMPLE_PRICING } : {}), ...config },
    kubeConfig,
    cert: certs.cert,
    key: certs.key,
    ...(options.clientAuth === false
      ? {}
      : options.clientCa
        ? { clientCa: options.clientCa.file, clientAllowedNames: options.clientCa.allowedNames }
        : apiserverOnly(info)),
    port: 0,
    host: '127.0.0.1',
    log: options.log ?? (() => {}),
    ...(options.onDecision ? { onDecision: options.onDecision } : {}),
  });
  await webhook.cache.waitSynced();
  const url = `https://127.0.0.1:${webhook.port}`;
  if (options.register ?? true) await registerWebhooks(info, url, certs.caBundle);
  return {
    webhook,
    certs,
    url,
    async stop() {
      if (options.register ?? true) await unregisterWebhooks(info);
      await webhook.stop();
    },
  };
}
