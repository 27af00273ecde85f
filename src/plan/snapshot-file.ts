/**
 * The file `tenantgate snapshot` writes and `tenantgate plan --snapshot` reads: one cluster's
 * Projects, its project namespaces (labelled `tenantgate.io/project`) and their ResourceQuotas with
 * `status.used`, and the objects of those namespaces the allow-lists judge (their apiVersion, kind,
 * metadata and spec: what a narrowed list strands) — nothing else (docs/plan.md). Pure: objects in,
 * objects or errors out.
 */
import { parse } from 'yaml';
import { LABEL_PROJECT, type NamespaceObject, type Project, type ResourceQuotaObject } from '../validate/types.js';
import type { LiveState } from './types.js';
import type { LiveObject } from './allow-lists.js';

const SNAPSHOT_API_VERSION = 'tenantgate.io/v1alpha1';
const SNAPSHOT_KIND = 'ClusterSnapshot';

export interface SnapshotDocument {
  apiVersion: typeof SNAPSHOT_API_VERSION;
  kind: typeof SNAPSHOT_KIND;
  cluster: string;
  takenAt: string;
  projects: Project[];
  namespaces: NamespaceObject[];
  resourceQuotas: ResourceQuotaObject[];
  /**
   * Pods, Services, claims, Ingresses, Gateway API objects, ResourceClaims of the project
   * namespaces (absent in older snapshots).
   */
  objects?: LiveObject[];
}

export class SnapshotFileError extends Error {}

/** Only what plan reads: the metadata the rules read, the spec, and for quotas their status. */
function trim<T extends { metadata?: Record<string, unknown> | object }>(o: T, keep: readonly string[]): T {
  const out: Record<string, unknown> = {};
  for (const k of keep) if ((o as Record<string, unknown>)[k] !== undefined) out[k] = (o as Record<string, unknown>)[k];
  const meta = (o.metadata ?? {}) as Record<string, unknown>;
  const m: Record<string, unknown> = {};
  for (const k of ['name', 'namespace', 'uid', 'labels', 'annotations', 'deletionTimestamp'])
    if (meta[k] !== undefined && meta[k] !== null) m[k] = meta[k];
  out.metadata = m;
  return out as T;
}

const byName = (
  a: { metadata: { name?: string; namespace?: string } },
  b: { metadata: { name?: string; namespace?: string } },
) =>
  (a.metadata.namespace ?? '').localeCompare(b.metadata.namespace ?? '') ||
  (a.metadata.name ?? '').localeCompare(b.metadata.name ?? '');

/**
 * The snapshot of what was listed: project namespaces only, and the quotas in them; sorted, so two snapshots of one
 * state are equal.
 */
export function snapshotOf(
  cluster: string,
  takenAt: string,
  listed: { projects: Project[]; namespaces: NamespaceObject[]; quotas: ResourceQuotaObject[]; objects?: LiveObject[] },
): SnapshotDocument {
  const namespaces = listed.namespaces
    .filter((n) => n.metadata?.labels?.[LABEL_PROJECT])
    .map((n) => trim(n, ['apiVersion', 'kind', 'status']));
  const names = new Set(namespaces.map((n) => n.metadata.name));
  return {
    apiVersion: SNAPSHOT_API_VERSION,
    kind: SNAPSHOT_KIND,
    cluster,
    takenAt,
    projects: listed.projects.map((p) => trim(p, ['apiVersion', 'kind', 'spec'])).sort(byName),
    namespaces: namespaces.sort(byName),
    resourceQuotas: listed.quotas
      .filter((q) => names.has(q.metadata?.namespace))
      .map((q) => trim(q, ['apiVersion', 'kind', 'spec', 'status']))
      .sort(byName),
    ...(listed.objects
      ? {
          objects: listed.objects
            .filter((o) => names.has(o.metadata?.namespace))
            .map((o) => trim(o as LiveObject & { metadata: Record<string, unknown> }, ['apiVersion', 'kind', 'spec']))
            .sort(byKindAndName),
        }
      : {}),
  };
}

const byKindAndName = (a: LiveObject, b: LiveObject) =>
  `${a.apiVersion ?? ''}/${a.kind ?? ''}`.localeCompare(`${b.apiVersion ?? ''}/${b.kind ?? ''}`) ||
  byName({ metadata: a.metadata ?? {} }, { metadata: b.metadata ?? {} });

export function liveStateOf(doc: SnapshotDocument, source?: string): LiveState {
  return {
    cluster: doc.cluster,
    takenAt: doc.takenAt,
    ...(source ? { source } : {}),
    projects: doc.projects,
    namespaces: doc.namespaces,
    quotas: doc.resourceQuotas,
    ...(doc.objects ? { objects: doc.objects } : {}),
  };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Reads a snapshot file (YAML or JSON); any other content is an error naming the file, the field and what is allowed.
 */
export function parseSnapshot(text: string, file: string): SnapshotDocument {
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (err) {
    throw new SnapshotFileError(`${file}: not YAML or JSON: ${(err as Error).message.split('\n')[0]}`);
  }
  if (!isObject(doc))
    throw new SnapshotFileError(
      `${file}: a snapshot is a mapping with kind ${SNAPSHOT_KIND} (tenantgate snapshot writes it)`,
    );
  if (doc.kind !== SNAPSHOT_KIND || doc.apiVersion !== SNAPSHOT_API_VERSION) {
    throw new SnapshotFileError(
      `${file}: apiVersion/kind is ${JSON.stringify(doc.apiVersion ?? null)}/${JSON.stringify(doc.kind ?? null)}` +
        `; allowed: ${SNAPSHOT_API_VERSION}/${SNAPSHOT_KIND}`,
    );
  }
  if (typeof doc.cluster !== 'string')
    throw new SnapshotFileError(
      `${file}: cluster is ${JSON.stringify(doc.cluster ?? null)}; allowed: a string (the cluster's name)`,
    );
  if (typeof doc.takenAt !== 'string' || Number.isNaN(Date.parse(doc.takenAt)))
    throw new SnapshotFileError(
      `${file}: takenAt is ${JSON.stringify(doc.takenAt ?? null)}; allowed: an RFC 3339 time`,
    );
  for (const field of ['projects', 'namespaces', 'resourceQuotas'] as const) {
    const list = doc[field];
    if (!Array.isArray(list))
      throw new SnapshotFileError(`${file}: ${field} is ${JSON.stringify(list ?? null)}; allowed: a list`);
    list.forEach((o, i) => {
      if (!isObject(o) || !isObject(o.metadata) || typeof o.metadata.name !== 'string')
        throw new SnapshotFileError(
          `${file}: ${field}[${i}] has no metadata.name; allowed: Kubernetes objects as tenantgate snapshot ` +
            `writes them`,
        );
      if (field === 'projects' && (!isObject(o.spec) || typeof o.spec.tenant !== 'string'))
        throw new SnapshotFileError(`${file}: projects[${i}] (${o.metadata.name}) has no spec.tenant`);
      if (field === 'resourceQuotas' && typeof o.metadata.namespace !== 'string')
        throw new SnapshotFileError(`${file}: resourceQuotas[${i}] (${o.metadata.name}) has no metadata.namespace`);
    });
  }
  if (doc.objects !== undefined) {
    if (!Array.isArray(doc.objects))
      throw new SnapshotFileError(
        `${file}: objects is ${JSON.stringify(doc.objects)}; allowed: a list (or no objects key)`,
      );
    doc.objects.forEach((o, i) => {
      if (
        !isObject(o) ||
        typeof o.apiVersion !== 'string' ||
        typeof o.kind !== 'string' ||
        !isObject(o.metadata) ||
        typeof o.metadata.name !== 'string' ||
        typeof o.metadata.namespace !== 'string'
      ) {
        throw new SnapshotFileError(
          `${file}: objects[${i}] has no apiVersion, kind, metadata.name or metadata.namespace; allowed: ` +
            `Kubernetes objects as tenantgate snapshot writes them`,
        );
      }
    });
  }
  return doc as unknown as SnapshotDocument;
}
