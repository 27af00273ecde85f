/**
 * A real local control plane: etcd + kube-apiserver + kube-controller-manager on 127.0.0.1, built
 * from Go modules by hack/build-control-plane.sh. Used by the tests and by `make run`.
 *
 * It behaves like a kubeadm cluster where that matters to tenantgate (docs/testing.md): the controller
 * manager authenticates as the user `system:kube-controller-manager` (no group, authorised by the
 * bootstrap RBAC) and runs each controller under its own kube-system ServiceAccount
 * (`--use-service-account-credentials`), and PodSecurity admission is on.
 */
import { randomBytes } from 'node:crypto';
import { cp as copyTree, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { REPO_ROOT } from '../paths.js';
export { REPO_ROOT };
import { createPublicKey } from 'node:crypto';
import { stringify } from 'yaml';
import { createCA, generateKeyPem, signCert } from '../../../src/certs/pki.js';
import { generateWebhookClientCerts, writeKeyPair } from '../../../src/certs/files.js';
import { webhookAdmissionPlugins } from '../../../src/certs/admission-client.js';
import { freePort } from './ports.js';
import { httpsGet } from './https-get.js';
import { startProcess, type Managed } from './processes.js';
import { defaultBuild } from './kubernetes-versions.js';

interface ClusterUser {
  name: string;
  groups: string[];
}

/** The identities the token file knows. Tenants are in the `tenants` group (granted self-service RBAC by tests). */
const USERS: ClusterUser[] = [
  { name: 'admin', groups: ['system:masters'] },
  { name: 'alice', groups: ['acme:payments-admins', 'tenants'] },
  { name: 'bob', groups: ['globex:admins', 'tenants'] },
  { name: 'carol', groups: ['acme:web-admins', 'tenants'] },
  { name: 'dave', groups: ['tenants'] },
  { name: 'nobody', groups: [] },
];

/**
 * The controller manager's identity, as kubeadm gives it (a client certificate with this common name
 * and no organisation): the bootstrap ClusterRoleBinding `system:kube-controller-manager` authorises it.
 */
const KUBE_CONTROLLER_MANAGER: ClusterUser = { name: 'system:kube-controller-manager', groups: [] };

/** The common name of the apiserver's front-proxy client certificate (kubeadm's). */
const FRONT_PROXY_CLIENT = 'front-proxy-client';

/**
 * The controllers kubeadm runs that tenantgate meets: namespace deletion, garbage collection, quota usage,
 * and the PersistentVolumeClaim and PersistentVolume protection that let a deleted claim or an unbound
 * volume go (without the first, a namespace holding a claim never finishes deleting). Then the workload
 * controllers, whose writes the allow-lists judge like a tenant's (ADR 0095): Deployments, ReplicaSets,
 * Jobs, CronJobs, DaemonSets and StatefulSets create pods, the ephemeral-volume controller a pod's claims,
 * the resourceclaim controller a pod's ResourceClaims; and the PersistentVolume binder, which binds claims
 * to volumes (a volume's claimRef first, then the claim's volumeName: X10). There is no scheduler and no
 * kubelet: pods stay Pending, and a claim binds only in Immediate mode (a class with no StorageClass
 * object, or ""). kube-controller-manager 1.35 and 1.37 know the same names.
 */
const KUBE_CONTROLLERS = [
  'namespace-controller',
  'persistentvolumeclaim-protection-controller',
  'garbage-collector-controller',
  'resourcequota-controller',
  'serviceaccount-controller',
  'serviceaccount-token-controller',
  'root-ca-certificate-publisher-controller',
  'clusterrole-aggregation-controller',
  'deployment-controller',
  'replicaset-controller',
  'job-controller',
  'cronjob-controller',
  'daemonset-controller',
  'statefulset-controller',
  'ephemeral-volume-controller',
  'persistentvolume-binder-controller',
  'persistentvolume-protection-controller',
  'resourceclaim-controller',
  // Type-checks ValidatingAdmissionPolicies (status.typeChecking), as on kubeadm: the allow-list policies' tests read it.
  'validatingadmissionpolicy-status-controller',
];

export interface ClusterInfo {
  dir: string;
  server: string;
  caFile: string;
  binDir: string;
  etcdEndpoint: string;
  kubeconfigs: Record<string, string>;
  tokens: Record<string, string>;
  /**
   * The client certificate the apiserver presents to every admission webhook (its admission
   * configuration's kubeConfigFile, ADR 0034), and the CA that signed it: a webhook started with
   * `--client-ca=caFile --client-allowed-names=name` accepts reviews from this apiserver only.
   */
  webhookClient: { caFile: string; certFile: string; keyFile: string; name: string };
}

export interface ControlPlaneOptions {
  /** Where to keep data, certs, logs, kubeconfigs; a fresh temp dir under .run/ by default. */
  dir?: string;
  binDir?: string;
  log?: (line: string) => void;
  /** Extra kube-apiserver flags (e.g. an audit log). */
  apiserverArgs?: string[];
  /** Where etcd is, when binDir has none of its own (an older Kubernetes minor shares the pinned etcd, ADR 0077). */
  etcdBinDir?: string;
  /** Extra kube-controller-manager flags (e.g. feature gates of an older minor). */
  controllerManagerArgs?: string[];
  /**
   * The gitVersion kube-apiserver must report (`/version`); start fails otherwise. Without binDir (and
   * without TG_K8S_BIN) it is the pinned release of test/cluster/gobuild, so stale binaries never run.
   */
  expectedVersion?: string;
}

export class ControlPlane {
  readonly info: ClusterInfo;
  private readonly procs: Managed[] = [];
  private apiserverArgs: string[] = [];
  private readonly log: (line: string) => void;

  private constructor(info: ClusterInfo, log: (line: string) => void) {
    this.info = info;
    this.log = log;
  }

  static async start(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
    const log = options.log ?? (() => {});
    const pinned = options.binDir === undefined ? defaultBuild() : undefined;
    const binDir = options.binDir ?? pinned!.binDir;
    const expectedVersion = options.expectedVersion ?? (process.env.TG_K8S_BIN ? undefined : pinned?.version);
    await mkdir(join(REPO_ROOT, '.run'), { recursive: true });
    const dir = options.dir ?? (await mkdtemp(join(REPO_ROOT, '.run', 'cluster-')));
    await mkdir(dir, { recursive: true });
    const [etcdPort, peerPort, apiPort] = [await freePort(), await freePort(), await freePort()];
    const server = `https://127.0.0.1:${apiPort}`;

    const pki = join(dir, 'pki');
    const ca = await createCA('tenantgate-devcluster-ca');
    const caFiles = await writeKeyPair(pki, 'ca', ca);
    const serving = await writeKeyPair(
      pki,
      'apiserver',
      await signCert(ca, {
        commonName: 'kube-apiserver',
        dnsNames: [
          'localhost',
          'kubernetes',
          'kubernetes.default',
          'kubernetes.default.svc',
          'kubernetes.default.svc.cluster.local',
        ],
        ipAddresses: ['127.0.0.1', '10.0.0.1'],
        usage: 'server',
      }),
    );
    // The aggregation layer (aggregated APIs such as tenantgate's budget view): a front-proxy CA, and the
    // client certificate the apiserver presents when it proxies a request to an APIService's backend.
    const frontProxyCa = await createCA('tenantgate-devcluster-front-proxy-ca');
    const frontProxyCaFiles = await writeKeyPair(pki, 'front-proxy-ca', frontProxyCa);
    const frontProxyClient = await writeKeyPair(
      pki,
      'front-proxy-client',
      await signCert(frontProxyCa, { commonName: FRONT_PROXY_CLIENT, usage: 'client' }),
    );
    const saKeyPem = generateKeyPem();
    const saKey = join(pki, 'sa.key');
    const saPub = join(pki, 'sa.pub');
    await writeFile(saKey, saKeyPem, { mode: 0o600 });
    await writeFile(saPub, createPublicKey(saKeyPem).export({ type: 'spki', format: 'pem' }).toString());

    const tokens: Record<string, string> = {};
    const lines: string[] = [];
    for (const user of [...USERS, KUBE_CONTROLLER_MANAGER]) {
      const token = randomBytes(24).toString('hex');
      tokens[user.name] = token;
      lines.push(`${token},${user.name},${user.name},"${user.groups.join(',')}"`);
    }
    await writeFile(join(dir, 'tokens.csv'), lines.join('\n') + '\n', { mode: 0o600 });

    // Pods asking for cpu or memory are refused unless a ResourceQuota covers them. A pod's
    // usage lists both `cpu` and `requests.cpu`; matching on `requests.*` requires quotas to cover
    // the names budgets use (requests.cpu, requests.memory), not the legacy unprefixed ones.
    // Webhooks: the apiserver presents a client certificate (signed by a CA of its own) to every webhook.
    const webhookClient = await generateWebhookClientCerts(join(pki, 'webhook-client'), ['*']);
    await writeFile(
      join(dir, 'admission.yaml'),
      stringify({
        apiVersion: 'apiserver.config.k8s.io/v1',
        kind: 'AdmissionConfiguration',
        plugins: [
          ...webhookAdmissionPlugins(webhookClient.kubeconfig),
          {
            name: 'ResourceQuota',
            configuration: {
              apiVersion: 'apiserver.config.k8s.io/v1',
              kind: 'ResourceQuotaConfiguration',
              limitedResources: [{ resource: 'pods', matchContains: ['requests.cpu', 'requests.memory'] }],
            },
          },
        ],
      }),
    );

    const kubeconfigs: Record<string, string> = {};
    for (const [name, token] of Object.entries(tokens)) {
      const file = join(dir, 'kubeconfig', `${name.replaceAll(':', '_')}.yaml`);
      await mkdir(join(dir, 'kubeconfig'), { recursive: true });
      await writeFile(file, kubeconfigYaml(server, ca.certPem, name, token), { mode: 0o600 });
      kubeconfigs[name] = file;
    }

    const info: ClusterInfo = {
      dir,
      server,
      caFile: caFiles.cert,
      binDir,
      etcdEndpoint: `http://127.0.0.1:${etcdPort}`,
      kubeconfigs,
      tokens,
      webhookClient: {
        caFile: webhookClient.clientCaCert,
        certFile: webhookClient.cert,
        keyFile: webhookClient.key,
        name: webhookClient.name,
      },
    };
    const cp = new ControlPlane(info, log);
    cp.apiserverArgs = [
      `--etcd-servers=${info.etcdEndpoint}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      // Since 1.37 the endpoint reconciler refuses a loopback advertise address; nothing here reaches the
      // apiserver through the `kubernetes` Service, so it keeps no endpoints for it.
      '--endpoint-reconciler-type=none',
      `--secure-port=${apiPort}`,
      `--tls-cert-file=${serving.cert}`,
      `--tls-private-key-file=${serving.key}`,
      `--client-ca-file=${caFiles.cert}`,
      `--token-auth-file=${join(dir, 'tokens.csv')}`,
      '--authorization-mode=RBAC',
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${saPub}`,
      `--service-account-signing-key-file=${saKey}`,
      '--service-cluster-ip-range=10.0.0.0/24',
      `--admission-control-config-file=${join(dir, 'admission.yaml')}`,
      `--cert-dir=${join(dir, 'apiserver-certs')}`,
      '--profiling=false',
      '--allow-privileged=true',
      // On by default since Kubernetes 1.25; explicit, as on kubeadm, because tenantgate relies on it.
      '--enable-admission-plugins=PodSecurity,ResourceQuota',
      // The aggregation layer, as kubeadm configures it. With aggregator routing the apiserver dials an
      // APIService's Service through its EndpointSlices (no kube-proxy here to make ClusterIPs reachable).
      `--requestheader-client-ca-file=${frontProxyCaFiles.cert}`,
      `--requestheader-allowed-names=${FRONT_PROXY_CLIENT}`,
      '--requestheader-username-headers=X-Remote-User',
      '--requestheader-group-headers=X-Remote-Group',
      '--requestheader-extra-headers-prefix=X-Remote-Extra-',
      `--proxy-client-cert-file=${frontProxyClient.cert}`,
      `--proxy-client-key-file=${frontProxyClient.key}`,
      '--enable-aggregator-routing=true',
      ...(options.apiserverArgs ?? []),
    ];
    try {
      await mkdir(join(dir, 'etcd'), { recursive: true });
      cp.procs.push(
        startProcess(
          'etcd',
          join(options.etcdBinDir ?? binDir, 'etcd'),
          [
            '--name=default',
            `--data-dir=${join(dir, 'etcd', 'data')}`,
            `--listen-client-urls=${info.etcdEndpoint}`,
            `--advertise-client-urls=${info.etcdEndpoint}`,
            `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
            `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
            `--initial-cluster=default=http://127.0.0.1:${peerPort}`,
            '--unsafe-no-fsync',
            '--log-level=warn',
          ],
          join(dir, 'etcd.log'),
        ),
      );
      await cp.startApiserver();
      if (expectedVersion !== undefined) await cp.checkVersion(expectedVersion);
      cp.procs.push(
        startProcess(
          'kube-controller-manager',
          join(binDir, 'kube-controller-manager'),
          [
            `--kubeconfig=${kubeconfigs['system:kube-controller-manager']}`,
            `--controllers=${KUBE_CONTROLLERS.join(',')}`,
            // Each controller acts as its own kube-system ServiceAccount (namespace-controller,
            // generic-garbage-collector, resourcequota-controller, …), as on kubeadm, kind, EKS, GKE, AKS.
            '--use-service-account-credentials=true',
            `--service-account-private-key-file=${saKey}`,
            `--root-ca-file=${caFiles.cert}`,
            '--leader-elect=false',
            '--secure-port=0',
            '--concurrent-namespace-syncs=10',
            ...(options.controllerManagerArgs ?? []),
          ],
          join(dir, 'kube-controller-manager.log'),
        ),
      );
      await cp.waitForDefaultServiceAccount();
    } catch (err) {
      await cp.stop();
      throw err;
    }
    log(`control plane up at ${server} (data and logs in ${dir})`);
    return cp;
  }

  private async startApiserver(): Promise<void> {
    const proc = startProcess(
      'kube-apiserver',
      join(this.info.binDir, 'kube-apiserver'),
      this.apiserverArgs,
      join(this.info.dir, 'kube-apiserver.log'),
    );
    this.procs.push(proc);
    await this.waitReady(proc);
  }

  /** Stops and starts kube-apiserver alone (etcd and the controller manager keep running). */
  async restartApiserver(): Promise<void> {
    await this.stopApiserver();
    await this.startApiserver();
  }

  /** Stops kube-apiserver alone (a cluster whose API is down); `resumeApiserver` starts it again on the same port. */
  async stopApiserver(): Promise<void> {
    const index = this.procs.findIndex((p) => p.name === 'kube-apiserver');
    if (index >= 0) {
      await this.procs[index]!.stop();
      this.procs.splice(index, 1);
    }
  }

  async resumeApiserver(): Promise<void> {
    await this.startApiserver();
  }

  private async waitReady(proc: Managed, timeoutMs = 90_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last = '';
    while (Date.now() < deadline) {
      if (proc.child.exitCode !== null) {
        throw new Error(
          `kube-apiserver exited with ${proc.child.exitCode}; last log lines:\n${await tail(proc.logFile)}`,
        );
      }
      try {
        const { status, body } = await this.get('/readyz');
        if (status === 200) return;
        last = `${status} ${body.slice(0, 500)}`;
      } catch (err) {
        last = String(err);
      }
      await sleep(250);
    }
    throw new Error(`kube-apiserver not ready after ${timeoutMs} ms: ${last}\n${await tail(proc.logFile)}`);
  }

  /** Fails unless kube-apiserver reports the expected release (binaries built from another pin). */
  private async checkVersion(expected: string): Promise<void> {
    const { status, body } = await this.get('/version');
    const reported = status === 200 ? (JSON.parse(body) as { gitVersion?: string }).gitVersion : `HTTP ${status}`;
    if (reported !== expected) {
      throw new Error(
        `kube-apiserver in ${this.info.binDir} reports ${reported}, the pin is ${expected}: rebuild it (make control-plane)`,
      );
    }
  }

  private async waitForDefaultServiceAccount(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const { status } = await this.get('/api/v1/namespaces/default/serviceaccounts/default');
      if (status === 200) return;
      await sleep(250);
    }
    throw new Error(
      `kube-controller-manager did not create the default ServiceAccount within ${timeoutMs} ms:\n${await tail(join(this.info.dir, 'kube-controller-manager.log'))}`,
    );
  }

  /**
   * Stops etcd alone: kube-apiserver keeps running and answers with errors (reads from its watch cache
   * may still succeed) until `resumeEtcd`.
   */
  async stopEtcd(): Promise<void> {
    await this.procs.find((p) => p.name === 'etcd')?.stop();
  }

  /** Starts etcd again with the same command, flags and data, and waits until kube-apiserver is ready on it. */
  async resumeEtcd(): Promise<void> {
    const index = this.procs.findIndex((p) => p.name === 'etcd');
    if (index < 0) throw new Error('no etcd process in this control plane');
    const stopped = this.procs[index]!;
    if (stopped.child.exitCode === null && stopped.child.signalCode === null)
      throw new Error('etcd is running: stopEtcd first');
    // Same place in procs, so stop() still ends etcd last.
    this.procs[index] = startProcess(
      'etcd',
      stopped.child.spawnfile,
      stopped.child.spawnargs.slice(1),
      stopped.logFile,
    );
    const apiserver = this.procs.find((p) => p.name === 'kube-apiserver');
    if (apiserver) await this.waitReady(apiserver);
  }

  /**
   * A cold backup of etcd's data into `to`: kube-apiserver and etcd stop while the data is copied, then
   * start again. `restoreEtcd` puts it back.
   */
  async backupEtcd(to: string): Promise<void> {
    await this.stopApiserver();
    await this.stopEtcd();
    await copyTree(join(this.info.dir, 'etcd', 'data'), to, { recursive: true });
    await this.resumeEtcd();
    await this.startApiserver();
  }

  /**
   * Restores a backup taken by `backupEtcd`, as an operator restores a cluster from an older backup:
   * kube-apiserver and etcd stop, etcd's data is replaced, both start again (kube-apiserver's watch
   * cache would otherwise keep serving the newer state). The controller manager keeps running and relists.
   */
  async restoreEtcd(from: string): Promise<void> {
    await this.stopApiserver();
    await this.stopEtcd();
    const data = join(this.info.dir, 'etcd', 'data');
    await rm(data, { recursive: true, force: true });
    await copyTree(from, data, { recursive: true });
    await this.resumeEtcd();
    await this.startApiserver();
  }

  /** Stops and starts etcd (kube-apiserver and the controller manager keep running and reconnect). */
  async restartEtcd(): Promise<void> {
    await this.stopEtcd();
    await this.resumeEtcd();
  }

  /** The pid of one of its processes (etcd, kube-apiserver, kube-controller-manager), for benchmarks' CPU accounting. */
  pid(name: 'etcd' | 'kube-apiserver' | 'kube-controller-manager'): number {
    const proc = this.procs.find((p) => p.name === name);
    if (!proc) throw new Error(`no ${name} process in this control plane`);
    return proc.pid;
  }

  /** A GET as admin, for readiness probes. */
  async get(path: string): Promise<{ status: number; body: string }> {
    return httpsGet(`${this.info.server}${path}`, {
      ca: await readFile(this.info.caFile),
      token: this.info.tokens.admin,
    });
  }

  async stop(options: { keepData?: boolean } = {}): Promise<void> {
    for (const proc of [...this.procs].reverse()) await proc.stop();
    this.procs.length = 0;
    if (!options.keepData) await rm(this.info.dir, { recursive: true, force: true });
    this.log('control plane stopped');
  }
}

export function kubeconfigYaml(server: string, caPem: string, user: string, token: string): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'tenantgate-dev',
        cluster: { server, 'certificate-authority-data': Buffer.from(caPem).toString('base64') },
      },
    ],
    users: [{ name: user, user: { token } }],
    contexts: [{ name: user, context: { cluster: 'tenantgate-dev', user } }],
    'current-context': user,
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

async function tail(file: string, lines = 30): Promise<string> {
  try {
    return (await readFile(file, 'utf8')).split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}
