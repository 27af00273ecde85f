/**
 * bench/comparisons/peers/capsule.ts: Capsule v0.14.0's GlobalResourceQuota as a peer of tenantgate's project
 * budget (ADR 0012), out of cluster against bench/comparisons/peers' control plane, every client call on 127.0.0.1.
 *
 *  - The binary: `./cmd/controller` of github.com/projectcapsule/capsule, built by hack/build-go-tool.sh
 *    capsule from the wrapper module bench/comparisons/peers/capsule/ (cached in .cache/capsule/<version>/).
 *  - Its CRDs: charts/capsule/crds/*.yaml from the module zip in the Go module cache (read at run time,
 *    never copied into this repository).
 *  - Its configuration: the CapsuleConfiguration `default` as the Helm chart writes it, with only the
 *    chart's GlobalResourceQuota validating webhook (path /global-resource-quotas/calculations, every
 *    namespaced CREATE/UPDATE plus GlobalResourceQuota writes, failurePolicy Fail, matchPolicy
 *    Equivalent, sideEffects NoneOnDryRun, 30 s timeout, no gating by user). Capsule's own admission
 *    controller writes the ValidatingWebhookConfiguration from it. The chart selects namespaces with the
 *    label capsule.clastix.io/tenant; here the same selector names the label our tenants' namespaces
 *    carry, tenantgate.io/project (no Capsule Tenant is involved in a GlobalResourceQuota).
 *  - TLS: a serving pair we make (src/certs, IP SAN 127.0.0.1) in --webhook-cert-path, the CA in the
 *    configuration's client.caBundle; Capsule's TLS reconciler off (enableTLSReconciler false).
 *  - Client rate limit: the chart's default (QPS 20, burst 30), or raised to see the engine's own cost.
 *
 * Capsule binds its health probe to :10080 (fixed in v0.14.0) and its webhook to all addresses on the
 * port we give it; nothing but the local apiserver and this bench talks to either.
 */
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { join } from 'node:path';
import { generateWebhookCerts } from '../../../src/certs/files.js';
import type { ControlPlane } from '../../../test/support/devcluster/controlplane.js';
import { freePort } from '../../../test/support/devcluster/ports.js';
import { startProcess } from '../../../test/support/devcluster/processes.js';
import { kubectlAs } from '../../../test/support/devcluster/tenantgate.js';
import { log, nowMs, tailFile } from '../../lib/measure.js';
import { CAPSULE_MODULE, type PeerBinary, applyFiles, eventually, moduleDir } from './engines.js';

const CAPSULE_NS = 'capsule-system';
const CAPSULE_SA = 'capsule';
const CONFIGURATION = 'default';
const VALIDATING_NAME = 'capsule-dynamic-webhook';
const MUTATING_NAME = 'capsule-mutating-webhook-configuration';
const GRQ_PATH = '/global-resource-quotas/calculations';
/** The health probe address Capsule v0.14.0 binds (not a flag); fetch() refuses port 10080 (a "bad port"), node:http does not. */
const HEALTH_URL = 'http://127.0.0.1:10080/readyz';
/** The namespace label our tenants' namespaces carry (the chart's selector uses capsule.clastix.io/tenant). */
const TENANT_LABEL = 'tenantgate.io/project';

const kubectl = (cp: ControlPlane, args: string[], input?: string) => kubectlAs(cp.info, 'admin', args, input);

export async function installCapsuleCrds(cp: ControlPlane, version: string): Promise<void> {
  const dir = join(moduleDir(CAPSULE_MODULE, version), 'charts', 'capsule', 'crds');
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => join(dir, f));
  log(`peers: Capsule CRDs: ${files.length} files from ${dir}`);
  await applyFiles(cp, files);
  await kubectl(cp, [
    'wait',
    '--for=condition=Established',
    '--timeout=120s',
    'crd/globalresourcequotas.capsule.clastix.io',
    'crd/quantityledgers.capsule.clastix.io',
    'crd/capsuleconfigurations.capsule.clastix.io',
  ]);
  await kubectl(
    cp,
    ['apply', '-f', '-'],
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'List',
      items: [
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: CAPSULE_NS } },
        { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: CAPSULE_SA, namespace: CAPSULE_NS } },
      ],
    }),
  );
}

/** The chart's GlobalResourceQuota webhook (values.yaml webhooks.hooks.globalresourcequotas), our label in its selector. */
function grqWebhook() {
  return {
    name: 'calculation.global-resource-quotas.validating.projectcapsule.dev',
    admissionReviewVersions: ['v1', 'v1beta1'],
    path: GRQ_PATH,
    failurePolicy: 'Fail',
    matchPolicy: 'Equivalent',
    namespaceSelector: { matchExpressions: [{ key: TENANT_LABEL, operator: 'Exists' }] },
    rules: [
      {
        apiGroups: ['*'],
        apiVersions: ['*'],
        operations: ['CREATE', 'UPDATE'],
        resources: ['*/*'],
        scope: 'Namespaced',
      },
      {
        apiGroups: ['capsule.clastix.io'],
        apiVersions: ['v1beta2'],
        operations: ['CREATE', 'UPDATE'],
        resources: ['globalresourcequotas'],
        scope: 'Cluster',
      },
    ],
    sideEffects: 'NoneOnDryRun',
    timeoutSeconds: 30,
  };
}

export interface CapsuleOptions {
  /** Capsule's client rate limit (--client-connection-qps/-burst); the chart's 20/30 when absent. */
  qps?: number;
  burst?: number;
}

export interface CapsuleEngine {
  pid: number;
  logFile: string;
  stop(): Promise<void>;
}

export async function startCapsule(
  cp: ControlPlane,
  work: string,
  bin: PeerBinary,
  options: CapsuleOptions = {},
): Promise<CapsuleEngine> {
  const certs = await generateWebhookCerts(join(work, `capsule-certs-${Date.now()}`), {
    service: 'capsule-webhook-service',
    namespace: CAPSULE_NS,
    ips: ['127.0.0.1'],
  });
  const certDir = join(work, `capsule-cert-dir-${Date.now()}`);
  mkdirSync(certDir, { recursive: true });
  copyFileSync(certs.cert, join(certDir, 'tls.crt'));
  copyFileSync(certs.key, join(certDir, 'tls.key'));
  const port = await freePort();
  const logFile = join(work, `capsule-${Date.now()}.log`);
  await kubectl(
    cp,
    ['apply', '-f', '-'],
    JSON.stringify({
      apiVersion: 'capsule.clastix.io/v1beta2',
      kind: 'CapsuleConfiguration',
      metadata: { name: CONFIGURATION },
      spec: {
        enableTLSReconciler: false,
        admission: {
          validating: {
            name: VALIDATING_NAME,
            client: { url: `https://127.0.0.1:${port}`, caBundle: certs.caBundle },
            webhooks: [grqWebhook()],
          },
          mutating: {
            name: MUTATING_NAME,
            client: { url: `https://127.0.0.1:${port}`, caBundle: certs.caBundle },
            webhooks: [],
          },
        },
      },
    }),
  );
  const env = {
    ...process.env,
    KUBECONFIG: cp.info.kubeconfigs.admin!,
    NAMESPACE: CAPSULE_NS,
    SERVICE_ACCOUNT: CAPSULE_SA,
  };
  const args = [
    `--configuration-name=${CONFIGURATION}`,
    `--webhook-port=${port}`,
    `--webhook-cert-path=${certDir}`,
    '--metrics-addr=0',
    ...(options.qps !== undefined ? [`--client-connection-qps=${options.qps}`] : []),
    ...(options.burst !== undefined ? [`--client-connection-burst=${options.burst}`] : []),
    '--zap-log-level=info',
  ];
  const proc = startProcess('capsule', bin.path, args, logFile, env);
  const started = nowMs();
  const cleanup = async () => {
    await kubectl(cp, ['delete', 'validatingwebhookconfiguration', VALIDATING_NAME, '--ignore-not-found']).catch(
      () => undefined,
    );
    await kubectl(cp, ['delete', 'capsuleconfiguration', CONFIGURATION, '--ignore-not-found', '--wait=false']).catch(
      () => undefined,
    );
  };
  try {
    await eventually(
      'Capsule /readyz',
      async () => {
        if (proc.child.exitCode !== null)
          throw new Error(`capsule exited with ${proc.child.exitCode}:\n${tailFile(logFile, 40)}`);
        const status = await httpStatus(HEALTH_URL);
        if (status !== 200) throw new Error(`readyz HTTP ${status}`);
      },
      300_000,
      500,
    ).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}\n${tailFile(logFile, 40)}`);
    });
    await eventually(
      'Capsule registers its GlobalResourceQuota webhook',
      async () => {
        const r = await kubectl(cp, [
          'get',
          'validatingwebhookconfiguration',
          VALIDATING_NAME,
          '-o',
          'jsonpath={.webhooks[*].clientConfig.url}',
        ]);
        if (!r.stdout.includes(GRQ_PATH)) throw new Error(`not yet: ${r.stdout}`);
      },
      120_000,
      1000,
    );
    log(
      `peers: Capsule serving on 127.0.0.1:${port} after ${Math.round((nowMs() - started) / 1000)} s${options.qps !== undefined ? ` (client QPS ${options.qps}, burst ${options.burst})` : ' (client QPS 20, burst 30: the chart)'}`,
    );
  } catch (err) {
    await proc.stop(5000);
    await cleanup();
    throw err;
  }
  return {
    pid: proc.pid,
    logFile,
    async stop() {
      await proc.stop(15_000);
      await cleanup();
    },
  };
}

/** A GlobalResourceQuota over the namespaces labelled tenantgate.io/project=<project>. */
function globalQuota(name: string, project: string, hard: Record<string, string>) {
  return {
    apiVersion: 'capsule.clastix.io/v1beta2',
    kind: 'GlobalResourceQuota',
    metadata: { name },
    spec: { namespaceSelectors: [{ matchLabels: { [TENANT_LABEL]: project } }], quota: { hard } },
  };
}

export async function applyGlobalQuota(
  cp: ControlPlane,
  name: string,
  project: string,
  hard: Record<string, string>,
): Promise<void> {
  await kubectl(cp, ['apply', '-f', '-'], JSON.stringify(globalQuota(name, project, hard)));
  await eventually(
    `GlobalResourceQuota ${name} Ready`,
    async () => {
      const r = await kubectl(cp, [
        'get',
        'globalresourcequota',
        name,
        '-o',
        'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
      ]);
      if (r.stdout.trim() !== 'True') throw new Error(`Ready=${r.stdout.trim() || 'unset'}`);
    },
    120_000,
    500,
  );
}

/** Deletes a GlobalResourceQuota and waits for the garbage collector to remove its ResourceQuotas. */
export async function deleteGlobalQuota(cp: ControlPlane, name: string): Promise<void> {
  await kubectl(cp, ['delete', 'globalresourcequota', name, '--ignore-not-found', '--wait=true', '--timeout=60s']);
  await eventually(
    `ResourceQuotas of GlobalResourceQuota ${name} gone`,
    async () => {
      const r = await kubectl(cp, [
        'get',
        'resourcequota',
        '-A',
        '-l',
        `projectcapsule.dev/global-resource-quota=${name}`,
        '--no-headers',
      ]);
      if (r.stdout.trim()) throw new Error(`left: ${r.stdout.trim().split('\n').length}`);
    },
    120_000,
    500,
  );
}

function httpStatus(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpGet(url, { timeout: 3000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}
