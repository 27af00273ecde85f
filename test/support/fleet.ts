/**
 * A fleet of local clusters behind one real Argo CD (ADR 0001): each member is a control plane of its
 * own (test/support/devcluster/controlplane.ts) with tenantgate's webhook and controller running for it
 * (config.clusterName = the member's name, so each enforces its own per-cluster budget); Argo CD with its
 * argocd-applicationset-controller runs on a separate host control plane and reaches every member as a
 * remote cluster, registered by a cluster Secret (server URL, the member's CA, the bearer token of a
 * ServiceAccount `argocd-manager` on the member, as `argocd cluster add` sets it up). TLS is verified.
 *
 * Each member exposes a kubeconfig path and a context name (admin), and `Fleet.kubeconfig` holds all
 * of them in one file, so a later test can run `tenantgate plan --cluster prod-eu=… --cluster prod-us=…`.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { DEFAULT_CONFIG, type TenantgateConfig } from '../../src/config/config.js';
import type { RunningController } from '../../src/controller/start.js';
import type { AdmissionDecision } from '../../src/webhook/server.js';
import { ARGOCD_NAMESPACE, PLUGIN_NAME, startArgoCd, type RunningArgoCd } from './argocd.js';
import { startTestController } from './controller-kit.js';
import { applyChartTemplates, startControllerWithView } from './view.js';
import { ControlPlane, sleep, type ClusterInfo } from './devcluster/controlplane.js';
import {
  EXAMPLE_NETWORK,
  installBase,
  kubectlAs,
  serviceAccountKubeConfig,
  startLocalWebhook,
  type LocalWebhook,
} from './devcluster/tenantgate.js';

/** The members `startFleet` starts unless told otherwise: the clusters examples/gitops places namespaces on. */
export const FLEET_CLUSTERS = ['prod-eu', 'prod-us'] as const;
/** The label on the fleet's cluster Secrets; the ApplicationSet's cluster generator selects on it. */
export const FLEET_LABEL = 'tenantgate.io/fleet';
/** The identity Argo CD uses on every member (cluster-admin there, like `argocd cluster add`). */
export const ARGOCD_MANAGER = { namespace: 'kube-system', name: 'argocd-manager' } as const;
export const ARGOCD_MANAGER_USER = `system:serviceaccount:${ARGOCD_MANAGER.namespace}:${ARGOCD_MANAGER.name}`;
/** The context of the Argo CD host in `Fleet.kubeconfig`. */
export const HOST_CONTEXT = 'argocd-host';

export interface FleetMember {
  /** The cluster's name: its Argo CD cluster name, tenantgate's clusterName, its kubeconfig context. */
  name: string;
  info: ClusterInfo;
  /** An admin kubeconfig whose only (and current) context is `context`. */
  kubeconfig: string;
  context: string;
  webhook: LocalWebhook;
  controller: RunningController;
  /** Every admission decision of this member's webhook, in order. */
  decisions: AdmissionDecision[];
}

export interface Fleet {
  id: string;
  dir: string;
  /** The control plane Argo CD runs on (not a member: Applications only live there). */
  host: ClusterInfo;
  argo: RunningArgoCd;
  members: FleetMember[];
  member(name: string): FleetMember;
  /** One kubeconfig: a context per member (named as the member) and HOST_CONTEXT. */
  kubeconfig: string;
  stop(): Promise<void>;
}

export interface FleetOptions {
  /** The control plane Argo CD is installed on. It needs no tenantgate. */
  host: ClusterInfo;
  /** Members' data, logs, kubeconfigs and Argo CD's working directories go here. */
  dir: string;
  /** Distinguishes this fleet's cluster Secrets on a shared host (default: the dir's last segment). */
  id?: string;
  clusters?: readonly string[];
  log?: (line: string) => void;
  /** The webhooks' and controllers' log lines, with the member's name. */
  componentLog?: (member: string, line: string) => void;
  /** More of a member's tenantgate.yaml (its webhook's and controller's), e.g. `fleet` for the fleet budgets' hub. */
  memberConfig?: (member: string) => Promise<Partial<TenantgateConfig>>;
  /** Each member's controller also serves the budget view (view.tenantgate.io), registered with its apiserver. */
  view?: boolean;
}

export interface KubeconfigContext {
  context: string;
  server: string;
  caPem: string;
  user: string;
  token: string;
}

/** A kubeconfig with one cluster, user and context per entry; the first is current. */
export function kubeconfigWithContexts(entries: KubeconfigContext[]): string {
  if (entries.length === 0) throw new Error('kubeconfigWithContexts: no contexts given');
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: entries.map((e) => ({
      name: e.context,
      cluster: { server: e.server, 'certificate-authority-data': Buffer.from(e.caPem).toString('base64') },
    })),
    users: entries.map((e) => ({ name: `${e.context}-${e.user}`, user: { token: e.token } })),
    contexts: entries.map((e) => ({
      name: e.context,
      context: { cluster: e.context, user: `${e.context}-${e.user}` },
    })),
    'current-context': entries[0]!.context,
  });
}

/** Argo CD's declarative cluster Secret: bearer token plus the cluster's CA, TLS verified. */
export function clusterSecret(o: {
  name: string;
  server: string;
  caPem: string;
  token: string;
  fleet: string;
}): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: `cluster-${o.fleet}-${o.name}`,
      namespace: ARGOCD_NAMESPACE,
      labels: { 'argocd.argoproj.io/secret-type': 'cluster', [FLEET_LABEL]: o.fleet },
    },
    type: 'Opaque',
    stringData: {
      name: o.name,
      server: o.server,
      config: JSON.stringify({
        bearerToken: o.token,
        tlsClientConfig: { insecure: false, caData: Buffer.from(o.caPem).toString('base64') },
      }),
    },
  };
}

export interface FleetApplicationSetOptions {
  name: string;
  fleet: string;
  repoURL: string;
  path: string;
  revision?: string;
}

/**
 * One Application per fleet cluster (cluster generator on FLEET_LABEL): `path` rendered by the tenantgate
 * plugin with ARGOCD_ENV_CLUSTER={{name}}, synced to that cluster, automatically (no prune, no self-heal, one retry).
 * Applications are named `<name>-<cluster>`.
 */
export function fleetApplicationSet(o: FleetApplicationSetOptions): Record<string, unknown> {
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'ApplicationSet',
    metadata: { name: o.name, namespace: ARGOCD_NAMESPACE },
    spec: {
      generators: [{ clusters: { selector: { matchLabels: { [FLEET_LABEL]: o.fleet } } } }],
      template: {
        metadata: { name: `${o.name}-{{name}}` },
        spec: {
          project: 'default',
          source: {
            repoURL: o.repoURL,
            targetRevision: o.revision ?? 'main',
            path: o.path,
            plugin: { name: PLUGIN_NAME, env: [{ name: 'CLUSTER', value: '{{name}}' }] },
          },
          destination: { server: '{{server}}' },
          // One retry, 5 s later: a refused sync settles as Failed within seconds instead of after Argo CD's
          // default backoff (five retries, minutes), and the refusal is what the test looks at.
          syncPolicy: {
            automated: { prune: false, selfHeal: false },
            retry: { limit: 1, backoff: { duration: '5s', factor: 1, maxDuration: '5s' } },
          },
        },
      },
    },
  };
}

/** The long-lived token of a ServiceAccount token Secret, once the token controller has filled it in. */
async function serviceAccountTokenSecret(info: ClusterInfo, namespace: string, account: string): Promise<string> {
  const secret = `${account}-token`;
  await kubectlAs(
    info,
    'admin',
    ['apply', '-f', '-'],
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'kubernetes.io/service-account-token',
      metadata: { name: secret, namespace, annotations: { 'kubernetes.io/service-account.name': account } },
    }),
  );
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const got = await kubectlAs(info, 'admin', [
      '-n',
      namespace,
      'get',
      'secret',
      secret,
      '-o',
      'jsonpath={.data.token}',
    ]);
    if (got.stdout) return Buffer.from(got.stdout, 'base64').toString('utf8');
    await sleep(250);
  }
  throw new Error(`the token controller did not fill in Secret ${namespace}/${secret} within 60 s`);
}

/** Argo CD's identity on a member: ServiceAccount argocd-manager, cluster-admin; returns its token. */
async function argoCdManager(info: ClusterInfo): Promise<string> {
  const { namespace, name } = ARGOCD_MANAGER;
  await kubectlAs(
    info,
    'admin',
    ['apply', '-f', '-'],
    [
      { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: `${name}-cluster-admin` },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
        subjects: [{ kind: 'ServiceAccount', name, namespace }],
      },
    ]
      .map((o) => JSON.stringify(o))
      .join('\n'),
  );
  return serviceAccountTokenSecret(info, namespace, name);
}

interface StartedMember extends FleetMember {
  controlPlane: ControlPlane;
  argoToken: string;
  caPem: string;
}

async function startMember(
  name: string,
  dir: string,
  log: (l: string) => void,
  componentLog: (m: string, l: string) => void,
  memberConfig?: FleetOptions['memberConfig'],
  view = false,
): Promise<StartedMember> {
  const controlPlane = await ControlPlane.start({ dir: join(dir, name), log: (l) => log(`${name}: ${l}`) });
  const info = controlPlane.info;
  let webhook: LocalWebhook | undefined;
  try {
    await installBase(info);
    const argoToken = await argoCdManager(info);
    const decisions: AdmissionDecision[] = [];
    // Argo CD writes Projects on the member as argocd-manager: a platform identity, privileged (ADR 0007).
    const privileged = {
      users: [...DEFAULT_CONFIG.privileged.users, ARGOCD_MANAGER_USER],
      groups: DEFAULT_CONFIG.privileged.groups,
    };
    const more = (await memberConfig?.(name)) ?? {};
    // A fleet member's controller lowers E in the headroom ledger: the chart's controller RBAC in member mode.
    if (more.fleet?.hubKubeconfig)
      await applyChartTemplates(info, ['controller/rbac.yaml'], [`fleet.member.cluster=${name}`]);
    webhook = await startLocalWebhook(
      info,
      { ...more, clusterName: name, privileged },
      { log: (l) => componentLog(name, `webhook: ${l}`), onDecision: (d) => decisions.push(d) },
    );
    // The members render examples/gitops: their controllers share its network baseline (docs/network.md).
    const controllerConfig = {
      ...DEFAULT_CONFIG,
      network: EXAMPLE_NETWORK,
      ...more,
      clusterName: name,
      resyncPeriodSeconds: 30,
    };
    const controller = view
      ? (await applyChartTemplates(info, ['view/rbac.yaml', 'rbac/self-service.yaml'], ['view.enabled=true']),
        (await startControllerWithView(info, controllerConfig, (m) => componentLog(name, `controller: ${m}`)))
          .controller)
      : await startTestController({
          kubeConfig: await serviceAccountKubeConfig(info, DEFAULT_CONFIG.systemNamespace, 'tenantgate-controller'),
          config: controllerConfig,
          log: (m: string, fields?: Record<string, unknown>) =>
            componentLog(name, `controller: ${m}${fields ? ` ${JSON.stringify(fields)}` : ''}`),
        });
    const caPem = await readFile(info.caFile, 'utf8');
    const kubeconfig = join(dir, `kubeconfig-${name}.yaml`);
    await writeFile(
      kubeconfig,
      kubeconfigWithContexts([{ context: name, server: info.server, caPem, user: 'admin', token: info.tokens.admin! }]),
      { mode: 0o600 },
    );
    log(`${name}: tenantgate webhook (${webhook.url}) and controller running with clusterName ${name}`);
    return { name, info, kubeconfig, context: name, webhook, controller, decisions, controlPlane, argoToken, caPem };
  } catch (err) {
    await webhook?.stop().catch(() => {});
    await controlPlane.stop({ keepData: true });
    throw err;
  }
}

/** Starts the members and Argo CD (in parallel), then registers every member with Argo CD. */
export async function startFleet(options: FleetOptions): Promise<Fleet> {
  const log = options.log ?? (() => {});
  const componentLog = options.componentLog ?? (() => {});
  const names = options.clusters ?? FLEET_CLUSTERS;
  const id = options.id ?? options.dir.split('/').filter(Boolean).pop()!;
  await mkdir(options.dir, { recursive: true });
  const started = await Promise.allSettled([
    startArgoCd(options.host, {
      applicationSet: true,
      dir: join(options.dir, 'argocd'),
      log: (l) => log(`argocd: ${l}`),
    }),
    ...names.map((name) => startMember(name, options.dir, log, componentLog, options.memberConfig, options.view)),
  ]);
  const [argoResult, ...memberResults] = started;
  const members = memberResults.flatMap((r) => (r.status === 'fulfilled' ? [r.value as StartedMember] : []));
  const argo = argoResult!.status === 'fulfilled' ? (argoResult!.value as RunningArgoCd) : undefined;
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await kubectlAs(options.host, 'admin', [
      '-n',
      ARGOCD_NAMESPACE,
      'delete',
      'secret',
      '-l',
      `${FLEET_LABEL}=${id}`,
      '--ignore-not-found',
    ]).catch(() => {});
    await argo?.stop();
    await Promise.all(
      members.map(async (m) => {
        await m.controller.stop().catch(() => {});
        await m.webhook.stop().catch(() => {});
        await m.controlPlane.stop({ keepData: process.env.TG_KEEP_CLUSTER === '1' });
      }),
    );
  };
  const failed = started.find((r) => r.status === 'rejected');
  if (failed) {
    await stop();
    throw (failed as PromiseRejectedResult).reason;
  }
  const secrets = members.map((m) =>
    clusterSecret({ name: m.name, server: m.info.server, caPem: m.caPem, token: m.argoToken, fleet: id }),
  );
  await kubectlAs(options.host, 'admin', ['apply', '-f', '-'], secrets.map((s) => JSON.stringify(s)).join('\n'));
  log(
    `registered ${members.map((m) => `${m.name} (${m.info.server})`).join(', ')} with Argo CD (Secrets labelled ${FLEET_LABEL}=${id})`,
  );

  const kubeconfig = join(options.dir, 'kubeconfig.yaml');
  const contexts: KubeconfigContext[] = members.map((m) => ({
    context: m.context,
    server: m.info.server,
    caPem: m.caPem,
    user: 'admin',
    token: m.info.tokens.admin!,
  }));
  contexts.push({
    context: HOST_CONTEXT,
    server: options.host.server,
    caPem: await readFile(options.host.caFile, 'utf8'),
    user: 'admin',
    token: options.host.tokens.admin!,
  });
  await writeFile(kubeconfig, kubeconfigWithContexts(contexts), { mode: 0o600 });

  const publicMembers: FleetMember[] = members.map(
    ({ name, info, kubeconfig: file, context, webhook, controller, decisions }) => ({
      name,
      info,
      kubeconfig: file,
      context,
      webhook,
      controller,
      decisions,
    }),
  );
  return {
    id,
    dir: options.dir,
    host: options.host,
    argo: argo!,
    members: publicMembers,
    member(name: string) {
      const m = publicMembers.find((x) => x.name === name);
      if (!m) throw new Error(`no fleet member ${name}; the fleet has ${publicMembers.map((x) => x.name).join(', ')}`);
      return m;
    },
    kubeconfig,
    stop,
  };
}
