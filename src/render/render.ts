/** Project declarations → the objects Argo CD applies (SPEC §4 R2). Pure and deterministic. */
import { type TenantgateConfig } from '../config/config.js';
import { namespacesOn } from '../validate/offline.js';
import { ownerBinding } from './owner-binding.js';
export { OWNERS_BINDING_NAME } from './owner-binding.js';
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

export const SYNC_WAVE = 'argocd.argoproj.io/sync-wave';
export const LIMITRANGE_NAME = 'tenantgate-limits';
export const NETWORK_POLICY_NAME = 'tenantgate-isolation';

export type KubeObject = { apiVersion: string; kind: string; metadata: Record<string, unknown> } & Record<string, unknown>;

export interface RenderOptions {
  /** Cluster rendered for ('' = unnamed: only namespaces without `cluster`). */
  cluster: string;
}

function meta(name: string, wave: string, labels: Record<string, string>, extra: Record<string, unknown> = {}, annotations: Record<string, string> = {}): Record<string, unknown> {
  return { name, ...extra, labels: { ...labels, [LABEL_MANAGED_BY]: MANAGED_BY }, annotations: { ...annotations, [SYNC_WAVE]: wave } };
}

function byName<T extends { name: string }>(a: T, b: T): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/**
 * Objects in apply order: Projects (-2), Namespaces (-1), then each namespace's objects (0). Made one
 * at a time as they are consumed: `render` prints each right away, so hundreds of thousands of
 * objects never need to be alive at once (SPEC §10 P2).
 */
export function* renderProjectsLazily(projects: Project[], _config: TenantgateConfig, options: RenderOptions): Generator<KubeObject> {
  const sorted = [...projects].sort((a, b) => byName({ name: a.metadata.name ?? '' }, { name: b.metadata.name ?? '' }));
  for (const project of sorted) yield renderProject(project);
  const placed = sorted.map((project) => ({ project, namespaces: [...namespacesOn(project, options.cluster)].sort(byName) }));
  for (const { project, namespaces } of placed) for (const ns of namespaces) yield renderNamespace(project, ns);
  for (const { project, namespaces } of placed) for (const ns of namespaces) yield* renderNamespaceContent(project, ns);
}

function renderProject(project: Project): KubeObject {
  const { labels, annotations } = project.metadata;
  return {
    apiVersion: project.apiVersion ?? 'tenantgate.io/v1alpha1',
    kind: 'Project',
    metadata: meta(project.metadata.name ?? '', '-2', labels ?? {}, {}, annotations ?? {}),
    spec: project.spec,
  };
}

function projectLabels(project: Project): Record<string, string> {
  return { [LABEL_PROJECT]: project.metadata.name ?? '', [LABEL_TENANT]: project.spec.tenant };
}

function renderNamespace(project: Project, ns: DeclaredNamespace): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: meta(ns.name, '-1', { ...(ns.labels ?? {}), ...projectLabels(project) }, {}, ns.annotations ?? {}),
  };
}

function renderNamespaceContent(project: Project, ns: DeclaredNamespace): KubeObject[] {
  const out: KubeObject[] = [];
  const labels = { [LABEL_PROJECT]: project.metadata.name ?? '' };
  const inNs = { namespace: ns.name };
  const hard: ResourceList | undefined = ns.quota?.hard ?? project.spec.namespaceDefaults?.quota?.hard;
  if (hard && Object.keys(hard).length > 0) {
    out.push({ apiVersion: 'v1', kind: 'ResourceQuota', metadata: meta(DEFAULT_QUOTA_NAME, '0', labels, inNs), spec: { hard: sortedList(hard) } });
  }
  const limits = project.spec.namespaceDefaults?.limitRange;
  if (limits && Object.keys(limits).length > 0) {
    const limit: Record<string, unknown> = { type: 'Container' };
    for (const key of ['default', 'defaultRequest', 'max', 'min'] as const) if (limits[key]) limit[key] = sortedList(limits[key]!);
    out.push({ apiVersion: 'v1', kind: 'LimitRange', metadata: meta(LIMITRANGE_NAME, '0', labels, inNs), spec: { limits: [limit] } });
  }
  const binding = ownerBinding(project, ns.name);
  if (binding.subjects.length > 0) {
    const { name, namespace, labels } = binding.metadata;
    out.push({ ...binding, metadata: meta(name, '0', labels, { namespace }) });
  }
  if (project.spec.networkIsolation) {
    out.push({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: meta(NETWORK_POLICY_NAME, '0', labels, inNs),
      spec: {
        podSelector: {},
        policyTypes: ['Ingress'],
        ingress: [{ from: [{ namespaceSelector: { matchLabels: { [LABEL_PROJECT]: project.metadata.name ?? '' } } }] }],
      },
    });
  }
  return out;
}

function sortedList(list: ResourceList): ResourceList {
  const out: ResourceList = {};
  for (const key of Object.keys(list).sort()) out[key] = list[key]!;
  return out;
}
