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
import { fleetApplicationSet, startFleet } from '../fleet.js';
import { installBase, kubectlAs, startLocalWebhook } from './tenantgate.js';
import { applyChartTemplates, startControllerWithView } from '../view.js';

const log = (m: string) => process.stderr.write(`[make run] ${m}\n`);

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
    for (const stop of stopAll.reverse()) await stop().catch(() => {});
    await cp.stop();
    process.exit(0);
  };
  handOverSignals(['SIGINT', 'SIGTERM']);
  process.on('SIGINT', () => void shutdown());
  process.on('SIGTERM', () => void shutdown());
  try {
    await installBase(info);
    // One line per admission decision, as `tenantgate webhook` logs it: what was denied, and by which rule.
    const hook = await startLocalWebhook(info, {}, { log: (m) => log(`webhook: ${m}`), onDecision: (d) => log(`webhook: admission decision ${JSON.stringify(d)}`) });
    stopAll.push(() => hook.stop());
    log(`webhook serving ${hook.url} and registered with the apiserver`);
    // The controller as its ServiceAccount, serving the budget view (view.tenantgate.io) registered as an
    // APIService: the chart's view RBAC (templates/view/rbac.yaml, ownedprojects for tenants) first.
    await applyChartTemplates(info, ['view/rbac.yaml', 'rbac/self-service.yaml'], ['view.enabled=true']);
    const view = await startControllerWithView(info, {}, (m) => log(`controller: ${m}`));
    const controller = view.controller;
    stopAll.push(() => view.stop());
    log('controller running');
    let argoHelp = '';
    if (process.env.TG_RUN_FLEET) argoHelp = await startFleetWithExamples(info, dir, stopAll);
    if (process.env.TG_RUN_ARGOCD) {
      argoHelp = await startArgoCdWithExamples(info, dir, stopAll);
    } else {
      const rendered = await renderDirectory(join(REPO_ROOT, 'examples', 'gitops'));
      if (rendered.output === undefined) throw new Error(`examples/gitops does not render:\n${rendered.errors.join('\n')}`);
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
  KUBECONFIG=${info.kubeconfigs.alice} ${kubectl} label namespace payments-batch pod-security.kubernetes.io/enforce=privileged   # [T7]: protected
  KUBECONFIG=${info.kubeconfigs.alice} ${kubectl} delete namespace tenantgate-system    # forbidden: nothing outside her projects
  KUBECONFIG=${info.kubeconfigs.alice} ${kubectl} apply --dry-run=server -f examples/invalid/Q1-over-budget.yaml   # forbidden: tenants only read projects

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
async function startArgoCdWithExamples(info: ClusterInfo, dir: string, stopAll: Array<() => Promise<void>>): Promise<string> {
  const argo = await startArgoCd(info, { dir: join(dir, 'argocd'), log: (m) => log(`argocd: ${m}`) });
  stopAll.push(() => argo.stop());
  const repo = await LocalGitRepo.init(join(dir, 'git'));
  await repo.copyIn(join(REPO_ROOT, 'examples', 'gitops'), 'projects');
  await repo.commit('examples/gitops');
  const app = applicationObject({ name: 'tenantgate-projects-prod-eu', repoURL: repo.url, path: 'projects', env: { CLUSTER: 'prod-eu' } });
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
 * the real Argo CD on this one (ADR 0029), and an ApplicationSet rendering examples/gitops per cluster.
 */
async function startFleetWithExamples(info: ClusterInfo, dir: string, stopAll: Array<() => Promise<void>>): Promise<string> {
  const fleet = await startFleet({ host: info, dir: join(dir, 'fleet'), id: 'dev', log: (m) => log(`fleet: ${m}`) });
  stopAll.push(() => fleet.stop());
  const repo = await LocalGitRepo.init(join(dir, 'git'));
  await repo.copyIn(join(REPO_ROOT, 'examples', 'gitops'), 'projects');
  await repo.commit('examples/gitops');
  await kubectlAs(info, 'admin', ['apply', '-f', '-'], JSON.stringify(fleetApplicationSet({ name: 'tenantgate-projects', fleet: fleet.id, repoURL: repo.url, path: 'projects' })));
  log(`ApplicationSet argocd/tenantgate-projects: one Application per cluster (${fleet.members.map((m) => m.name).join(', ')})`);
  const contexts = fleet.members.map((m) => m.context);
  return `
A fleet behind Argo CD (${argoCdVersion()}, with its ApplicationSet controller; logs in ${fleet.argo.dir}):
  kubectl -n argocd get applications -o custom-columns=NAME:.metadata.name,SYNC:.status.sync.status,HEALTH:.status.health.status,OP:.status.operationState.phase
${contexts.map((c) => `  kubectl --kubeconfig ${fleet.kubeconfig} --context ${c} get projects,namespaces -l tenantgate.io/project   # what ${c} got`).join('\n')}
  node ${join(REPO_ROOT, 'dist', 'cli', 'main.js')} plan ${join(repo.dir, 'projects')} ${contexts.map((c) => `--cluster ${c}=${c}`).join(' ')} --kubeconfig ${fleet.kubeconfig}   # every project, per cluster and in total
  git -C ${repo.dir} log --oneline      # commit there; Argo CD polls every 10 s
`;
}

void main();
