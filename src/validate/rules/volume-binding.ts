/**
 * X10 on the PersistentVolume side of a binding (docs/rules.md#x10): a write that sets a new
 * `spec.claimRef` (the persistent-volume binder's first step, or an administrator pre-binding a volume)
 * binds the volume to a claim, so the claim's namespace must be of the volume's project. The volume's
 * project is its `tenantgate.io/project` label, and the project of the namespace its previous claimRef
 * named (a Released volume keeps it). An unlabelled volume without a previous claimRef is of no project:
 * it may be bound anywhere (ownership then follows the claimRef). Pure: the caller maps namespaces to
 * projects from its cache.
 */
import { LABEL_PROJECT, type Violation } from '../types.js';

type Json = Record<string, unknown>;

/** Which project a namespace belongs to, as the caller's cache knows it; `known: false`: not seen yet. */
export type NamespaceProject = { known: false } | { known: true; project: string | undefined };

interface ClaimRef {
  namespace: string;
  name: string;
  uid: string;
}

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const text = (v: unknown): string => (typeof v === 'string' ? v : '');

function claimRefOf(volume: Json | undefined): ClaimRef | undefined {
  const spec = volume?.spec;
  const ref = isObject(spec) ? spec.claimRef : undefined;
  if (!isObject(ref)) return undefined;
  return { namespace: text(ref.namespace), name: text(ref.name), uid: text(ref.uid) };
}

function projectLabelOf(volume: Json): string | undefined {
  const metadata = volume.metadata;
  const labels = isObject(metadata) ? metadata.labels : undefined;
  const project = isObject(labels) ? labels[LABEL_PROJECT] : undefined;
  return typeof project === 'string' && project !== '' ? project : undefined;
}

const sameRef = (a: ClaimRef, b: ClaimRef): boolean =>
  a.namespace === b.namespace && a.name === b.name && a.uid === b.uid;

/** The claimRef a write sets anew: on CREATE any, on UPDATE one whose namespace, name or uid differs. */
export function newClaimRef(operation: string, volume: Json | undefined, old: Json | undefined): ClaimRef | undefined {
  if (operation !== 'CREATE' && operation !== 'UPDATE') return undefined;
  const ref = claimRefOf(volume);
  if (!ref || ref.namespace === '') return undefined;
  const before = operation === 'UPDATE' ? claimRefOf(old) : undefined;
  return before && sameRef(before, ref) ? undefined : ref;
}

/** A project the volume belongs to, and what says so. */
interface Owner {
  project: string;
  by: string;
}

function refusal(volume: string, what: string, owner: Owner | undefined, allowed: string): Violation {
  const forProject = owner ? ` for project ${owner.project} (${owner.by})` : '';
  const message = `PersistentVolume ${volume}: ${what} is not allowed${forProject}; allowed: ${allowed}`;
  return { rule: 'X10', path: ['spec', 'claimRef'], message };
}

const allowedFor = (owner: Owner): string => `claims in the namespaces of project ${owner.project}`;

/**
 * X10: the violations of a PersistentVolume write that binds it to a claim of another project. Nothing
 * when the write sets no new claimRef. A namespace the cache has not seen fails closed: the binder (or
 * the apiserver's caller) retries, and passes once the cache has it.
 */
export function checkVolumeClaimRef(
  operation: string,
  volume: Json | undefined,
  old: Json | undefined,
  projectOf: (namespace: string) => NamespaceProject,
): Violation[] {
  const ref = volume ? newClaimRef(operation, volume, old) : undefined;
  if (!volume || !ref) return [];
  const name = text(isObject(volume.metadata) ? volume.metadata.name : undefined);
  const claim = `claimRef ${ref.namespace}/${ref.name}`;
  const owners: Owner[] = [];
  const labelled = projectLabelOf(volume);
  if (labelled) owners.push({ project: labelled, by: `label ${LABEL_PROJECT}=${labelled}` });
  const previous = operation === 'UPDATE' ? claimRefOf(old) : undefined;
  if (previous && previous.namespace !== '' && previous.namespace !== ref.namespace) {
    const was = projectOf(previous.namespace);
    const by = `its previous claimRef ${previous.namespace}/${previous.name}`;
    if (!was.known) {
      const what = `${claim} (whose volume it is is unknown: the namespace of ${by} is not in the webhook's cache)`;
      const allowed =
        `claims in the namespaces of ${previous.namespace}'s project; ` +
        "a volume whose claim's namespace is gone is released by removing its claimRef first";
      return [refusal(name, what, undefined, allowed)];
    }
    if (was.project) owners.push({ project: was.project, by });
  }
  if (owners.length === 0) return [];
  const target = projectOf(ref.namespace);
  if (!target.known) {
    const what =
      `${claim} (namespace ${ref.namespace} is not known to the webhook yet, so neither is its project; ` +
      'a retry passes once it is)';
    return [refusal(name, what, owners[0], allowedFor(owners[0]!))];
  }
  const whose = target.project ? `a claim of project ${target.project}` : 'a namespace of no project';
  return owners
    .filter((owner) => owner.project !== target.project)
    .map((owner) => refusal(name, `${claim} (${whose})`, owner, allowedFor(owner)));
}

/**
 * X10 on a claim's new `spec.volumeName` while the webhook's cache has not seen its namespace (or the
 * project that namespace names): whose claim it is is unknown, so it is refused; a retry passes once the
 * cache has it (the persistent-volume binder retries by itself).
 */
export function volumeNameNotKnownYet(namespace: string, name: string, volume: string, unknown: string): Violation {
  const what =
    `volumeName ${JSON.stringify(volume)} (${unknown} is not known to the webhook yet, ` +
    'so neither is whose claim this is)';
  const allowed = 'the same write in a few seconds, once it is';
  const message = `PersistentVolumeClaim ${namespace}/${name}: ${what} is not allowed yet; allowed: ${allowed}`;
  return { rule: 'X10', path: ['spec', 'volumeName'], message };
}
