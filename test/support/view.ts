/**
 * The budget view on a local control plane (shared by its e2e tests and `make run`): the controller runs
 * in this process as its ServiceAccount and serves view.tenantgate.io on this machine's first
 * non-loopback address; a selector-less Service `tenantgate-view` with an EndpointSlice pointing there
 * and the APIService (caBundle of a CA made here) register it with the kube-apiserver, which reaches it
 * through aggregator routing. EndpointSlice validation refuses loopback addresses (127.0.0.0/8), hence
 * the machine's own address rather than 127.0.0.1.
 */
import { execa } from 'execa';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_CONFIG, type TenantgateConfig } from '../../src/config/config.js';
import { generateWebhookCerts, type WebhookCertFiles } from '../../src/certs/files.js';
import { startController, type RunningController } from '../../src/controller/start.js';
import { helmTemplate } from '../../hack/chart-manifests.js';
import type { ClusterInfo } from './devcluster/controlplane.js';
import { serviceAccountKubeConfig } from './devcluster/tenantgate.js';
import { metricsTarget, metricsText } from './controller-kit.js';

export const APISERVICE = 'v1alpha1.view.tenantgate.io';
const SERVICE = 'tenantgate-view';

/** This machine's first IPv4 address that an EndpointSlice accepts (not loopback, not link-local). */
export function hostAddress(): string {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? [])
      if (a.family === 'IPv4' && !a.internal && !a.address.startsWith('169.254.')) return a.address;
  }
  throw new Error(
    'no non-loopback IPv4 address on this machine: the apiserver reaches an aggregated API through an EndpointSlice, which refuses 127.0.0.0/8',
  );
}

export async function run(info: ClusterInfo, args: string[], input?: string) {
  return execa(join(info.binDir, 'kubectl'), args, {
    env: { KUBECONFIG: info.kubeconfigs.admin ?? '' },
    reject: false,
    timeout: 60_000,
    encoding: 'utf8',
    ...(input !== undefined ? { input } : {}),
  });
}

async function apply(info: ClusterInfo, yaml: string): Promise<void> {
  const r = await run(info, ['apply', '-f', '-'], yaml);
  if (r.exitCode !== 0) throw new Error(`kubectl apply failed: ${r.stderr}`);
}

/**
 * The chart's objects for these values (helm template), applied as admin: e.g. the view's RBAC
 * (templates/view/rbac.yaml) or visibility's tenant and controller RBAC.
 */
export async function applyChartTemplates(info: ClusterInfo, templates: string[], values: string[]): Promise<void> {
  const yaml = await helmTemplate([
    ...values.flatMap((v) => ['--set', v]),
    ...templates.flatMap((t) => ['--show-only', `templates/${t}`]),
  ]);
  await apply(info, yaml);
}

export interface LocalView {
  controller: RunningController;
  address: string;
  /** Every request the view answered, in order: the caller (as the apiserver's front proxy named it), path and status. */
  requests: Array<{ user?: string; path: string; status: number }>;
  /** The serving certificate's files and its CA (the APIService's caBundle). */
  certs: WebhookCertFiles;
  stop(): Promise<void>;
}

/**
 * Starts the controller (its ServiceAccount, leader election off) serving the view, and registers the APIService.
 * The aggregator finds the view through an EndpointSlice only: no v1 Endpoints object (deprecated; every
 * supported minor's aggregator reads EndpointSlices).
 */
export async function startControllerWithView(
  info: ClusterInfo,
  config: Partial<TenantgateConfig> = {},
  log: (m: string) => void = () => {},
): Promise<LocalView> {
  const address = hostAddress();
  const certs = await generateWebhookCerts(join(info.dir, 'view-certs'), {
    service: SERVICE,
    ips: [address, '127.0.0.1'],
  });
  const kubeConfig = await serviceAccountKubeConfig(info, DEFAULT_CONFIG.systemNamespace, 'tenantgate-controller');
  const requests: LocalView['requests'] = [];
  const controller = await startController({
    kubeConfig,
    config: { ...DEFAULT_CONFIG, ...config },
    metricsPort: 0,
    metricsHost: '127.0.0.1',
    leaderElection: false,
    // Files, as the chart mounts them: a renewed pair is served without a restart (ADR 0034).
    view: { port: 0, host: address, certFile: certs.cert, keyFile: certs.key, onRequest: (r) => requests.push(r) },
    log: (m, fields) => log(`${m}${fields ? ` ${JSON.stringify(fields)}` : ''}`),
  });
  const ns = DEFAULT_CONFIG.systemNamespace;
  await apply(
    info,
    [
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: SERVICE, namespace: ns },
        spec: { ports: [{ name: 'https', port: 443, targetPort: controller.viewPort }] },
      }),
      JSON.stringify({
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: { name: `${SERVICE}-local`, namespace: ns, labels: { 'kubernetes.io/service-name': SERVICE } },
        addressType: 'IPv4',
        endpoints: [{ addresses: [address], conditions: { ready: true } }],
        ports: [{ name: 'https', port: controller.viewPort, protocol: 'TCP' }],
      }),
      JSON.stringify({
        apiVersion: 'apiregistration.k8s.io/v1',
        kind: 'APIService',
        metadata: { name: APISERVICE },
        spec: {
          group: 'view.tenantgate.io',
          version: 'v1alpha1',
          groupPriorityMinimum: 1000,
          versionPriority: 15,
          service: { name: SERVICE, namespace: ns, port: 443 },
          caBundle: certs.caBundle,
        },
      }),
    ].join('\n'),
  );
  const waited = await run(info, ['wait', '--for=condition=Available', '--timeout=60s', `apiservice/${APISERVICE}`]);
  if (waited.exitCode !== 0) {
    const status = await run(info, ['get', 'apiservice', APISERVICE, '-o', 'jsonpath={.status.conditions}']);
    await controller.stop();
    throw new Error(`APIService ${APISERVICE} not Available: ${waited.stderr} ${status.stdout}`);
  }
  return {
    controller,
    address,
    requests,
    certs,
    async stop() {
      // The APIService goes first: an APIService that does not answer stalls namespace deletion.
      await run(info, ['delete', 'apiservice', APISERVICE, '--ignore-not-found']);
      await controller.stop();
    },
  };
}

/** The controller's tenantgate_controller_api_writes_total summed over verbs and resources (leases aside), from /metrics (scraped as the control plane's admin). */
export async function apiWrites(controller: RunningController, info: ClusterInfo): Promise<number> {
  const text = await metricsText(metricsTarget(controller, info.tokens.admin!));
  let n = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith('tenantgate_controller_api_writes_total{') || line.includes('resource="leases"')) continue;
    n += Number(line.split(' ').at(-1));
  }
  return n;
}
