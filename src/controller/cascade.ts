/**
 * CR2: cascading deletion of a Project's namespaces, modelled on Kubernetes' namespace deleter: small
 * named steps ending in a typed result; progress is tracked on the informer cache, and the final
 * "nothing remains" is confirmed on a fresh (uncached) list. "Resources remaining" is not an
 * error: the caller reports it in the status and requeues the Project with a growing delay. Only
 * when nothing owned remains is the finalizer removed.
 *
 * Which owned namespaces a pass may delete is the caller's (ADR 0096: those holding data wait for a
 * confirmation); the others are reported as remaining, so the finalizer stays.
 *
 * Ownership: a namespace is the Project's when its project label AND its project-uid annotation
 * match the Project. A labelled namespace with another or no project-uid is never deleted; it is
 * reported, and it does not hold the finalizer (the Project would otherwise never go away: nobody
 * but an admin could fix such a namespace, and it is not the Project's to delete).
 */
import pLimit from 'p-limit';
import { ANNOTATION_PROJECT_UID, LABEL_PROJECT, type NamespaceObject, type Project } from '../validate/types.js';
import { byMetadataName } from '../order.js';
import { describeError } from '../kube/errors.js';
import type { ControllerApi } from './kube.js';
import { CONTROLLER_DEFAULTS } from './options.js';
import { deletionConditions, type CascadeReport } from './status.js';

export type CascadeResult =
  /** Nothing owned remains: the finalizer may go. */
  | { kind: 'Finished'; report: CascadeReport }
  /** Owned namespaces still exist (being deleted by the namespace controller). */
  | { kind: 'ResourcesRemaining'; report: CascadeReport };

export interface Classified {
  owned: NamespaceObject[];
  foreign: CascadeReport['foreign'];
}

/** Step 1 (pure): which labelled namespaces the Project owns, and why the others are not its to delete. */
export function classifyNamespaces(project: Project, labelled: NamespaceObject[]): Classified {
  const uid = project.metadata.uid;
  const owned: NamespaceObject[] = [];
  const foreign: CascadeReport['foreign'] = [];
  for (const ns of [...labelled].sort(byMetadataName)) {
    if (ns.metadata.labels?.[LABEL_PROJECT] !== project.metadata.name) continue;
    const annotation = ns.metadata.annotations?.[ANNOTATION_PROJECT_UID];
    if (uid && annotation === uid) owned.push(ns);
    else if (annotation === undefined)
      foreign.push({ name: ns.metadata.name ?? '', reason: `no ${ANNOTATION_PROJECT_UID} annotation` });
    else
      foreign.push({
        name: ns.metadata.name ?? '',
        reason: `${ANNOTATION_PROJECT_UID} is ${annotation}, not ${uid ?? 'known'}`,
      });
  }
  return { owned, foreign };
}

/** Step 3 (pure): the report of what remains. */
export function remainingReport(owned: NamespaceObject[], foreign: CascadeReport['foreign']): CascadeReport {
  return {
    remaining: owned.map((ns) => ({
      name: ns.metadata.name ?? '',
      ...(ns.status?.phase ? { phase: ns.status.phase } : {}),
      deleting: Boolean(ns.metadata.deletionTimestamp),
      conditions: deletionConditions(ns),
    })),
    foreign,
  };
}

export interface CascadeOptions {
  /** Deletes issued at once. */
  concurrency?: number;
  log?: (message: string) => void;
}

/**
 * How long a delete request is remembered (the cache shows its deletionTimestamp well before). A timeout
 * of the process, not a decision: it reads the system clock, not the reconcile's (reconcile.ts).
 */
const REQUEST_MEMORY_MS = 30_000;

export class ProjectDeleter {
  /** Namespace uid → when its delete was sent. */
  private readonly requested = new Map<string, number>();

  constructor(
    private readonly api: ControllerApi,
    private readonly options: CascadeOptions = {},
  ) {}

  /**
   * Runs the steps once over `cached` (the informer's view of the namespaces labelled for the
   * Project). While the cache shows owned namespaces, that is enough to delete them and report
   * progress; the verdict "nothing remains" is confirmed on a live list before the finalizer may go.
   * Throws on API errors (the queue retries with backoff).
   */
  async run(
    project: Project,
    cached: NamespaceObject[],
    signal?: AbortSignal,
    mayDelete: (namespace: string) => boolean = () => true,
  ): Promise<CascadeResult> {
    const fromCache = await this.pass(project, cached, signal, mayDelete);
    if (fromCache.kind === 'ResourcesRemaining') return fromCache;
    return this.pass(project, await this.listLabelledNamespaces(project), signal, mayDelete);
  }

  /** `mayDelete`: the owned namespaces this pass may delete (ADR 0096: the others wait, and remain). */
  private async pass(
    project: Project,
    labelled: NamespaceObject[],
    signal: AbortSignal | undefined,
    mayDelete: (namespace: string) => boolean,
  ): Promise<CascadeResult> {
    const { owned, foreign } = classifyNamespaces(project, labelled);
    const deleted = await this.deleteOwnedNamespaces(
      owned.filter((ns) => ns.metadata.deletionTimestamp || mayDelete(ns.metadata.name ?? '')),
      signal,
    );
    const gone = new Set(deleted.gone);
    const stillThere = owned.filter((ns) => !gone.has(ns.metadata.name ?? ''));
    const report = remainingReport(stillThere, foreign);
    return report.remaining.length === 0 ? { kind: 'Finished', report } : { kind: 'ResourcesRemaining', report };
  }

  /** A live list, not the cache: the decision to remove the finalizer must not rest on a stale view. */
  private listLabelledNamespaces(project: Project): Promise<NamespaceObject[]> {
    return this.api.namespacesLabelled(`${LABEL_PROJECT}=${project.metadata.name ?? ''}`);
  }

  /**
   * Step 2: delete (propagationPolicy Background, precondition on the uid) every owned namespace
   * not already being deleted. Returns the names of those found gone.
   */
  private async deleteOwnedNamespaces(owned: NamespaceObject[], signal?: AbortSignal): Promise<{ gone: string[] }> {
    const now = Date.now();
    for (const [uid, at] of this.requested) if (now - at > REQUEST_MEMORY_MS) this.requested.delete(uid);
    // A delete sent moments ago may not show in the cache yet: do not send it again.
    const toDelete = owned.filter(
      (ns) => !ns.metadata.deletionTimestamp && !(ns.metadata.uid && this.requested.has(ns.metadata.uid)),
    );
    const gone = new Set<string>();
    const errors: string[] = [];
    const limit = pLimit(Math.max(1, this.options.concurrency ?? CONTROLLER_DEFAULTS.deleteConcurrency));
    const deleteOne = async (ns: NamespaceObject) => {
      const name = ns.metadata.name ?? '';
      if (signal?.aborted) return; // the leader changed: the new one carries on
      try {
        const outcome = await this.api.deleteNamespace(name, ns.metadata.uid);
        if (ns.metadata.uid) this.requested.set(ns.metadata.uid, Date.now());
        if (outcome === 'gone') gone.add(name);
        if (outcome === 'deleted') this.options.log?.(`deleting namespace ${name}`);
        // 'conflict': the uid changed (deleted and re-created meanwhile); the next pass lists it again.
      } catch (err) {
        errors.push(`${name}: ${describeError(err)}`);
      }
    };
    await Promise.all(toDelete.map((ns) => limit(() => deleteOne(ns))));
    signal?.throwIfAborted();
    if (errors.length > 0) throw new Error(`deleting namespaces failed: ${errors.join('; ')}`);
    return { gone: [...gone] };
  }
}
