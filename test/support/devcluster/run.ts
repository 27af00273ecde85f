/**
 * `make run`: a local control plane with tenantgate installed (webhook and controller running from
 * this checkout), the examples rendered and applied. Stays up until Ctrl-C. ARGOCD=1: Argo CD syncs the
 * examples instead; FLEET=1: a fleet of two more clusters behind Argo CD with an ApplicationSet.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { renderDirectory } from '../../../src/cli/render.js';
import { REPO_ROOT } from '../paths.js';
import { ControlPlane, type ClusterInfo } from './controlplane.js';
import { handOverSignals } from './processes.js';
import { applicationObject, argoCdVersion, startArgoCd } from '../argocd.js';
import { LocalGitRepo } from '../git-repo.js';
import { FLEET_CLUSTERS, HOST_CONTEXT, fleetApplicationSet, startFleet } from '../fleet.js';
import { installFleetHub } from '../fleet-hub-install.js';
import { DEFAULT_CONFIG, type TenantgateConfig } from '../../../src/config/config.js';
import { FLEET_NAMESPACE } from '../../../src/fleet/fleet-budget-object.js';
import { parseAllDocuments } from 'yaml';
import {
  EXAMPLE_NETWORK,
  EXAMPLE_PRICING,
  installBase,
  kubectlAs,
  serviceAccountKubeconfigFile,
  startLocalWebhook,
} from './tenantgate.js';
import { applyChartTemplates, startControllerWithView } from '../view.js';

const log = (m: string) => process.stderr.write(`[make run] ${m}\n`);
/** How long one step of the shutdown (unregistering and stopping a component) may take before the next. */
const STOP_STEP_MS = 10_000;

async function main(): Promise<void> {
  const dir = join(REPO_ROOT, '.run', 'dev');
  await rm(dir, { recursive: true, force: true });
  const cp = await ControlPlane.start({ dir, log });
  const info = cp.info;
  let stopping = false;
  const stopAll: Array<() => Promise<void>> = [];
  const shutdown = async () => {
    if (stopping) return;
    stopping = true;
    log('stopping…');
    // Ctrl-C reaches the whole process group, etcd included, so the apiserver may already be unable to
    // delete what a step unregisters: a step gets STOP_STEP_MS, then the control plane goes anyway
    // (.run/dev is wiped at the next start).
    for (const stop of stopAll.reverse())
      await Promise.race([stop().catch(() => {}), new Promise((r) => setTimeout(r, STOP_STEP_MS))]);
    await cp.stop();
    process.exit(0);
  };
  handOverSignals(['SIGINT', 'SIGTERM']);
  process.on('SIGINT', () => void shutdown());
  process.on('SIGTERM', () => void shutdown());
  try {
    await installBase(info);
    // What the platform team creates once: the example tiers' PriorityClasses and the DeviceClass of Project vision.
    await kubectlAs(info, 'admin', ['apply', '-f', join(REPO_ROOT, 'examples', 'platform', 'cluster-objects.yaml')]);
    // One line per admission decision, as `tenantgate webhook` logs it: what was denied, and by which rule.
    const hook = await startLocalWebhook(
      info,
      {},
      { log: (m) => log(`webhook: ${m}`), onDecision: (d) => log(`webhook: admission decision ${JSON.stringify(d)}`) },
    );
    stopAll.push(() => hook.stop());
    log(`webhook serving ${hook.url} and registered with the apiserver`);
    // The controller as its ServiceAccount, serving the budget view (view.tenantgate.io) registered as an
    // APIService: the chart's view RBAC (templates/view/rbac.yaml, ownedprojects for tenants) first.
    await applyChartTemplates(info, ['view/rbac.yaml', 'rbac/self-service.yaml'], ['view.enabled=true']);
    // With the example repository's price sheet, as the webhook has it (the view and the metrics show each
    // project's cost), and its network baseline, as render has it.
    const view = await startControllerWithView(
      info,
      { network: EXAMPLE_NETWORK, ...(EXAMPLE_PRICING ? { pricing: EXAMPLE_PRICING } : {}) },
      (m) => log(`controller: ${m}`),
    );
    const controller = view.controller;
    stopAll.push(() => view.stop());
    log('controller running');
    let argoHelp = '';
    if (process.env.TG_RUN_FLEET) argoHelp = await startFleetWithExamples(info, dir, stopAll);
    if (process.env.TG_RUN_ARGOCD) {
      argoHelp = await startArgoCdWithExamples(info, dir, stopAll);
    } else {
      const rendered = await renderDirectory(join(REPO_ROOT, 'examples', 'gitops'));
      if (rendered.output === undefined)
        throw new Error(`examples/gitops does not render:\n${rendered.errors.join('\n')}`);
      await kubectlAs(info, 'admin', ['apply', '-f', '-'], rendered.output);
      log('applied the rendered examples/gitops');
    }
    const kubectl = join(info.binDir, 'kubectl');
    process.stdout.write(`
tenantgate is running on a local control plane (${info.server}).

  export PATH=${info.binDir}:$PATH
  export KUBECONFIG=${info.kubeconfigs.admin}          # admin (system:masters)
  kubectl get projects
  kubectl get namespaces -L tenantgate.io/project,tenantgate.io/tenant

Act as a tenant (tokens in ${join(info.dir, 'tokens.csv')}):
  KUBECONFIG=${info.kubeconfigs.alice} ${kubectl} create namespace payments-dev     # alice owns payments: admitted
  KUBECONFIG=${info.kubeconfigs.bob} ${kubectl} create namespace payments-x         # bob does not: [T4]
  KUBECONFIG=${info.kubeconfigs.alice} ${kubectl} -n payments-batch patch quota tenantgate-quota --type=merge -p '{"spec":{"hard":{"requests.cpu":"50"}}}'   # [Q1]: says how much fits
  KUBECONFIG=${info.kubeconfigs.alice} ${kubectl} -n payments-batch delete quota tenantgate-quota     # [Q3]
  KUBECONFIG=${info.kubeconfigs.alice} ${kubectl} label namespace payments-batch pod-security.kubernetes.io/enforce=privileged --overwrite   # [T7]: protected
  KUBECONFIG=${info.kubeconfigs.alice} ${kubectl} delete namespace tenantgate-system    # forbidden: nothing outside her projects
  KUBECONFIG=${info.kubeconfigs.alice} ${kubectl} apply --dry-run=server -f examples/invalid/Q1-over-budget.yaml   # forbidden: tenants only read projects

Budgets beyond a flat quota (docs/budgets.md; examples/platform/cluster-objects.yaml has the PriorityClasses and the DeviceClass):
  KUBECONFIG=${info.kubeconfigs.bob} ${kubectl} -n ml-training patch quota tenantgate-quota --type=merge -p '{"spec":{"hard":{"requests.cpu":"14"}}}'   # [C1]: fits the CPU budget, not the cost budget
  KUBECONFIG=${info.kubeconfigs.carol} ${kubectl} -n reports-adhoc patch quota tenantgate-quota-production --type=merge -p '{"spec":{"hard":{"requests.cpu":"1"}}}'   # [Q1] on tier production
  KUBECONFIG=${info.kubeconfigs.carol} ${kubectl} -n reports-adhoc run urgent --image=registry.k8s.io/pause:3.10 --overrides='{"spec":{"priorityClassName":"urgent","containers":[{"name":"urgent","image":"registry.k8s.io/pause:3.10","resources":{"requests":{"cpu":"100m","memory":"64Mi"}}}]}}'   # refused by the apiserver's quota tenantgate-quota-other-tiers: urgent is no tier of reports
  KUBECONFIG=${info.kubeconfigs.admin} ${kubectl} get quota -n reports-adhoc              # the tier quotas: tenantgate-quota-production, tenantgate-quota-other-tiers
  KUBECONFIG=${info.kubeconfigs.admin} ${kubectl} -n vision-serving get budget            # GPUs and DRA devices budgeted like requests.cpu
  KUBECONFIG=${info.kubeconfigs.bob} ${kubectl} -n ml-training get budget -o yaml         # the project's monthly cost and its cost budget
  KUBECONFIG=${info.kubeconfigs.admin} ${kubectl} get project web -o yaml                 # a burst approved in git (spec.bursts), upcoming

Only the apiserver may send the webhook admission reviews (docs/design.md "Who may spend headroom"):
  curl -s --cacert ${hook.certs.caCert} -X POST -d '{}' ${hook.url}/validate      # 401: client certificate required
  curl -s --cacert ${hook.certs.caCert} --cert ${info.webhookClient.certFile} --key ${info.webhookClient.keyFile} -X POST -d '{}' ${hook.url}/validate   # the apiserver's certificate: 400, an empty review

The budget view (view.tenantgate.io, served by the controller on ${view.address}:${controller.viewPort}; docs/visibility.md):
  KUBECONFIG=${info.kubeconfigs.alice} ${kubectl} -n payments-batch get budget      # what the project has left, from inside its namespace
  KUBECONFIG=${info.kubeconfigs.alice} ${kubectl} get ownedprojects                 # the projects alice owns
  KUBECONFIG=${info.kubeconfigs.bob} ${kubectl} -n payments-batch get budget        # Forbidden: bob has no access there

The controller's /metrics (HTTPS, its own certificate; only a token allowed to get /metrics, docs/observability.md):
  curl -sk -H "Authorization: Bearer $(awk -F, '$2=="admin" {print $1}' ${join(info.dir, 'tokens.csv')})" https://127.0.0.1:${controller.port}/metrics | grep ^tenantgate_project_budget
  curl -sk -H "Authorization: Bearer $(awk -F, '$2=="alice" {print $1}' ${join(info.dir, 'tokens.csv')})" https://127.0.0.1:${controller.port}/metrics   # 403: a tenant sees no project's numbers

${argoHelp}
Ctrl-C stops everything.
`);
    await new Promise(() => {});
  } catch (err) {
    log((err as Error).stack ?? String(err));
    await shutdown();
  }
}

/**
 * `make run ARGOCD=1`: the real Argo CD (test/support/argocd.ts) syncing examples/gitops from a local git
 * repository through the tenantgate plugin, like manifests/argocd/application-example.yaml (automated sync).
 */
async function startArgoCdWithExamples(
  info: ClusterInfo,
  dir: string,
  stopAll: Array<() => Promise<void>>,
): Promise<string> {
  const argo = await startArgoCd(info, { dir: join(dir, 'argocd'), log: (m) => log(`argocd: ${m}`) });
  stopAll.push(() => argo.stop());
  const repo = await LocalGitRepo.init(join(dir, 'git'));
  await repo.copyIn(join(REPO_ROOT, 'examples', 'gitops'), 'projects');
  await repo.commit('examples/gitops');
  const app = applicationObject({
    name: 'tenantgate-projects-prod-eu',
    repoURL: repo.url,
    path: 'projects',
    env: { CLUSTER: 'prod-eu' },
  });
  (app.spec as Record<string, unknown>).syncPolicy = { automated: { selfHeal: true, prune: false } };
  await kubectlAs(info, 'admin', ['apply', '-f', '-'], JSON.stringify(app));
  log('Argo CD syncs examples/gitops (Application argocd/tenantgate-projects-prod-eu)');
  return `
Argo CD (${argoCdVersion()}: repo-server, cmp-server with the tenantgate plugin, application controller; logs in ${argo.dir}):
  kubectl -n argocd get application tenantgate-projects-prod-eu -w -o custom-columns=SYNC:.status.sync.status,HEALTH:.status.health.status,OP:.status.operationState.phase
  kubectl -n argocd get application tenantgate-projects-prod-eu -o jsonpath='{range .status.resources[*]}{.kind} {.name} {.status} {.health.status} {.health.message}{"\\n"}{end}'
  git -C ${repo.dir} log --oneline      # commit there; Argo CD polls every 10 s (or annotate argocd.argoproj.io/refresh=hard)
`;
}

/**
 * `make run FLEET=1`: two more control planes, prod-eu and prod-us, each with tenantgate, registered with
 * the real Argo CD on this one (ADR 0001), and an ApplicationSet rendering examples/gitops plus
 * examples/fleet per cluster. This control plane is also the fleet's hub (docs/fleet.md): the chart's hub
 * mode, and the FleetBudget of every Project with a fleet budget (what an Application rendering for the hub
 * with plugin env FLEET_HUB=true adds). Each member reaches the hub as its ServiceAccount member-<cluster>;
 * its give-back timers are short (an offer after 60 s idle, a give-back after 120 s) so that shares are
 * seen drifting back within minutes.
 */
async function startFleetWithExamples(
  info: ClusterInfo,
  dir: string,
  stopAll: Array<() => Promise<void>>,
): Promise<string> {
  await installFleetHub(info, FLEET_CLUSTERS);
  const memberConfig = async (cluster: string): Promise<Partial<TenantgateConfig>> => ({
    fleet: {
      ...DEFAULT_CONFIG.fleet,
      hubKubeconfig: await serviceAccountKubeconfigFile(info, FLEET_NAMESPACE, `member-${cluster}`),
      keep: { 'requests.cpu': '1' },
      above: { 'requests.cpu': '2' },
      offerAfterSeconds: 60,
      giveBackAfterSeconds: 120,
      checkEverySeconds: 10,
    },
  });
  const fleet = await startFleet({
    host: info,
    dir: join(dir, 'fleet'),
    id: 'dev',
    log: (m) => log(`fleet: ${m}`),
    memberConfig,
    view: true,
  });
  stopAll.push(() => fleet.stop());
  const repo = await LocalGitRepo.init(join(dir, 'git'));
  await repo.copyIn(join(REPO_ROOT, 'examples', 'gitops'), 'projects');
  await repo.copyIn(join(REPO_ROOT, 'examples', 'fleet'), 'projects');
  await repo.commit('examples/gitops and examples/fleet');
  const hubRender = await renderDirectory(join(repo.dir, 'projects'), { ...process.env, ARGOCD_ENV_FLEET_HUB: 'true' });
  if (hubRender.output === undefined)
    throw new Error(`the fleet's repository does not render for the hub:\n${hubRender.errors.join('\n')}`);
  const budgets = parseAllDocuments(hubRender.output)
    .map((d) => d.toJS() as { kind?: string } | null)
    .filter((o) => o?.kind === 'FleetBudget');
  await kubectlAs(info, 'admin', ['apply', '-f', '-'], budgets.map((o) => JSON.stringify(o)).join('\n'));
  log(`hub: ${budgets.length} FleetBudget(s) in ${FLEET_NAMESPACE}`);
  await kubectlAs(
    info,
    'admin',
    ['apply', '-f', '-'],
    JSON.stringify(
      fleetApplicationSet({ name: 'tenantgate-projects', fleet: fleet.id, repoURL: repo.url, path: 'projects' }),
    ),
  );
  log(
    `ApplicationSet argocd/tenantgate-projects: one Application per cluster (${fleet.members.map((m) => m.name).join(', ')})`,
  );
  const contexts = fleet.members.map((m) => m.context);
  const kubectl = join(info.binDir, 'kubectl');
  const plugin = `node ${join(REPO_ROOT, 'dist', 'cli', 'kubectl-plugin.js')}`;
  const [eu, us] = [fleet.member('prod-eu'), fleet.member('prod-us')];
  const alice = (m: typeof eu) => `KUBECONFIG=${m.info.kubeconfigs.alice}`;
  return `
A fleet behind Argo CD (${argoCdVersion()}, with its ApplicationSet controller; logs in ${fleet.argo.dir}):
  kubectl -n argocd get applications -o custom-columns=NAME:.metadata.name,SYNC:.status.sync.status,HEALTH:.status.health.status,OP:.status.operationState.phase
${contexts.map((c) => `  kubectl --kubeconfig ${fleet.kubeconfig} --context ${c} get projects,namespaces -l tenantgate.io/project   # what ${c} got`).join('\n')}
  node ${join(REPO_ROOT, 'dist', 'cli', 'main.js')} plan ${join(repo.dir, 'projects')} ${contexts.map((c) => `--cluster ${c}=${c}`).join(' ')} --hub ${HOST_CONTEXT} --kubeconfig ${fleet.kubeconfig}   # every project, per cluster and in total; storefront against its fleet budget
  git -C ${repo.dir} log --oneline      # commit there; Argo CD polls every 10 s

One CPU budget for the fleet (examples/fleet/storefront.yaml: 8 CPUs shared by prod-eu and prod-us; this cluster is the hub):
  ${kubectl} -n ${FLEET_NAMESPACE} get fleetbudgets -o yaml      # each member's share of it (status.members), written by the members
  ${alice(eu)} ${kubectl} -n storefront-web patch quota tenantgate-quota --type=merge -p '{"spec":{"hard":{"requests.cpu":"5"}}}'   # prod-eu: beyond its share, admitted after a transfer from the pool
  ${alice(us)} ${kubectl} -n storefront-web patch quota tenantgate-quota --type=merge -p '{"spec":{"hard":{"requests.cpu":"4"}}}'   # prod-us: beyond what the fleet has left: [F2], naming who holds the room
  ${alice(eu)} ${plugin} headroom storefront      # per cluster: share, used, fleet headroom
  ${alice(eu)} ${kubectl} -n storefront-web get budget      # the budget view on prod-eu
  ${alice(eu)} ${kubectl} -n storefront-web patch quota tenantgate-quota --type=merge -p '{"spec":{"hard":{"requests.cpu":"2"}}}'   # then, unused for a minute, prod-eu offers the room (lendable on the hub)
  ${alice(us)} ${kubectl} -n storefront-web patch quota tenantgate-quota --type=merge -p '{"spec":{"hard":{"requests.cpu":"4"}}}'   # prod-us again: admitted now, taking prod-eu's offer in one hub write
`;
}

void main();
