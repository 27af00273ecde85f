/**
 * Where the plugin's numbers come from. `view`: the budget view API (view.tenantgate.io/v1alpha1, the
 * controller's aggregated API: OwnedProjects and Budgets, filtered by the caller's identity). `direct`:
 * the objects tenants may read (Projects and namespaces cluster-wide, quotas in their own namespaces)
 * put through `projectBudget`. `auto` (the default) takes the view when discovery serves it and the
 * direct path when it answers 404 — clusters without the APIService. Both give the same shapes.
 */
import type { NamespaceObject, Project, ResourceQuotaObject } from '../validate/types.js';
import { LABEL_PROJECT } from '../validate/types.js';
import { Kubectl, KubectlError } from './kubectl.js';
import { isOwner } from '../validate/rules/tenancy.js';
import { VIEW_API_PATH, VIEW_GROUP, type Identity } from '../view/api.js';
import {
  budgetFromObjects,
  budgetFromView,
  clusterFromStatus,
  identityFromReview,
  projectRow,
  projectRowFromView,
  type ProjectBudgetJson,
  type ProjectRow,
} from './model.js';
import { cmpStr } from '../order.js';

export const SOURCES = ['auto', 'view', 'direct'] as const;
/** Without --source: the budget view when the cluster serves it, else the objects themselves. */
export const DEFAULT_SOURCE = 'auto';
export type SourceName = (typeof SOURCES)[number];

interface List<T> {
  items: T[];
}

export class BudgetSource {
  private resolved: Promise<'view' | 'direct'> | undefined;

  constructor(
    readonly kubectl: Kubectl,
    readonly wanted: SourceName,
    /** tenantgate's cluster name for the direct path; undefined: from the Project's status (clusterFromStatus). */
    readonly clusterName: string | undefined,
    private readonly warn: (message: string) => void = (m) => process.stderr.write(`${m}\n`),
  ) {}

  /** Which path answers: discovery of view.tenantgate.io/v1alpha1 decides in auto mode. */
  source(): Promise<'view' | 'direct'> {
    this.resolved ??= this.resolve();
    return this.resolved;
  }

  private async resolve(): Promise<'view' | 'direct'> {
    if (this.wanted === 'direct') return 'direct';
    let served: boolean;
    try {
      const list = await this.kubectl.raw<{ resources?: Array<{ name?: string }> }>(VIEW_API_PATH);
      served = !!list && ['budgets', 'ownedprojects'].every((r) => list.resources?.some((x) => x.name === r));
    } catch (err) {
      if (this.wanted === 'view') throw err;
      this.warn(
        `warning: the budget view API ${VIEW_API_PATH} did not answer (${(err as Error).message.split('\n')[0]}` +
          `); reading Projects, namespaces and quotas instead`,
      );
      return 'direct';
    }
    if (served) return 'view';
    if (this.wanted === 'view')
      throw new Error(
        `the budget view API ${VIEW_API_PATH} is not served by this cluster (discovery: 404); use --source=direct`,
      );
    return 'direct';
  }

  async identity(): Promise<Identity> {
    return identityFromReview(await this.kubectl.json(['auth', 'whoami']));
  }

  /** The projects the caller owns, by name. */
  async projects(): Promise<ProjectRow[]> {
    if ((await this.source()) === 'view') {
      const list = await this.kubectl.json<List<unknown>>(['get', `ownedprojects.${VIEW_GROUP}`]);
      return list.items.map(projectRowFromView).sort(byName);
    }
    const [who, projects, namespaces] = await Promise.all([
      this.identity(),
      this.kubectl.json<List<Project>>(['get', 'projects.tenantgate.io']),
      this.projectNamespaces(),
    ]);
    return projects.items
      .filter((p) => isOwner(p, who))
      .map((p) => projectRow(p, namespaces))
      .sort(byName);
  }

  /** Every namespace labelled for a project (tenants may list namespaces). */
  async projectNamespaces(selector = LABEL_PROJECT): Promise<NamespaceObject[]> {
    return (await this.kubectl.json<List<NamespaceObject>>(['get', 'namespaces', '-l', selector])).items;
  }

  /** The project's budget; `project` must be one the caller can read. */
  async budget(project: string): Promise<ProjectBudgetJson> {
    const namespaces = await this.projectNamespaces(`${LABEL_PROJECT}=${project}`);
    if ((await this.source()) === 'view' && namespaces.length > 0) {
      const ns = namespaces.map((n) => n.metadata.name ?? '').sort()[0]!;
      const b = await this.kubectl.raw<unknown>(`${VIEW_API_PATH}/namespaces/${ns}/budgets/${project}`);
      if (!b)
        throw new Error(`Budget ${ns}/${project}: not found (namespace ${ns} is labelled for project ${project})`);
      return budgetFromView(b);
    }
    let p: Project;
    try {
      p = await this.kubectl.json<Project>(['get', 'projects.tenantgate.io', project]);
    } catch (err) {
      if (err instanceof KubectlError && err.notFound)
        throw new Error(`Project ${project} not found (\`kubectl tenantgate projects\` lists yours)`);
      throw err;
    }
    const quotas = (
      await Promise.all(
        namespaces.map((n) =>
          this.kubectl.json<List<ResourceQuotaObject>>(['-n', n.metadata.name ?? '', 'get', 'resourcequotas']),
        ),
      )
    ).flatMap((l) => l.items);
    return budgetFromObjects(p, namespaces, quotas, this.clusterName ?? clusterFromStatus(p));
  }
}

const byName = (a: ProjectRow, b: ProjectRow) => cmpStr(a.name, b.name);
