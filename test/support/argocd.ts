/**
 * The real Argo CD next to a local control plane (ADR 0008): redis-server, argocd-repo-server,
 * argocd-cmp-server serving manifests/argocd/plugin.yaml with `tenantgate` on its PATH, and
 * argocd-application-controller (and, on request, argocd-applicationset-controller), all on 127.0.0.1, from
 * the multi-call binary hack/build-argocd.sh built. No argocd-server: Applications are created and synced by writing their objects, as Argo CD's own e2e
 * suite does.
 */
import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parse } from 'yaml';
import { kubeconfigYaml, type ClusterInfo } from './devcluster/controlplane.js';
import { freePort } from './devcluster/ports.js';
import { startProcess, type Managed } from './devcluster/processes.js';
import { kubectlAs, MANIFESTS } from './devcluster/tenantgate.js';
import { REPO_ROOT } from './paths.js';

export const ARGOCD_NAMESPACE = 'argocd';
/** The plugin's name in plugin.yaml (no spec.version, so also the name Applications use). */
export const PLUGIN_NAME = 'tenantgate';

/** The Argo CD release pinned in test/cluster/argocd/go.mod, e.g. `v3.6.1`. */
export function argoCdVersion(): string {
  const gomod = readFileSync(join(REPO_ROOT, 'test', 'cluster', 'argocd', 'go.mod'), 'utf8');
  const match = /^require\s+github\.com\/argoproj\/argo-cd\/v3\s+(v\S+)/m.exec(gomod);
  if (!match) throw new Error('test/cluster/argocd/go.mod does not require github.com/argoproj/argo-cd/v3');
  return match[1]!;
}

/** The built multi-call binary (.cache/argocd/<version>/argocd, or TG_ARGOCD_BIN). */
export function argoCdBinary(): string {
  const bin = process.env.TG_ARGOCD_BIN ?? join(REPO_ROOT, '.cache', 'argocd', argoCdVersion(), 'argocd');
  if (
    !existsSync(bin) ||
    !existsSync(join(dirname(bin), 'crds', 'appproject-crd.yaml')) ||
    !existsSync(join(dirname(bin), 'bin', 'git-verify-wrapper.sh'))
  ) {
    throw new Error(
      `no Argo CD at ${bin} (and its crds/ and bin/): run \`make argocd\` (hack/build-argocd.sh builds it from Go modules)`,
    );
  }
  return bin;
}

async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  proc: Managed | undefined,
  timeoutMs = 120_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited = false;
  void proc?.exited.then(() => (exited = true));
  while (Date.now() < deadline) {
    if (exited)
      throw new Error(
        `${what}: ${proc!.name} exited; see ${proc!.logFile}:\n${(await readFile(proc!.logFile, 'utf8')).slice(-3000)}`,
      );
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${what} not ready within ${timeoutMs} ms${proc ? `; see ${proc.logFile}` : ''}`);
}

const tcpOpen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });

/** argocd-cm: Argo CD's settings labelled for its settings manager, with our health check (argocd-cm-patch.yaml). */
export function argoCdConfigMap(extraData: Record<string, string> = {}): Record<string, unknown> {
  const patch = parse(readFileSync(join(MANIFESTS, 'argocd', 'argocd-cm-patch.yaml'), 'utf8')) as {
    data: Record<string, string>;
  };
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: 'argocd-cm',
      namespace: ARGOCD_NAMESPACE,
      labels: { 'app.kubernetes.io/part-of': 'argocd', 'app.kubernetes.io/name': 'argocd-cm' },
    },
    data: { ...patch.data, ...extraData },
  };
}

/** The ServiceAccount Argo CD impersonates for the platform's syncs (AppProject default), and its user name. */
export const PLATFORM_SYNC_SERVICE_ACCOUNT = 'tenantgate-platform-sync';
export const PLATFORM_SYNC_USER = `system:serviceaccount:argocd:${PLATFORM_SYNC_SERVICE_ACCOUNT}`;
/** The application controller's own identity when it runs unprivileged. */
export const APPLICATION_CONTROLLER_SERVICE_ACCOUNT = 'argocd-application-controller';

/**
 * Argo CD as a platform runs it unprivileged: the application controller under its own ServiceAccount
 * (reads everything, writes only Argo CD's objects, may impersonate ServiceAccounts), and every sync
 * under the identity its AppProject names (`application.sync.impersonation.enabled`). The platform's
 * AppProject `default` syncs as PLATFORM_SYNC_USER, which tenantgate must list in `privileged.users`.
 */
function unprivilegedObjects(): Array<Record<string, unknown>> {
  const labels = { 'app.kubernetes.io/part-of': 'argocd' };
  return [
    {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: APPLICATION_CONTROLLER_SERVICE_ACCOUNT, namespace: ARGOCD_NAMESPACE, labels },
    },
    {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: PLATFORM_SYNC_SERVICE_ACCOUNT, namespace: ARGOCD_NAMESPACE, labels },
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'e2e-argocd-application-controller', labels },
      rules: [
        { apiGroups: ['*'], resources: ['*'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: ['argoproj.io'], resources: ['applications', 'applications/status', 'appprojects'], verbs: ['*'] },
        { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
        { apiGroups: [''], resources: ['serviceaccounts', 'users', 'groups'], verbs: ['impersonate'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'e2e-argocd-application-controller', labels },
      roleRef: {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'ClusterRole',
        name: 'e2e-argocd-application-controller',
      },
      subjects: [{ kind: 'ServiceAccount', name: APPLICATION_CONTROLLER_SERVICE_ACCOUNT, namespace: ARGOCD_NAMESPACE }],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'e2e-argocd-application-controller', namespace: ARGOCD_NAMESPACE, labels },
      rules: [{ apiGroups: [''], resources: ['configmaps', 'secrets'], verbs: ['*'] }],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'e2e-argocd-application-controller', namespace: ARGOCD_NAMESPACE, labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'e2e-argocd-application-controller' },
      subjects: [{ kind: 'ServiceAccount', name: APPLICATION_CONTROLLER_SERVICE_ACCOUNT, namespace: ARGOCD_NAMESPACE }],
    },
    // The platform's syncs write Projects, Namespaces, quotas and RBAC: cluster-admin, as a platform team's deployer is.
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'e2e-tenantgate-platform-sync', labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ kind: 'ServiceAccount', name: PLATFORM_SYNC_SERVICE_ACCOUNT, namespace: ARGOCD_NAMESPACE }],
    },
  ];
}

/** The ApplicationSet CRD of the built release (hack/build-argocd.sh copies it next to the binary). */
function applicationSetCrd(binary: string): string {
  const file = join(dirname(binary), 'crds', 'applicationset-crd.yaml');
  if (!existsSync(file))
    throw new Error(
      `no ApplicationSet CRD at ${file}: run \`make argocd\` (hack/build-argocd.sh copies it from the Argo CD module)`,
    );
  return file;
}

/**
 * The namespace, the Application/AppProject CRDs of the built release (and the ApplicationSet CRD with
 * `applicationSet`), argocd-cm, argocd-secret, AppProject default.
 */
export async function installArgoCdObjects(
  info: ClusterInfo,
  binary = argoCdBinary(),
  options: { unprivileged?: boolean; applicationSet?: boolean } = {},
): Promise<void> {
  const crds = join(dirname(binary), 'crds');
  const extra = options.applicationSet ? ['-f', applicationSetCrd(binary)] : [];
  // The CRDs are too large for a client-side apply's last-applied annotation.
  await kubectlAs(info, 'admin', [
    'apply',
    '--server-side',
    '--force-conflicts',
    '-f',
    join(crds, 'application-crd.yaml'),
    '-f',
    join(crds, 'appproject-crd.yaml'),
    ...extra,
  ]);
  // `kubectl wait` fails outright while a fresh CRD has no conditions yet.
  await waitFor(
    'Application and AppProject CRDs Established',
    async () => {
      await kubectlAs(info, 'admin', [
        'wait',
        '--for=condition=Established',
        '--timeout=10s',
        'crd/applications.argoproj.io',
        'crd/appprojects.argoproj.io',
        ...(options.applicationSet ? ['crd/applicationsets.argoproj.io'] : []),
      ]);
      return true;
    },
    undefined,
    60_000,
  );
  const partOf = { 'app.kubernetes.io/part-of': 'argocd' };
  const docs = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ARGOCD_NAMESPACE } },
    argoCdConfigMap(options.unprivileged ? { 'application.sync.impersonation.enabled': 'true' } : {}),
    ...(options.unprivileged ? unprivilegedObjects() : []),
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 'argocd-secret',
        namespace: ARGOCD_NAMESPACE,
        labels: { ...partOf, 'app.kubernetes.io/name': 'argocd-secret' },
      },
      type: 'Opaque',
    },
    {
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'AppProject',
      metadata: { name: 'default', namespace: ARGOCD_NAMESPACE },
      spec: {
        sourceRepos: ['*'],
        destinations: [{ server: '*', namespace: '*' }],
        clusterResourceWhitelist: [{ group: '*', kind: '*' }],
        ...(options.unprivileged
          ? {
              destinationServiceAccounts: [
                {
                  server: '*',
                  namespace: '*',
                  defaultServiceAccount: `${ARGOCD_NAMESPACE}:${PLATFORM_SYNC_SERVICE_ACCOUNT}`,
                },
              ],
            }
          : {}),
      },
    },
  ];
  await kubectlAs(
    info,
    'admin',
    ['apply', '--server-side', '--force-conflicts', '--field-manager=tenantgate-e2e', '-f', '-'],
    docs.map((d) => JSON.stringify(d)).join('\n'),
  );
}

export interface AppOptions {
  name: string;
  repoURL: string;
  path: string;
  /** Name the plugin; false: leave plugin.name out so the repo-server discovers it. */
  pluginName?: string | false;
  env?: Record<string, string>;
  /** Argo CD compare options (annotation argocd.argoproj.io/compare-options), e.g. `ServerSideDiff=true`. */
  compareOptions?: string;
  /** The AppProject (default: `default`, the platform's). */
  project?: string;
}

/** The shape of manifests/argocd/application-example.yaml, pointed at a local repository. */
export function applicationObject(o: AppOptions): Record<string, unknown> {
  const env = Object.entries(o.env ?? {}).map(([name, value]) => ({ name, value }));
  const plugin: Record<string, unknown> = {
    ...(o.pluginName === false ? {} : { name: o.pluginName ?? PLUGIN_NAME }),
    ...(env.length ? { env } : {}),
  };
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: {
      name: o.name,
      namespace: ARGOCD_NAMESPACE,
      ...(o.compareOptions ? { annotations: { 'argocd.argoproj.io/compare-options': o.compareOptions } } : {}),
    },
    spec: {
      project: o.project ?? 'default',
      source: { repoURL: o.repoURL, targetRevision: 'main', path: o.path, plugin },
      destination: { server: 'https://kubernetes.default.svc' },
    },
  };
}

export interface ArgoCdOptions {
  /** Run the application controller under its own ServiceAccount with sync impersonation (ADR 0007's recommended setup). */
  unprivileged?: boolean;
  /** Where logs and working directories go (under the cluster's dir by default). */
  dir?: string;
  /** The tenantgate CLI the plugin runs (default: node dist/cli/main.js of this checkout: `make build`). */
  tenantgateCli?: string;
  /** Extra argocd-application-controller flags. */
  controllerArgs?: string[];
  /**
   * Also install the ApplicationSet CRD and run argocd-applicationset-controller (the same binary) next to
   * the others. It runs as the admin of `info`'s apiserver; it talks to the repo-server like the controller.
   */
  applicationSet?: boolean;
  log?: (line: string) => void;
}

export interface RunningArgoCd {
  binary: string;
  dir: string;
  redis: string;
  repoServer: string;
  processes: Managed[];
  /** The argocd-applicationset-controller process, with `applicationSet`. */
  applicationSetController?: Managed;
  stop(): Promise<void>;
}

/**
 * A `tenantgate` executable for the cmp-server's PATH: the CLI of this checkout under the Node running
 * the tests. The rest of the plugin's PATH is the system's: `discover` needs sh, grep, xargs and head,
 * which the tenantgate image must therefore contain as well.
 */
async function tenantgateShim(binDir: string, cli: string): Promise<void> {
  if (!existsSync(cli)) throw new Error(`no tenantgate CLI at ${cli}: run \`make build\``);
  await mkdir(binDir, { recursive: true });
  const shim = join(binDir, 'tenantgate');
  await writeFile(shim, `#!/bin/sh\nexec '${process.execPath}' '${cli}' "$@"\n`);
  await chmod(shim, 0o755);
}

/** Starts redis, the cmp-server, the repo-server and the application controller against `info`'s apiserver. */
export async function startArgoCd(info: ClusterInfo, options: ArgoCdOptions = {}): Promise<RunningArgoCd> {
  const log = options.log ?? (() => {});
  const binary = argoCdBinary();
  const dir = options.dir ?? (await mkdtemp(join(info.dir, 'argocd-')));
  await mkdir(dir, { recursive: true });
  // Unix socket paths are limited to 107 bytes: the plugin and askpass sockets live in a short temp dir.
  const sockets = await mkdtemp(join(tmpdir(), 'tgacd-'));
  const pluginSockets = join(sockets, 'p');
  await mkdir(pluginSockets);
  const processes: Managed[] = [];
  const stop = async () => {
    for (const p of [...processes].reverse()) await p.stop(10_000);
    await rm(sockets, { recursive: true, force: true });
  };
  try {
    await installArgoCdObjects(info, binary, {
      unprivileged: options.unprivileged ?? false,
      applicationSet: options.applicationSet ?? false,
    });
    // The controller's kubeconfig: its own ServiceAccount's token, or the admin's.
    let controllerKubeconfig = info.kubeconfigs.admin!;
    if (options.unprivileged) {
      const token = (
        await kubectlAs(info, 'admin', [
          '-n',
          ARGOCD_NAMESPACE,
          'create',
          'token',
          APPLICATION_CONTROLLER_SERVICE_ACCOUNT,
          '--duration=24h',
        ])
      ).stdout.trim();
      controllerKubeconfig = join(dir, 'application-controller.kubeconfig');
      await writeFile(
        controllerKubeconfig,
        kubeconfigYaml(
          info.server,
          await readFile(info.caFile, 'utf8'),
          `system:serviceaccount:${ARGOCD_NAMESPACE}:${APPLICATION_CONTROLLER_SERVICE_ACCOUNT}`,
          token,
        ),
        { mode: 0o600 },
      );
    }

    const redisPort = await freePort();
    const redis = startProcess(
      'redis-server',
      'redis-server',
      ['--save', '', '--appendonly', 'no', '--bind', '127.0.0.1', '--port', String(redisPort)],
      join(dir, 'redis.log'),
    );
    processes.push(redis);
    await waitFor('redis-server', () => tcpOpen(redisPort), redis);
    const redisAddr = `127.0.0.1:${redisPort}`;
    log(`redis-server on ${redisAddr}`);

    const base = { HOME: dir, ARGOCD_FAKE_IN_CLUSTER: 'true', ARGOCD_PLUGINSOCKFILEPATH: pluginSockets };
    for (const sub of ['tls', 'ssh', 'gpg/source', 'gpg/keys', 'tmp/repo', 'tmp/cmp'])
      await mkdir(join(dir, sub), { recursive: true });

    const config = join(dir, 'cmp-config');
    await mkdir(config, { recursive: true });
    await writeFile(join(config, 'plugin.yaml'), await readFile(join(MANIFESTS, 'argocd', 'plugin.yaml'), 'utf8'));
    await tenantgateShim(join(dir, 'bin'), options.tenantgateCli ?? join(REPO_ROOT, 'dist', 'cli', 'main.js'));
    const cmp = startProcess(
      'argocd-cmp-server',
      binary,
      ['--config-dir-path', config, '--loglevel', 'info', '--logformat', 'text'],
      join(dir, 'cmp-server.log'),
      {
        ...base,
        PATH: `${join(dir, 'bin')}:/usr/local/bin:/usr/bin:/bin`,
        ARGOCD_BINARY_NAME: 'argocd-cmp-server',
        ARGOCD_CMP_WORKDIR: join(dir, 'tmp', 'cmp'),
        TMPDIR: join(dir, 'tmp', 'cmp'),
      },
    );
    processes.push(cmp);
    await waitFor('argocd-cmp-server', async () => existsSync(join(pluginSockets, `${PLUGIN_NAME}.sock`)), cmp);
    log(`argocd-cmp-server serving ${join(pluginSockets, `${PLUGIN_NAME}.sock`)}`);

    const [repoPort, repoMetrics, controllerMetrics] = [await freePort(), await freePort(), await freePort()];
    const repo = startProcess(
      'argocd-repo-server',
      binary,
      [
        '--address',
        '127.0.0.1',
        '--port',
        String(repoPort),
        '--metrics-address',
        '127.0.0.1',
        '--metrics-port',
        String(repoMetrics),
        '--redis',
        redisAddr,
        '--disable-tls',
        '--client-ca-path=',
        '--loglevel',
        'info',
        '--logformat',
        'text',
      ],
      join(dir, 'repo-server.log'),
      {
        ...base,
        PATH: `${join(dirname(binary), 'bin')}:${process.env.PATH}`,
        ARGOCD_BINARY_NAME: 'argocd-repo-server',
        ARGOCD_GPG_ENABLED: 'false',
        ARGOCD_GNUPGHOME: join(dir, 'gpg', 'keys'),
        ARGOCD_GPG_DATA_PATH: join(dir, 'gpg', 'source'),
        ARGOCD_TLS_DATA_PATH: join(dir, 'tls'),
        ARGOCD_SSH_DATA_PATH: join(dir, 'ssh'),
        ARGOCD_ASK_PASS_SOCK: join(sockets, 'askpass.sock'),
        TMPDIR: join(dir, 'tmp', 'repo'),
        // Failed renders are expected here (a rule-breaking commit): never pause generation after them.
        ARGOCD_PAUSE_GEN_AFTER_FAILED_ATTEMPTS: '0',
      },
    );
    processes.push(repo);
    await waitFor('argocd-repo-server', () => tcpOpen(repoPort), repo);
    const repoServer = `127.0.0.1:${repoPort}`;
    log(`argocd-repo-server on ${repoServer}`);

    const controller = startProcess(
      'argocd-application-controller',
      binary,
      [
        '--kubeconfig',
        controllerKubeconfig,
        '--namespace',
        ARGOCD_NAMESPACE,
        '--repo-server',
        repoServer,
        '--repo-server-plaintext',
        '--redis',
        redisAddr,
        '--metrics-port',
        String(controllerMetrics),
        '--app-resync',
        '10',
        '--persist-resource-health',
        '--loglevel',
        'info',
        '--logformat',
        'text',
        ...(options.controllerArgs ?? []),
      ],
      join(dir, 'application-controller.log'),
      {
        ...base,
        PATH: process.env.PATH,
        ARGOCD_BINARY_NAME: 'argocd-application-controller',
        // ARGOCD_FAKE_IN_CLUSTER makes https://kubernetes.default.svc use the default kubeconfig.
        KUBECONFIG: controllerKubeconfig,
        ARGOCD_TLS_DATA_PATH: join(dir, 'tls'),
        ARGOCD_SSH_DATA_PATH: join(dir, 'ssh'),
      },
    );
    processes.push(controller);
    await waitFor(
      'argocd-application-controller',
      async () => (await fetch(`http://127.0.0.1:${controllerMetrics}/healthz`)).ok,
      controller,
    );
    log(
      `argocd-application-controller running (metrics and /healthz on 127.0.0.1:${controllerMetrics}); logs in ${dir}`,
    );
    let applicationSetController: Managed | undefined;
    if (options.applicationSet) {
      const [appsetMetrics, appsetProbe, appsetWebhook] = [await freePort(), await freePort(), await freePort()];
      applicationSetController = startProcess(
        'argocd-applicationset-controller',
        binary,
        [
          '--kubeconfig',
          info.kubeconfigs.admin!,
          '--namespace',
          ARGOCD_NAMESPACE,
          '--argocd-repo-server',
          repoServer,
          '--repo-server-plaintext',
          '--metrics-addr',
          `127.0.0.1:${appsetMetrics}`,
          '--probe-addr',
          `127.0.0.1:${appsetProbe}`,
          '--webhook-addr',
          `127.0.0.1:${appsetWebhook}`,
          '--enable-leader-election=false',
          '--enable-scm-providers=false',
          '--loglevel',
          'info',
          '--logformat',
          'text',
        ],
        join(dir, 'applicationset-controller.log'),
        {
          ...base,
          PATH: process.env.PATH,
          ARGOCD_BINARY_NAME: 'argocd-applicationset-controller',
          KUBECONFIG: info.kubeconfigs.admin!,
          ARGOCD_TLS_DATA_PATH: join(dir, 'tls'),
          ARGOCD_SSH_DATA_PATH: join(dir, 'ssh'),
        },
      );
      processes.push(applicationSetController);
      // It registers no health checks (its probe port answers 404): ready once its manager serves metrics,
      // which it starts with its controllers.
      await waitFor(
        'argocd-applicationset-controller',
        async () => (await fetch(`http://127.0.0.1:${appsetMetrics}/metrics`)).ok,
        applicationSetController,
      );
      log(`argocd-applicationset-controller running (metrics on 127.0.0.1:${appsetMetrics})`);
    }
    return {
      binary,
      dir,
      redis: redisAddr,
      repoServer,
      processes,
      ...(applicationSetController ? { applicationSetController } : {}),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
