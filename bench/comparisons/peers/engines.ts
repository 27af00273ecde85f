/**
 * bench/comparisons/peers/engines.ts: starting, registering and stopping the three admission engines that
 * bench/comparisons/peers.ts compares, each out of cluster against the bench's own control plane, every listener on
 * 127.0.0.1:
 *
 *  - tenantgate: `tenantgate webhook` (compiled into .cache/bench-peers/dist), its shipped webhook
 *    configurations with the Service replaced by a URL (test/support/devcluster/tenantgate.ts).
 *  - Kyverno v1.19.1: the admission controller binary alone (`./cmd/kyverno`; reports, background and
 *    cleanup controllers are separate binaries and are not run), `--serverIP=127.0.0.1:<port>` so it
 *    generates its own CA and serving pair (IP SAN 127.0.0.1) into Secrets and registers its own
 *    webhooks at that address; admission reports off (no reports controller would ever consume them).
 *    The same binary runs Kyverno's global-context controller: GlobalContextEntries (its CRD is among
 *    config/crds/kyverno) need no other Kyverno component.
 *  - Gatekeeper v3.23.1: `--operation=webhook` plus `generate` (which creates each template's constraint
 *    CRD; the release runs it in the audit pod), no audit, status or mutation,
 *    `--disable-cert-rotation` with a serving pair we make (src/certs, IP SAN 127.0.0.1) in `--cert-dir`,
 *    and a ValidatingWebhookConfiguration we register at `/v1/admit` with failurePolicy Fail.
 *
 * The peers' CRDs come from their module zips in the Go module cache (read at run time, never copied
 * into this repository).
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { generateWebhookCerts, type WebhookCertFiles } from '../../../src/certs/files.js';
import type { ControlPlane } from '../../../test/support/devcluster/controlplane.js';
import { freePort } from '../../../test/support/devcluster/ports.js';
import { httpsGet } from '../../../test/support/devcluster/https-get.js';
import { startProcess } from '../../../test/support/devcluster/processes.js';
import { kubectlAs, registerWebhooks, unregisterWebhooks } from '../../../test/support/devcluster/tenantgate.js';
import { ROOT, log, nowMs, sleep, startChild, tailFile } from '../../lib/measure.js';

const KYVERNO_MODULE = 'github.com/kyverno/kyverno';
const GATEKEEPER_MODULE = 'github.com/open-policy-agent/gatekeeper/v3';
export const CAPSULE_MODULE = 'github.com/projectcapsule/capsule';
/** The peers built from Go modules (bench/comparisons/peers/<peer>/go.mod pins each). */
export type PeerName = 'kyverno' | 'gatekeeper' | 'capsule';
const PEER_MODULES: Record<PeerName, string> = {
  kyverno: KYVERNO_MODULE,
  gatekeeper: GATEKEEPER_MODULE,
  capsule: CAPSULE_MODULE,
};
const POLICIES = join(ROOT, 'bench', 'comparisons', 'peers', 'policies');

export type EngineName = 'tenantgate' | PeerName;

export interface Engine {
  name: EngineName;
  pid: number;
  /** Where AdmissionReviews for a Namespace CREATE go when sent directly (bypassing the apiserver). */
  direct: { port: number; path: string; ca: Buffer };
  logFile: string;
  /** Stops the process and removes its webhook configurations (so a stopped engine never fails requests). */
  stop(): Promise<void>;
}

/** The version a wrapper module pins (bench/comparisons/peers/<peer>/go.mod). */
function pinnedVersion(peer: PeerName): string {
  const module = PEER_MODULES[peer];
  const gomod = readFileSync(join(ROOT, 'bench', 'comparisons', 'peers', peer, 'go.mod'), 'utf8');
  const m = new RegExp(
    `^(?:require\\s+)?\\s*${module.replaceAll('.', '\\.').replaceAll('/', '\\/')}\\s+(v\\S+)`,
    'm',
  ).exec(gomod);
  if (!m) throw new Error(`bench/comparisons/peers/${peer}/go.mod does not require ${module}`);
  return m[1]!;
}

export interface PeerBinary {
  peer: PeerName;
  version: string;
  path: string;
  sizeMB: number;
  /** Seconds hack/build-go-tool.sh took in this run; null when the binary was already in .cache/. */
  builtNowS: number | null;
}

/** hack/build-go-tool.sh <peer> (a no-op when the binary is cached); its output goes to our stderr. */
export function buildPeer(peer: PeerName): PeerBinary {
  const version = pinnedVersion(peer);
  const path = join(ROOT, '.cache', peer, version, peer);
  let builtNowS: number | null = null;
  if (!existsSync(path)) {
    log(
      `peers: building ${peer} ${version} from Go modules (hack/build-go-tool.sh, nice -n 10; many minutes on 2 cores)`,
    );
    const t = nowMs();
    const r = spawnSync(join(ROOT, 'hack', 'build-go-tool.sh'), [peer], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
      encoding: 'utf8',
    });
    if (r.status !== 0) throw new Error(`hack/build-go-tool.sh ${peer} failed with ${r.status}`);
    builtNowS = Math.round((nowMs() - t) / 1000);
  }
  return { peer, version, path, sizeMB: Math.round((statSync(path).size / 1024 / 1024) * 10) / 10, builtNowS };
}

/** The module's directory in the Go module cache (downloaded by the build). */
export function moduleDir(module: string, version: string): string {
  const r = spawnSync('go', ['env', 'GOMODCACHE'], { encoding: 'utf8' });
  const cache = r.stdout.trim();
  if (!cache) throw new Error('go env GOMODCACHE printed nothing');
  // The module cache escapes capitals as !x; our module paths have none.
  const dir = join(cache, `${module}@${version}`);
  if (!existsSync(dir)) throw new Error(`${dir} missing: run hack/build-go-tool.sh first (it downloads the module)`);
  return dir;
}

const kubectl = (cp: ControlPlane, args: string[], input?: string) => kubectlAs(cp.info, 'admin', args, input);

export async function applyFiles(cp: ControlPlane, files: string[]): Promise<void> {
  // CRDs with large schemas exceed the last-applied annotation: server-side apply.
  for (let k = 0; k < files.length; k += 8) {
    const args = ['apply', '--server-side', '--force-conflicts'];
    for (const f of files.slice(k, k + 8)) args.push('-f', f);
    await kubectl(cp, args);
  }
}

export async function eventually<T>(
  what: string,
  fn: () => Promise<T>,
  timeoutMs = 120_000,
  everyMs = 500,
): Promise<T> {
  const deadline = nowMs() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      last = err;
    }
    if (nowMs() > deadline)
      throw new Error(
        `${what}: not within ${timeoutMs / 1000} s: ${last instanceof Error ? last.message : String(last)}`,
      );
    await sleep(everyMs);
  }
}

// ---------------------------------------------------------------------------------------------
// tenantgate
// ---------------------------------------------------------------------------------------------

/** `tenantgate webhook` with `config` (tenantgate.yaml keys; the built-in defaults otherwise). */
export async function startTenantgate(
  cp: ControlPlane,
  work: string,
  mainJs: string,
  certs: WebhookCertFiles,
  register: boolean,
  config: Record<string, unknown> = {},
): Promise<Engine> {
  const logFile = join(work, `tenantgate-${Date.now()}.log`);
  const configFile = join(work, `tenantgate-${Date.now()}.yaml`);
  writeFileSync(configFile, stringify(config));
  const child = await startChild(
    [],
    [
      mainJs,
      'webhook',
      '--config',
      configFile,
      '--kubeconfig',
      cp.info.kubeconfigs.admin!,
      '--cert',
      certs.cert,
      '--key',
      certs.key,
      '--port',
      '0',
      '--host',
      '127.0.0.1',
    ],
    logFile,
    300_000,
  );
  const ca = readFileSync(certs.caCert);
  await eventually(
    'tenantgate /readyz',
    async () => {
      const r = await httpsGet(`https://127.0.0.1:${child.port}/readyz`, { ca });
      if (r.status !== 200) throw new Error(`HTTP ${r.status}`);
    },
    15 * 60_000,
    200,
  );
  if (register) await registerWebhooks(cp.info, `https://127.0.0.1:${child.port}`, certs.caBundle);
  return {
    name: 'tenantgate',
    pid: child.pid,
    direct: { port: child.port, path: '/validate', ca },
    logFile,
    async stop() {
      if (register) await unregisterWebhooks(cp.info);
      await child.stop();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Kyverno
// ---------------------------------------------------------------------------------------------

const KYVERNO_NS = 'kyverno';

export async function installKyvernoCrds(cp: ControlPlane, version: string): Promise<void> {
  const base = join(moduleDir(KYVERNO_MODULE, version), 'config', 'crds');
  const files: string[] = [];
  for (const group of readdirSync(base).sort()) {
    const dir = join(base, group);
    if (!statSync(dir).isDirectory()) continue;
    for (const f of readdirSync(dir).sort()) if (f.endsWith('.yaml')) files.push(join(dir, f));
  }
  log(`peers: Kyverno CRDs: ${files.length} files from ${base}`);
  await applyFiles(cp, files);
  await kubectl(cp, [
    'wait',
    '--for=condition=Established',
    '--timeout=120s',
    'crd/validatingpolicies.policies.kyverno.io',
    'crd/clusterpolicies.kyverno.io',
    'crd/policies.kyverno.io',
    'crd/globalcontextentries.kyverno.io',
  ]);
  await kubectl(
    cp,
    ['apply', '-f', '-'],
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'List',
      items: [
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: KYVERNO_NS } },
        // The configuration ConfigMaps the admission controller watches (INIT_CONFIG, METRICS_CONFIG): empty,
        // so Kyverno's built-in defaults apply (no resource filters, no excluded groups).
        { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'kyverno', namespace: KYVERNO_NS } },
        { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'kyverno-metrics', namespace: KYVERNO_NS } },
      ],
    }),
  );
}

export interface KyvernoOptions {
  /** Kyverno's own client rate limit (its default: 100 QPS, burst 200); resource.Get goes through it. */
  qps?: number;
  burst?: number;
  /** Files under bench/comparisons/peers/policies/, applied once Kyverno serves; deleted again when it stops. */
  policies: string[];
  /**
   * GlobalContextEntry files (kyverno.io/v2) applied before the policies, deleted when it stops. The
   * admission controller itself runs the global-context controller (an informer per kubernetesResource
   * entry; v1.19.1 has no flag to turn it on or off) and serves globalContext.Get to CEL policies.
   */
  globalContextEntries?: string[];
}

export async function startKyverno(
  cp: ControlPlane,
  work: string,
  bin: PeerBinary,
  options: KyvernoOptions,
): Promise<Engine> {
  const port = await freePort();
  const metricsPort = await freePort();
  const logFile = join(work, `kyverno-${Date.now()}.log`);
  const env = {
    ...process.env,
    KYVERNO_NAMESPACE: KYVERNO_NS,
    KYVERNO_SERVICEACCOUNT_NAME: 'kyverno-admission-controller',
    KYVERNO_ROLE_NAME: 'kyverno:admission-controller',
    KYVERNO_DEPLOYMENT: 'kyverno-admission-controller',
    KYVERNO_SVC: 'kyverno-svc',
    KYVERNO_POD_NAME: 'kyverno-bench',
    INIT_CONFIG: 'kyverno',
    METRICS_CONFIG: 'kyverno-metrics',
  };
  const args = [
    `--kubeconfig=${cp.info.kubeconfigs.admin!}`,
    `--serverIP=127.0.0.1:${port}`,
    '--webhookServerHost=127.0.0.1',
    `--webhookServerPort=${port}`,
    `--servicePort=${port}`,
    '--caSecretName=kyverno-svc.kyverno.svc.kyverno-tls-ca',
    '--tlsSecretName=kyverno-svc.kyverno.svc.kyverno-tls-pair',
    // No reports controller runs here to aggregate admission reports: do not write them.
    '--admissionReports=false',
    // The Helm chart's default.
    '--omitEvents=PolicyApplied,PolicySkipped',
    '--metricsHost=127.0.0.1',
    `--metricsPort=${metricsPort}`,
    '--controllerRuntimeMetricsAddress=0',
    '--loggingFormat=text',
    '--v=2',
    ...(options.qps !== undefined ? [`--clientRateLimitQPS=${options.qps}`] : []),
    ...(options.burst !== undefined ? [`--clientRateLimitBurst=${options.burst}`] : []),
  ];
  const proc = startProcess('kyverno', bin.path, args, logFile, env);
  try {
    const started = nowMs();
    // Its serving pair (generated into Secrets by its certmanager controller) and its webhooks.
    await eventually(
      'Kyverno serving',
      async () => {
        if (proc.child.exitCode !== null)
          throw new Error(`kyverno exited with ${proc.child.exitCode}:\n${tailFile(logFile)}`);
        // Kyverno's CA is generated at start-up (into a Secret): this probe does not verify it.
        const status = await insecureStatus(port, '/health/liveness');
        if (status !== 200) throw new Error(`liveness HTTP ${status}`);
      },
      300_000,
      500,
    ).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}\n${tailFile(logFile, 40)}`);
    });
    log(`peers: Kyverno serving on 127.0.0.1:${port} after ${Math.round((nowMs() - started) / 1000)} s`);
    // Its own webhook validates GlobalContextEntries: apply until it answers.
    for (const f of options.globalContextEntries ?? [])
      await eventually(`GlobalContextEntry ${f}`, () => kubectl(cp, ['apply', '-f', join(POLICIES, f)]), 60_000, 1000);
    for (const p of options.policies) await kubectl(cp, ['apply', '-f', join(POLICIES, p)]);
    // Kyverno adds a webhook for each ValidatingPolicy's resources to its resource webhook configuration.
    const direct = await eventually(
      'Kyverno registers its ValidatingPolicy webhook for namespaces',
      async () => {
        const found = await kyvernoNamespaceWebhook(cp);
        if (!found) throw new Error('no Kyverno validating webhook for namespaces yet');
        return found;
      },
      180_000,
      1000,
    );
    const ca = Buffer.from(direct.caBundle, 'base64');
    return {
      name: 'kyverno',
      pid: proc.pid,
      direct: { port, path: direct.path, ca },
      logFile,
      async stop() {
        await proc.stop(15_000);
        await removeKyvernoWebhooks(cp);
        await removeKyvernoObjects(cp, options);
      },
    };
  } catch (err) {
    await proc.stop(5000);
    await removeKyvernoWebhooks(cp);
    await removeKyvernoObjects(cp, options).catch(() => {});
    throw err;
  }
}

/**
 * The policies and entries one start applied, so the next start (another variant, the race, the RSS
 * runs) enforces and caches only what it applies itself.
 */
async function removeKyvernoObjects(cp: ControlPlane, options: KyvernoOptions): Promise<void> {
  for (const f of [...options.policies, ...(options.globalContextEntries ?? [])]) {
    await kubectl(cp, ['delete', '-f', join(POLICIES, f), '--ignore-not-found', '--wait=false']);
  }
}

interface WebhookConfigList {
  items: Array<{
    metadata: { name: string; labels?: Record<string, string> };
    webhooks?: Array<{
      name: string;
      clientConfig: { url?: string; caBundle?: string };
      rules?: Array<{ resources?: string[]; operations?: string[] }>;
    }>;
  }>;
}

async function kyvernoNamespaceWebhook(cp: ControlPlane): Promise<{ path: string; caBundle: string } | undefined> {
  const list = JSON.parse(
    (await kubectl(cp, ['get', 'validatingwebhookconfigurations', '-o', 'json'])).stdout,
  ) as WebhookConfigList;
  for (const cfg of list.items) {
    if (!cfg.metadata.name.startsWith('kyverno-')) continue;
    for (const hook of cfg.webhooks ?? []) {
      const covers = (hook.rules ?? []).some(
        (r) =>
          (r.resources ?? []).includes('namespaces') && (r.operations ?? []).some((o) => o === 'CREATE' || o === '*'),
      );
      if (
        covers &&
        hook.clientConfig.url &&
        hook.clientConfig.caBundle &&
        /vpol|validat/i.test(hook.clientConfig.url)
      ) {
        return { path: new URL(hook.clientConfig.url).pathname, caBundle: hook.clientConfig.caBundle };
      }
    }
  }
  return undefined;
}

/** Kyverno leaves its webhook configurations behind (failurePolicy Fail): remove them once it is stopped. */
export async function removeKyvernoWebhooks(cp: ControlPlane): Promise<void> {
  for (const kind of ['validatingwebhookconfigurations', 'mutatingwebhookconfigurations']) {
    const list = JSON.parse((await kubectl(cp, ['get', kind, '-o', 'json'])).stdout) as WebhookConfigList;
    const names = list.items.map((i) => i.metadata.name).filter((n) => n.startsWith('kyverno-'));
    if (names.length) await kubectl(cp, ['delete', kind, ...names, '--ignore-not-found']);
  }
}

// ---------------------------------------------------------------------------------------------
// Gatekeeper
// ---------------------------------------------------------------------------------------------

const GATEKEEPER_NS = 'gatekeeper-system';
const GATEKEEPER_POD = 'gatekeeper-bench';

export async function installGatekeeperCrds(cp: ControlPlane, version: string, work: string): Promise<void> {
  // The release manifest in the module zip (deploy/gatekeeper.yaml) carries every CRD, rendered; we take the CRDs alone.
  const manifest = join(moduleDir(GATEKEEPER_MODULE, version), 'deploy', 'gatekeeper.yaml');
  const crds = parseAllDocuments(readFileSync(manifest, 'utf8'))
    .map((d) => d.toJS() as { kind?: string })
    .filter((d) => d?.kind === 'CustomResourceDefinition');
  log(`peers: Gatekeeper CRDs: ${crds.length} from ${manifest}`);
  // JSON, not YAML: kubectl reads YAML 1.1, where an unquoted `yes` (the label gatekeeper.sh/system) is a bool.
  const file = join(work, 'gatekeeper-crds.json');
  writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: crds }));
  await applyFiles(cp, [file]);
  await kubectl(cp, [
    'wait',
    '--for=condition=Established',
    '--timeout=120s',
    'crd/constrainttemplates.templates.gatekeeper.sh',
    'crd/configs.config.gatekeeper.sh',
  ]);
  await kubectl(
    cp,
    ['apply', '-f', '-'],
    JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: GATEKEEPER_NS } }),
  );
  // Gatekeeper's controllers look up their own Pod (POD_NAME) to own the status objects they write; out
  // of cluster there is none, so a stand-in Pod object is created (no scheduler or kubelet runs here: it
  // stays Pending and never runs anything).
  await eventually(
    'default ServiceAccount in gatekeeper-system',
    async () => {
      await kubectl(cp, ['-n', GATEKEEPER_NS, 'get', 'serviceaccount', 'default']);
    },
    60_000,
    500,
  );
  await kubectl(
    cp,
    ['apply', '-f', '-'],
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: GATEKEEPER_POD, namespace: GATEKEEPER_NS, labels: { 'gatekeeper.sh/operation': 'webhook' } },
      spec: { containers: [{ name: 'manager', image: 'stand-in.invalid/gatekeeper:not-run' }] },
    }),
  );
}

async function gatekeeperCerts(work: string): Promise<{ dir: string; certs: WebhookCertFiles }> {
  const certs = await generateWebhookCerts(join(work, 'gatekeeper-certs'), {
    service: 'gatekeeper-webhook-service',
    namespace: GATEKEEPER_NS,
    ips: ['127.0.0.1'],
  });
  // controller-runtime's webhook server reads tls.crt and tls.key from --cert-dir.
  const dir = join(work, 'gatekeeper-cert-dir');
  mkdirSync(dir, { recursive: true });
  copyFileSync(certs.cert, join(dir, 'tls.crt'));
  copyFileSync(certs.key, join(dir, 'tls.key'));
  copyFileSync(certs.caCert, join(dir, 'ca.crt'));
  return { dir, certs };
}

const GATEKEEPER_WEBHOOK = 'gatekeeper-validating-webhook-configuration';

/**
 * Gatekeeper's manager with `policyFiles` applied (in order; each again until its constraint kind
 * exists) and our webhook registered for `resources` (CREATE, UPDATE).
 */
export async function startGatekeeper(
  cp: ControlPlane,
  work: string,
  bin: PeerBinary,
  policyFiles: string[],
  resources: string[] = ['namespaces'],
): Promise<Engine> {
  const { dir, certs } = await gatekeeperCerts(work);
  const port = await freePort();
  const healthPort = await freePort();
  const logFile = join(work, `gatekeeper-${Date.now()}.log`);
  const env = {
    ...process.env,
    POD_NAMESPACE: GATEKEEPER_NS,
    POD_NAME: GATEKEEPER_POD,
    NAMESPACE: GATEKEEPER_NS,
    CONTAINER_NAME: 'manager',
  };
  const args = [
    `--kubeconfig=${cp.info.kubeconfigs.admin!}`,
    '--operation=webhook',
    // The release runs `generate` (creating each template's constraint CRD) in its audit pod; without
    // it no constraint kind exists. Audit, status and mutation stay off.
    '--operation=generate',
    '--disable-cert-rotation',
    `--cert-dir=${dir}`,
    '--host=127.0.0.1',
    `--port=${port}`,
    `--health-addr=127.0.0.1:${healthPort}`,
    '--metrics-addr=0',
    `--exempt-namespace=${GATEKEEPER_NS}`,
    // As the release manifest runs it.
    '--disable-opa-builtin={http.send}',
    '--log-level=INFO',
  ];
  const proc = startProcess('gatekeeper', bin.path, args, logFile, env);
  try {
    for (const policyFile of policyFiles) {
      await kubectl(cp, ['apply', '-f', join(POLICIES, policyFile)]).catch(async () => {
        // The constraint's kind exists only once Gatekeeper has compiled the template: apply again until it does.
        await eventually(
          `Gatekeeper constraint CRD (${policyFile})`,
          async () => {
            await kubectl(cp, ['apply', '-f', join(POLICIES, policyFile)]);
          },
          180_000,
          2000,
        );
      });
    }
    const started = nowMs();
    await eventually(
      'Gatekeeper /readyz',
      async () => {
        if (proc.child.exitCode !== null)
          throw new Error(`gatekeeper exited with ${proc.child.exitCode}:\n${tailFile(logFile)}`);
        const r = await httpGetPlain(`http://127.0.0.1:${healthPort}/readyz`);
        if (r !== 200) throw new Error(`readyz HTTP ${r}`);
      },
      15 * 60_000,
      500,
    ).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}\n${tailFile(logFile, 40)}`);
    });
    log(`peers: Gatekeeper ready on 127.0.0.1:${port} after ${Math.round((nowMs() - started) / 1000)} s`);
    await kubectl(
      cp,
      ['apply', '-f', '-'],
      stringify({
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingWebhookConfiguration',
        metadata: { name: GATEKEEPER_WEBHOOK },
        webhooks: [
          {
            name: 'validation.gatekeeper.sh',
            admissionReviewVersions: ['v1'],
            clientConfig: { url: `https://127.0.0.1:${port}/v1/admit`, caBundle: certs.caBundle },
            failurePolicy: 'Fail',
            matchPolicy: 'Exact',
            sideEffects: 'None',
            timeoutSeconds: 10,
            namespaceSelector: {
              matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: [GATEKEEPER_NS] }],
            },
            rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources }],
          },
        ],
      }),
    );
    return {
      name: 'gatekeeper',
      pid: proc.pid,
      direct: { port, path: '/v1/admit', ca: readFileSync(certs.caCert) },
      logFile,
      async stop() {
        await kubectl(cp, ['delete', 'validatingwebhookconfiguration', GATEKEEPER_WEBHOOK, '--ignore-not-found']);
        await proc.stop(15_000);
      },
    };
  } catch (err) {
    await kubectl(cp, ['delete', 'validatingwebhookconfiguration', GATEKEEPER_WEBHOOK, '--ignore-not-found']).catch(
      () => {},
    );
    await proc.stop(5000);
    throw err;
  }
}

function insecureStatus(port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      { host: '127.0.0.1', port, path, rejectUnauthorized: false, agent: false, timeout: 3000 },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

async function httpGetPlain(url: string): Promise<number> {
  const res = await fetch(url, { signal: AbortSignal.timeout(3000) });
  await res.text();
  return res.status;
}
