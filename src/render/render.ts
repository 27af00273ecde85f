/** Project declarations → the objects Argo CD applies. Pure and deterministic. */
import { sortedKeys } from '../canonical-json.js';
import { type TenantgateConfig } from '../config/config.js';
import { namespacesOn } from '../validate/offline.js';
import { appProjectsFor } from './app-projects.js';
import { hubFleetBudgets } from './fleet-budgets.js';
import { ownerBinding } from './owner-binding.js';
import { isolationPolicyFor, limitRangeFor } from './namespace-policies.js';
import { podSecurityLabels } from '../validate/pod-security.js';
import { withoutGrantingKeys } from '../validate/granting-metadata.js';
import { tierQuotasOf } from '../validate/tiers.js';
import { allowListFor } from '../validate/allow-list-params.js';
import {
  DEFAULT_QUOTA_NAME,
  LABEL_MANAGED_BY,
  LABEL_PROJECT,
  LABEL_TENANT,
  MANAGED_BY,
  type DeclaredNamespace,
  type Project,
  type ResourceList,
} from '../validate/types.js';
import { cmpStr } from '../order.js';

const SYNC_WAVE = 'argocd.argoproj.io/sync-wave';

export type KubeObject = { apiVersion: string; kind: string; metadata: Record<string, unknown> } & Record<
  string,
  unknown
>;

export interface RenderOptions {
  /** Cluster rendered for ('' = unnamed: only namespaces without `cluster`). */
  cluster: string;
  /**
   * Also one Argo CD AppProject per tenant (src/render/app-projects.ts), right after the Projects and in
   * their wave. Covers the tenant's namespaces on every cluster, whichever cluster is rendered for.
   */
  appProjects?: boolean;
  /**
   * Rendering for the fleet's hub: also each fleet-budgeted Project's FleetBudget (src/render/fleet-budgets.ts),
   * right after the Projects and in their wave.
   */
  fleetHub?: boolean;
  /** The instant (ms since the epoch) rendered at: the bursts active then raise each FleetBudget member's bound. */
  at: number;
}

function meta(
  name: string,
  wave: string,
  labels: Record<string, string>,
  extra: Record<string, unknown> = {},
  annotations: Record<string, string> = {},
): Record<string, unknown> {
  return {
    name,
    ...extra,
    labels: { ...labels, [LABEL_MANAGED_BY]: MANAGED_BY },
    annotations: { ...annotations, [SYNC_WAVE]: wave },
  };
}

function byName<T extends { name: string }>(a: T, b: T): number {
  return cmpStr(a.name, b.name);
}

/**
 * Objects in apply order: Projects (-2) (and with `appProjects` the tenants' AppProjects, -2), Namespaces (-1), then
 * each namespace's objects (0). Made one at a time as they are consumed: `render` prints each right away, so hundreds
 * of thousands of objects never need to be alive at once.
 */
export function* renderProjectsLazily(
  projects: Project[],
  config: TenantgateConfig,
  options: RenderOptions,
): Generator<KubeObject> {
  const sorted = [...projects].sort((a, b) => byName({ name: a.metadata.name ?? '' }, { name: b.metadata.name ?? '' }));
  for (const project of sorted) yield renderProject(project);
  if (options.appProjects) yield* appProjectsFor(sorted, config.argocd, '-2');
  if (options.fleetHub) yield* hubFleetBudgets(sorted, options.at, '-2', SYNC_WAVE);
  const placed = sorted.map((project) => ({
    project,
    namespaces: [...namespacesOn(project, options.cluster)].sort(byName),
  }));
  for (const { project, namespaces } of placed) for (const ns of namespaces) yield renderNamespace(project, ns, config);
  for (const { project, namespaces } of placed)
    for (const ns of namespaces) yield* renderNamespaceContent(project, ns, config);
}

/**
 * D4 (docs/adr/0096-deletion-loses-no-data.md): Argo CD asks before it prunes a Project or deletes it with
 * its Application; options the Project's own annotation already names are kept.
 */
const SYNC_OPTIONS = 'argocd.argoproj.io/sync-options';
const CONFIRM_OPTIONS = ['Prune=confirm', 'Delete=confirm'];

export function projectSyncOptions(given: string | undefined): string {
  const options = (given ?? '')
    .split(',')
    .map((o) => o.trim())
    .filter((o) => o !== '');
  const keys = new Set(options.map((o) => o.split('=')[0]));
  return [...options, ...CONFIRM_OPTIONS.filter((o) => !keys.has(o.split('=')[0]))].join(',');
}

function renderProject(project: Project): KubeObject {
  const { labels, annotations } = project.metadata;
  const withConfirm = { ...annotations, [SYNC_OPTIONS]: projectSyncOptions(annotations?.[SYNC_OPTIONS]) };
  return {
    apiVersion: project.apiVersion ?? 'tenantgate.io/v1alpha1',
    kind: 'Project',
    metadata: meta(project.metadata.name ?? '', '-2', labels ?? {}, {}, withConfirm),
    spec: project.spec,
  };
}

function projectLabels(project: Project): Record<string, string> {
  return { [LABEL_PROJECT]: project.metadata.name ?? '', [LABEL_TENANT]: project.spec.tenant };
}

/**
 * A declared namespace, with its project's labels and Pod Security levels (the webhook and the
 * controller set the same). Never a label or annotation that grants power (granting-metadata.ts) from
 * the declaration: validation refuses one (T7), and render drops it should it be called without.
 */
function renderNamespace(project: Project, ns: DeclaredNamespace, config: TenantgateConfig): KubeObject {
  const labels = {
    ...withoutGrantingKeys('labels', ns.labels ?? {}),
    ...podSecurityLabels(config.podSecurity, project),
    ...projectLabels(project),
  };
  return {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: meta(ns.name, '-1', labels, {}, withoutGrantingKeys('annotations', ns.annotations ?? {})),
  };
}

function renderNamespaceContent(project: Project, ns: DeclaredNamespace, config: TenantgateConfig): KubeObject[] {
  const out: KubeObject[] = [];
  const labels = { [LABEL_PROJECT]: project.metadata.name ?? '' };
  const inNs = { namespace: ns.name };
  const hard: ResourceList | undefined = ns.quota?.hard ?? project.spec.namespaceDefaults?.quota?.hard;
  if (hard && Object.keys(hard).length > 0) {
    out.push({
      apiVersion: 'v1',
      kind: 'ResourceQuota',
      metadata: meta(DEFAULT_QUOTA_NAME, '0', labels, inNs),
      spec: { hard: sortedKeys(hard) },
    });
  }
  // Priority tiers (docs/budgets.md#priority-tiers): a quota scoped to each tier, and the other-tiers quota.
  for (const t of tierQuotasOf(project, ns)) {
    out.push({
      apiVersion: 'v1',
      kind: 'ResourceQuota',
      metadata: meta(t.name, '0', labels, inNs),
      spec: { hard: sortedKeys(t.hard), scopeSelector: t.scopeSelector },
    });
  }
  const limitRange = limitRangeFor(project, ns.name);
  if (limitRange) out.push(withWave(limitRange));
  const binding = ownerBinding(project, ns.name);
  if (binding.subjects.length > 0) {
    const { name, namespace, labels } = binding.metadata;
    out.push({ ...binding, metadata: meta(name, '0', labels, { namespace }) });
  }
  const isolation = isolationPolicyFor(project, ns.name, config.network);
  if (isolation) out.push(withWave(isolation));
  // The parameters of the allow-list policies: without them the namespace admits none of the objects they judge.
  out.push(withWave(allowListFor(config, project, ns.name)));
  return out;
}

/**
 * A shared namespace object as Argo CD applies it: in wave 0 (after its Namespace; the AllowList
 * CRD comes with the chart).
 */
function withWave(object: {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; labels: Record<string, string> };
  spec: object;
}): KubeObject {
  const { name, namespace, labels } = object.metadata;
  return { ...object, metadata: meta(name, '0', labels, { namespace }) } as KubeObject;
}
