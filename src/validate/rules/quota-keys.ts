/**
 * S1 for the resource names and values of a Project's quota lists: what Kubernetes would refuse in a
 * ResourceQuota, or accept and never count (docs/adr/0067-budgets.md).
 *
 * The apiserver's ResourceQuota validation refuses a name that is not a qualified name, a name without
 * `/` that is not a standard quota resource, a negative value, and a fraction for a resource counted in
 * whole units (`pods`, `count/…`, extended resources such as `<class>.deviceclass.resource.k8s.io/devices`).
 * It accepts every other qualified name — `limits.nvidia.com/gpu` and a bare `nvidia.com/gpu`
 * included — but its quota evaluators count only `requests.<extended resource>`, `count/<resource>`,
 * `<class>.deviceclass.resource.k8s.io/devices`,
 * `<class>.storageclass.storage.k8s.io/{requests.storage,persistentvolumeclaims}` and the `kubernetes.io/` names: a
 * budget on anything else would bound nothing, so it is refused too.
 *
 * `namespaceDefaults.limitRange` (a Container LimitRange) is held to what the apiserver accepts there:
 * container resource names (`cpu`, `memory`, `ephemeral-storage`, `hugepages-*`, an extended resource
 * by its own name such as `nvidia.com/gpu`, never `requests.nvidia.com/gpu`), and for a resource that
 * cannot be overcommitted (extended resources, hugepages) a default equal to its defaultRequest.
 */
import { Quantity } from '../../quantity/quantity.js';
import { isQualifiedName } from '../names.js';
import { formatFieldPath } from '../schema/validate-schema.js';
import type { FieldPath, LimitRangeDefaults, Project, QuotaSpec, ResourceList, Violation } from '../types.js';

/** Names without `/` the apiserver accepts in a ResourceQuota (IsStandardQuotaResourceName), hugepages aside. */
const STANDARD_QUOTA_RESOURCES = new Set([
  'cpu',
  'memory',
  'ephemeral-storage',
  'requests.cpu',
  'requests.memory',
  'requests.storage',
  'requests.ephemeral-storage',
  'limits.cpu',
  'limits.memory',
  'limits.ephemeral-storage',
  'pods',
  'resourcequotas',
  'services',
  'replicationcontrollers',
  'secrets',
  'persistentvolumeclaims',
  'configmaps',
  'services.nodeports',
  'services.loadbalancers',
]);

/** Standard names counted in whole units (the apiserver's integerResources). */
const INTEGER_RESOURCES = new Set([
  'pods',
  'resourcequotas',
  'services',
  'replicationcontrollers',
  'secrets',
  'configmaps',
  'persistentvolumeclaims',
  'services.nodeports',
  'services.loadbalancers',
]);

const DEVICE_CLASS_SUFFIX = '.deviceclass.resource.k8s.io/devices';
const STORAGE_CLASS_SUFFIXES = [
  '.storageclass.storage.k8s.io/requests.storage',
  '.storageclass.storage.k8s.io/persistentvolumeclaims',
];

const isNative = (name: string): boolean => !name.includes('/') || name.includes('kubernetes.io/');
const isHugePages = (name: string): boolean => name.startsWith('hugepages-') || name.startsWith('requests.hugepages-');

/**
 * IsExtendedResourceName: the apiserver counts these in whole units (bare `nvidia.com/gpu`,
 * `count/pods`, DRA device keys).
 */
function isExtendedResourceName(name: string): boolean {
  return !isNative(name) && !name.startsWith('requests.') && isQualifiedName(`requests.${name}`).length === 0;
}

/** The forms with `/` some quota evaluator of Kubernetes counts. */
function isCounted(name: string): boolean {
  return (
    isNative(name) ||
    name.startsWith('requests.') ||
    name.startsWith('count/') ||
    (name.endsWith(DEVICE_CLASS_SUFFIX) && name.length > DEVICE_CLASS_SUFFIX.length) ||
    STORAGE_CLASS_SUFFIXES.some((s) => name.endsWith(s) && name.length > s.length)
  );
}

const COUNTED_FORMS =
  'requests.<extended resource> (e.g. requests.nvidia.com/gpu), ' +
  '<deviceclass>.deviceclass.resource.k8s.io/devices, count/<resource>.<group> (e.g. ' +
  'count/resourceclaims.resource.k8s.io), <storageclass>.storageclass.storage.k8s.io/requests.storage or ' +
  '/persistentvolumeclaims';

/** Why `name` cannot be a key of a ResourceQuota's `hard`, or undefined when it can. */
export function quotaNameProblem(name: string): string | undefined {
  const unqualified = isQualifiedName(name);
  if (unqualified.length > 0)
    return `is not a resource name the apiserver accepts in a ResourceQuota (${unqualified.join('; ')})`;
  if (!name.includes('/')) {
    if (STANDARD_QUOTA_RESOURCES.has(name) || isHugePages(name)) return undefined;
    return (
      `is refused by the apiserver in a ResourceQuota (must be a standard resource for quota: cpu, memory, ` +
      `ephemeral-storage, requests.*/limits.* of them, pods, services, … — or a name with "/", e.g. ` +
      `requests.nvidia.com/gpu)`
    );
  }
  if (isCounted(name)) return undefined;
  const slash = name.indexOf('/');
  if (name.startsWith('limits.')) {
    return (
      `is accepted by the apiserver but never counted by Kubernetes' quota: an extended resource is counted only ` +
      `as requests.<name> (no overcommit, so no limits.); allowed: requests.${name.slice('limits.'.length)}`
    );
  }
  const extended = name.slice(0, slash).includes('.') ? ` (for the extended resource ${name}: requests.${name})` : '';
  return (
    `is accepted by the apiserver but never counted by Kubernetes' quota, so a budget on it would bound nothing; ` +
    `allowed forms: ${COUNTED_FORMS}${extended}`
  );
}

/**
 * Why `value` cannot be the quantity of `name` in a ResourceQuota (negative, or a fraction of a whole-unit resource).
 */
export function quotaValueProblem(name: string, value: Quantity): string | undefined {
  if (value.sign() < 0) return 'must be 0 or more (the apiserver refuses a negative quota)';
  if ((INTEGER_RESOURCES.has(name) || isExtendedResourceName(name)) && value.milliValue() % 1000n !== 0n) {
    return (
      `must be a whole number: Kubernetes counts ${name} in whole units (the apiserver refuses a fraction in a ` +
      `ResourceQuota)`
    );
  }
  return undefined;
}

interface QuotaList {
  path: FieldPath;
  hard: ResourceList;
  /** Whether the values are checked here (the fleet budget's and bursts' values have rules of their own: F1, B1). */
  values: boolean;
}

function* tierLists(tiers: Record<string, { quota?: QuotaSpec }> | undefined, path: FieldPath): Generator<QuotaList> {
  if (!tiers || typeof tiers !== 'object') return;
  for (const [tier, t] of Object.entries(tiers))
    if (isHard(t?.quota?.hard)) yield { path: [...path, tier, 'quota', 'hard'], hard: t.quota!.hard!, values: true };
}

function isHard(hard: unknown): hard is ResourceList {
  return hard !== null && typeof hard === 'object' && !Array.isArray(hard);
}

/** Every quota list of a Project's spec with its field path. */
function* quotaLists(project: Project): Generator<QuotaList> {
  const spec = project.spec;
  const list = (hard: unknown, path: FieldPath, values = true): QuotaList[] =>
    isHard(hard) ? [{ path, hard, values }] : [];
  yield* list(spec.quota?.hard, ['spec', 'quota', 'hard']);
  if (isHard(spec.clusters))
    for (const [c, v] of Object.entries(spec.clusters))
      yield* list(v?.quota?.hard, ['spec', 'clusters', c, 'quota', 'hard']);
  yield* list(spec.fleet?.quota?.hard, ['spec', 'fleet', 'quota', 'hard'], false);
  yield* tierLists(spec.tiers, ['spec', 'tiers']);
  if (Array.isArray(spec.bursts))
    for (const [i, b] of spec.bursts.entries())
      yield* list(b?.quota?.hard, ['spec', 'bursts', i, 'quota', 'hard'], false);
  yield* list(spec.namespaceDefaults?.quota?.hard, ['spec', 'namespaceDefaults', 'quota', 'hard']);
  yield* tierLists(spec.namespaceDefaults?.tiers, ['spec', 'namespaceDefaults', 'tiers']);
  if (Array.isArray(spec.namespaces)) {
    for (const [i, ns] of spec.namespaces.entries()) {
      yield* list(ns?.quota?.hard, ['spec', 'namespaces', i, 'quota', 'hard']);
      yield* tierLists(ns?.tiers, ['spec', 'namespaces', i, 'tiers']);
    }
  }
}

/**
 * S1: every key of every quota list is a name Kubernetes' quota accepts and counts, every value one
 * it accepts for that name.
 */
export function checkQuotaKeys(project: Project): Violation[] {
  if (!project?.spec || typeof project.spec !== 'object') return [];
  const name =
    typeof project.metadata?.name === 'string' && project.metadata.name !== ''
      ? `Project ${project.metadata.name}`
      : 'Project';
  const out: Violation[] = [];
  for (const { path, hard, values } of quotaLists(project)) {
    for (const [key, raw] of Object.entries(hard)) {
      const at = [...path, key];
      const problem = quotaNameProblem(key);
      if (problem) {
        out.push({
          rule: 'S1',
          path: at,
          message: `${name}: ${formatFieldPath(at)} names ${JSON.stringify(key)}, which ${problem}`,
        });
        continue;
      }
      const q = values ? Quantity.tryParse(raw) : undefined; // an unparsable value is S1 of the schema already
      const bad = q && quotaValueProblem(key, q);
      if (bad)
        out.push({
          rule: 'S1',
          path: at,
          message: `${name}: ${formatFieldPath(at)} is ${JSON.stringify(raw)}, which ${bad}`,
        });
    }
  }
  return out;
}

const CONTAINER_RESOURCES = new Set(['cpu', 'memory', 'ephemeral-storage']);

/** Why `name` cannot be a key of a Container LimitRange (the apiserver's container resource names), or undefined. */
export function limitRangeNameProblem(name: string): string | undefined {
  const unqualified = isQualifiedName(name);
  if (unqualified.length > 0)
    return `is not a resource name the apiserver accepts in a LimitRange (${unqualified.join('; ')})`;
  if (!name.includes('/')) {
    if (CONTAINER_RESOURCES.has(name) || name.startsWith('hugepages-')) return undefined;
    const counted =
      name.startsWith('requests.') || name.startsWith('limits.')
        ? `; a LimitRange names a container resource: ${name.slice(name.indexOf('.') + 1)}`
        : '';
    return (
      `is refused by the apiserver in a LimitRange (must be a standard resource for containers: cpu, memory, ` +
      `ephemeral-storage, hugepages-<size>, or an extended resource such as nvidia.com/gpu${counted})`
    );
  }
  if (isNative(name) || isExtendedResourceName(name)) return undefined;
  const bare = name.replace(/^(requests|limits)\./, '');
  return (
    `is refused by the apiserver in a LimitRange (doesn't follow extended resource name standard); a LimitRange ` +
    `names the extended resource itself: ${bare}`
  );
}

const LIMIT_KEYS = ['default', 'defaultRequest', 'max', 'min'] as const;

/**
 * S1: `namespaceDefaults.limitRange` holds what the apiserver accepts in the LimitRange render and
 * the controller write.
 */
export function checkLimitRangeKeys(project: Project): Violation[] {
  const limits: LimitRangeDefaults | undefined = project?.spec?.namespaceDefaults?.limitRange;
  if (!limits || typeof limits !== 'object') return [];
  const name =
    typeof project.metadata?.name === 'string' && project.metadata.name !== ''
      ? `Project ${project.metadata.name}`
      : 'Project';
  const base: FieldPath = ['spec', 'namespaceDefaults', 'limitRange'];
  const out: Violation[] = [];
  for (const key of LIMIT_KEYS) {
    const list = limits[key];
    if (!isHard(list)) continue;
    for (const resource of Object.keys(list)) {
      const problem = limitRangeNameProblem(resource);
      const at = [...base, key, resource];
      if (problem)
        out.push({
          rule: 'S1',
          path: at,
          message: `${name}: ${formatFieldPath(at)} names ${JSON.stringify(resource)}, which ${problem}`,
        });
    }
  }
  // Extended resources and hugepages cannot be overcommitted: a container's request must equal its limit.
  if (isHard(limits.default) && isHard(limits.defaultRequest)) {
    for (const [resource, raw] of Object.entries(limits.default)) {
      if (isNative(resource) && !resource.startsWith('hugepages-')) continue;
      const limit = Quantity.tryParse(raw);
      const request = Quantity.tryParse(limits.defaultRequest[resource]);
      if (!limit || !request || limit.cmp(request) === 0) continue;
      const at = [...base, 'defaultRequest', resource];
      out.push({
        rule: 'S1',
        path: at,
        message:
          `${name}: ${formatFieldPath(at)} is ${JSON.stringify(limits.defaultRequest[resource])}, but ${resource} ` +
          `cannot be overcommitted: the apiserver refuses a LimitRange whose default (${JSON.stringify(raw)}) and ` +
          `defaultRequest differ for it; allowed: the same value in both, or only default`,
      });
    }
  }
  return out;
}
