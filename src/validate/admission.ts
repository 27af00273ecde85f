/**
 * Admission review dispatch: which rules (src/validate/rules/) judge a Namespace, ResourceQuota or
 * Project request, with what they need looked up in the snapshot. The rules themselves live in
 * rules/; this file decides who is asking, which project an object belongs to and which rules apply.
 * Pure: the snapshot is fed from informer caches by the webhook; nothing here does I/O.
 */
import type { PersistentVolumeLike } from './allow-lists.js';
import { isPrivileged, isSystemController, projectPrefix, type TenantgateConfig } from '../config/config.js';
import { podSecurityLabels } from './pod-security.js';
import { byMetadataName } from '../order.js';
import { validateDeclarations } from './offline.js';
import { checkProjectCost } from './rules/cost.js';
import { checkBudgetFit, grows } from './budget/check.js';
import { checkEndedBursts } from './rules/bursts.js';
import { budgetIn, budgetOf, budgetPathIn, defaultsOf } from './budget/layers.js';
import { clusterShares, namespaceShare, othersTotal, otherShares, type PendingAllocations } from './shares.js';
import {
  effectiveQuota,
  effectiveQuotaAfter,
  namespaceIsTerminating,
  withOverlay,
  observedEffectiveQuota,
  namespaceAllocation,
  type QuotaChange,
} from './quota-hold.js';
import type { FieldPath, NamespaceShare, Resources } from './types.js';
import { OTHER_TIERS, otherTiersExcluded, quotaTier } from './tiers.js';
import {
  checkDeclaredNamespacesFree,
  checkNamespaceName,
  checkPrefixOverlap,
  checkReservedName,
  projectByGenerateName,
  projectByPrefix,
} from './rules/naming.js';
import {
  checkNoTenantLabelOutsideProjects,
  checkProjectLabels,
  checkTenancyLabelsUnchanged,
  unknownProject,
} from './rules/namespace-labels.js';
import {
  checkBudget,
  checkCoverage,
  checkMaxNamespaces,
  checkNewNamespaceCoverage,
  checkOtherTiersScope,
  checkSoleCoverage,
  headroomWarnings,
  type BudgetScope,
} from './rules/quota.js';
import {
  checkNamespaceSpecFinalizers,
  checkProtectedMetadata,
  checkProtectedObjectMetadata,
  onlyDropsFinalizersOrOwners,
} from './rules/metadata.js';
import { onlyChangesDeletionConfirmation } from './rules/deletion-confirmation.js';
import {
  checkNamespaceOutsideProjects,
  checkProjectNotDeleting,
  checkProjectWrite,
  checkSubresourceWrite,
  isOwner,
  outsideProjects,
  ownerOnly,
  ownerOnlyUndisclosed,
  describeUser,
  type OwnProject,
  type UserInfo,
} from './rules/tenancy.js';
import {
  ANNOTATION_PROJECT_UID,
  LABEL_PROJECT,
  LABEL_TENANT,
  type NamespaceObject,
  type Project,
  type ResourceQuotaObject,
  type Snapshot,
  type Violation,
} from './types.js';

export type Operation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

export interface ReviewContext {
  config: TenantgateConfig;
  snapshot: Snapshot;
  user: UserInfo;
  /**
   * The instant (ms since the epoch) the request is decided at: which bursts are active (the budget)
   * and which have ended (B2). The webhook reads its process clock once per request; nothing here does.
   */
  at: number;
  /** Q5: what was admitted but is not in the snapshot yet (counts as max(observed, pending)). */
  pending?: PendingAllocations;
  /**
   * X10: the PersistentVolumes the request's claim newly names in `spec.volumeName`, as the webhook read
   * them just before deciding (null: none of that name). A name missing here was not readable.
   */
  persistentVolumes?: ReadonlyMap<string, PersistentVolumeLike | null>;
}

interface Allocation {
  project: string;
  namespace: string;
  resources: Resources;
  /** Whether this change makes the namespace's share grow for some resource (Q5 reserves only then). */
  grows: boolean;
  /**
   * A ResourceQuota write (the new object, or null for a deletion) that later decisions of the project
   * must see before the cache does: it grows the share, or takes a budgeted resource out of this quota
   * (another namespace's Q2/Q3 may rely on it). Q5 records it with the reservation.
   */
  quotaWrite?: { name: string; quota: ResourceQuotaObject | null; removesCoverage: boolean };
}

export interface Verdict {
  violations: Violation[];
  warnings: string[];
  /** The allocation a Namespace/ResourceQuota change leaves its namespace with, when it is a project's. */
  allocation?: Allocation;
}

const ALLOW: Verdict = Object.freeze({ violations: [], warnings: [] }) as Verdict;

/** T6's verdict on a non-privileged subject's `action` (e.g. "delete namespace ml-x") in a namespace of no project. */
function outsideProjectsVerdict(ctx: ReviewContext, namespace: string, action: string): Verdict {
  return { violations: [outsideProjects(ctx.config, ctx.user, `Namespace ${namespace}`, action)], warnings: [] };
}

/** The verb a finding names for an operation ("create ResourceQuota ml-x/q"). */
function verbOf(operation: Operation): 'create' | 'update' | 'delete' {
  return operation === 'CREATE' ? 'create' : operation === 'UPDATE' ? 'update' : 'delete';
}

/**
 * Whether the request is a system controller's update that only drops finalizers or owner references
 * (the garbage collector finishing a cascade): admitted whoever owns the object.
 */
function controllerOnlyDropsFinalizersOrOwners(
  ctx: ReviewContext,
  operation: Operation,
  object: Parameters<typeof onlyDropsFinalizersOrOwners>[0] | undefined,
  oldObject: Parameters<typeof onlyDropsFinalizersOrOwners>[1] | undefined,
): boolean {
  return (
    operation === 'UPDATE' &&
    !!object &&
    !!oldObject &&
    isSystemController(ctx.config, ctx.user) &&
    onlyDropsFinalizersOrOwners(object, oldObject)
  );
}

/**
 * Under `visibility: own` (docs/visibility.md), a non-owner's only finding on another project's
 * namespace or quota is T4 without the project's tenant and owners; no other rule runs, since their
 * messages describe that project (its labels, its namespaces, its budget and allocations). With `all`,
 * undefined: the full findings as before.
 */
function undisclosedToNonOwner(ctx: ReviewContext, project: Project, action: string): Verdict | undefined {
  if (ctx.config.visibility !== 'own' || isOwner(project, ctx.user)) return undefined;
  return { violations: [ownerOnlyUndisclosed(ctx.user, action, ownedProjects(ctx))], warnings: [] };
}

/** The projects the caller owns, by name, with the prefix of their namespaces. */
function ownedProjects(ctx: ReviewContext): OwnProject[] {
  return [...ctx.snapshot.projects()]
    .filter((p) => isOwner(p, ctx.user))
    .sort(byMetadataName)
    .map((p) => ({ name: p.metadata.name ?? '', prefix: projectPrefix(ctx.config, p.metadata.name ?? '') }));
}

function scopeOf(ctx: ReviewContext, project: Project): BudgetScope {
  const cluster = ctx.config.clusterName;
  return {
    project: project.metadata.name ?? '',
    cluster,
    at: ctx.at,
    budget: budgetIn(ctx.snapshot, project, cluster, ctx.at),
    budgetPath: budgetPathIn(ctx.snapshot, project, cluster),
  };
}

/**
 * The project a namespace (by name and labels) belongs to: its label, else the project whose prefix it
 * carries. Without a name yet (a CREATE with `generateName`, as the mutating webhook sees it), the
 * project whose prefix the generateName starts with.
 */
export function projectOfNamespace(
  ctx: Pick<ReviewContext, 'config' | 'snapshot'>,
  name: string,
  labels: Record<string, string> | undefined,
  generateName?: string,
): { project?: Project; claimed?: string } {
  const claimed = labels?.[LABEL_PROJECT];
  if (claimed) {
    const project = ctx.snapshot.project(claimed);
    return project ? { project, claimed } : { claimed };
  }
  const project =
    name === '' && generateName
      ? projectByGenerateName(ctx.config, ctx.snapshot.projects(), generateName)
      : projectByPrefix(ctx.config, ctx.snapshot.projects(), name);
  return project ? { project } : {};
}

/**
 * A namespace as a message names it: `payments-x7k2q (generateName "payments-")` when the apiserver made up the name.
 */
function shownName(ns: NamespaceObject): string {
  const { name, generateName } = ns.metadata;
  return generateName ? `${name ?? ''} (generateName ${JSON.stringify(generateName)})`.trimStart() : (name ?? '');
}

/**
 * The namespace's share before and after a change, and what the project's other namespaces hold
 * together (a change touches one namespace only).
 */
function othersAndSelf(
  ctx: ReviewContext,
  project: Project,
  namespace: string,
  change?: QuotaChange,
): { self: NamespaceShare; before: NamespaceShare; others: Resources; othersOneByOne: () => Resources[] } {
  const cluster = ctx.config.clusterName;
  const pending = ctx.pending ? { pending: ctx.pending } : {};
  const before = namespaceShare(ctx.snapshot, project, cluster, ctx.at, namespace, pending);
  const self = change
    ? namespaceShare(ctx.snapshot, project, cluster, ctx.at, namespace, { change, ...pending })
    : before;
  // Asked only to price a project whose budget names two spellings of one quantity (C1).
  const othersOneByOne = () =>
    otherShares(ctx.snapshot, project, cluster, ctx.at, namespace, ctx.pending).map((share) => share.resources);
  return {
    self,
    before,
    others: othersTotal(ctx.snapshot, project, cluster, ctx.at, namespace, ctx.pending),
    othersOneByOne,
  };
}

// ---------------------------------------------------------------------------------------------
// Namespaces
// ---------------------------------------------------------------------------------------------

export function reviewNamespace(
  ctx: ReviewContext,
  operation: Operation,
  object: NamespaceObject | undefined,
  oldObject: NamespaceObject | undefined,
): Verdict {
  switch (operation) {
    case 'CREATE':
      return object ? namespaceCreate(ctx, object) : ALLOW;
    case 'UPDATE':
      return object && oldObject ? namespaceUpdate(ctx, object, oldObject) : ALLOW;
    case 'DELETE':
      return oldObject ? namespaceDelete(ctx, oldObject) : ALLOW;
    default:
      return ALLOW;
  }
}

function namespaceCreate(ctx: ReviewContext, ns: NamespaceObject): Verdict {
  const name = ns.metadata.name ?? '';
  const privileged = isPrivileged(ctx.config, ctx.user);
  const labels = ns.metadata.labels ?? {};
  const { project, claimed } = projectOfNamespace(ctx, name, labels);
  const violations: Violation[] = [];
  if (claimed && !project) {
    return { violations: [unknownProject(name, claimed)], warnings: [] };
  }
  if (!project) {
    if (privileged) return ALLOW;
    violations.push(...checkReservedName(ctx.config, name));
    violations.push(...checkNoTenantLabelOutsideProjects(ctx.user, shownName(ns), labels));
    if (ctx.config.requireProjectForUsers) {
      const own = [...ctx.snapshot.projects()]
        .filter((p) => isOwner(p, ctx.user))
        .map((p) => projectPrefix(ctx.config, p.metadata.name ?? ''));
      violations.push(checkNamespaceOutsideProjects(ctx.user, shownName(ns), own));
    }
    return { violations, warnings: [] };
  }
  if (!privileged) {
    const undisclosed = undisclosedToNonOwner(ctx, project, `create namespace ${shownName(ns)}`);
    if (undisclosed) return undisclosed;
  }
  const projectName = project.metadata.name ?? '';
  violations.push(...checkNamespaceName(ctx.config, projectName, name));
  // Unlabelled and claimed only by its prefix: the mutating webhook labels it for owners and
  // privileged subjects; for anyone else T4 says what is wrong, missing labels would be noise.
  if (claimed || privileged || isOwner(project, ctx.user))
    violations.push(...checkProjectLabels(project, name, labels));
  if (!privileged) {
    // With generateName the caller chose a prefix, not a name: T4 also says which prefixes are its.
    violations.push(
      ...ownerOnly(
        project,
        ctx.user,
        `create namespace ${shownName(ns)}`,
        ns.metadata.generateName ? () => ownedProjects(ctx) : undefined,
      ),
    );
    violations.push(
      ...checkNamespaceSpecFinalizers(
        `Namespace ${name} (project ${projectName}, tenant ${project.spec.tenant})`,
        describeUser(ctx.user),
        ns.spec?.finalizers,
      ),
    );
    violations.push(
      ...checkProtectedMetadata({
        config: ctx.config,
        subject: `Namespace ${name} (project ${projectName}, tenant ${project.spec.tenant})`,
        who: describeUser(ctx.user),
        before: {},
        after: ns.metadata,
        // The mutating webhook sets the project-uid annotation to the Project's UID and the Pod Security
        // labels to the project's levels; those values are ours.
        expectedAnnotations: project.metadata.uid ? { [ANNOTATION_PROJECT_UID]: project.metadata.uid } : {},
        expectedLabels: podSecurityLabels(ctx.config.podSecurity, project),
      }),
    );
  }
  violations.push(...checkProjectNotDeleting(project, name));
  if (typeof project.spec.maxNamespaces === 'number')
    violations.push(...checkMaxNamespaces(project, name, otherNamespaceCount(ctx, projectName, name)));
  const scope = scopeOf(ctx, project);
  if (!privileged) violations.push(...checkNewNamespaceCoverage(scope, project, name));
  const { self, before, others, othersOneByOne } = othersAndSelf(ctx, project, name);
  const share: NamespaceShare = {
    namespace: name,
    resources: namespaceAllocation(new Map(), scope.budget, defaultsOf(project)),
    defaulted: true,
  };
  violations.push(
    ...checkBudgetFit({
      scope,
      project,
      pricing: ctx.config.pricing,
      subject: `Namespace ${name}`,
      share,
      others,
      otherShares: othersOneByOne,
      defaulted: true,
    }),
  );
  return withHeadroomWarnings(ctx, scope, others, violations, {
    project: projectName,
    namespace: name,
    resources: share.resources,
    grows: grows(before.resources, self.resources) || !ctx.snapshot.namespace(name),
  });
}

/**
 * How many namespaces the project has besides `name`, counting those admitted a moment ago that the cache does not show
 * yet (Q5 keeps them pending).
 */
function otherNamespaceCount(ctx: ReviewContext, projectName: string, name: string): number {
  const namespaces = new Set<string>();
  for (const n of ctx.snapshot.namespacesOfProject(projectName)) namespaces.add(n.metadata.name ?? '');
  for (const n of ctx.pending?.namespaces(projectName) ?? []) namespaces.add(n);
  namespaces.delete(name);
  return namespaces.size;
}

function namespaceUpdate(ctx: ReviewContext, ns: NamespaceObject, old: NamespaceObject): Verdict {
  if (isSystemController(ctx.config, ctx.user) && onlyDropsFinalizersOrOwners(ns, old)) return ALLOW;
  if (!isPrivileged(ctx.config, ctx.user)) return namespaceUpdateByTenant(ctx, ns, old);
  const name = ns.metadata.name ?? '';
  const before = old.metadata.labels ?? {};
  const after = ns.metadata.labels ?? {};
  if (before[LABEL_PROJECT] === after[LABEL_PROJECT] && before[LABEL_TENANT] === after[LABEL_TENANT]) return ALLOW;
  const claimed = after[LABEL_PROJECT];
  if (!claimed) return ALLOW; // a privileged subject releases the namespace from its project
  const project = ctx.snapshot.project(claimed);
  if (!project) return { violations: [unknownProject(name, claimed)], warnings: [] };
  return {
    violations: [...checkNamespaceName(ctx.config, claimed, name), ...checkProjectLabels(project, name, after)],
    warnings: [],
  };
}

/**
 * The project a non-privileged subject acts on when it changes or deletes an existing namespace: the
 * one named by the namespace's own label. A name prefix alone never makes a namespace a project's
 * (an administrator may have made it before the project existed).
 */
function labelledProject(ctx: ReviewContext, ns: NamespaceObject): Project | undefined {
  const claimed = ns.metadata.labels?.[LABEL_PROJECT];
  return claimed ? ctx.snapshot.project(claimed) : undefined;
}

function namespaceUpdateByTenant(ctx: ReviewContext, ns: NamespaceObject, old: NamespaceObject): Verdict {
  const name = ns.metadata.name ?? '';
  const project = labelledProject(ctx, old);
  if (!project) return outsideProjectsVerdict(ctx, name, `update namespace ${name}`);
  const undisclosed = undisclosedToNonOwner(ctx, project, `update namespace ${name}`);
  if (undisclosed) return undisclosed;
  const violations: Violation[] = [...ownerOnly(project, ctx.user, `update namespace ${name}`)];
  const before = old.metadata.labels ?? {};
  const after = ns.metadata.labels ?? {};
  violations.push(...checkTenancyLabelsUnchanged(ctx.user, name, before, after));
  violations.push(
    ...checkProtectedMetadata({
      config: ctx.config,
      subject: `Namespace ${name} (project ${project.metadata.name}, tenant ${project.spec.tenant})`,
      who: describeUser(ctx.user),
      before: old.metadata,
      after: ns.metadata,
    }),
  );
  return { violations, warnings: [] };
}

function namespaceDelete(ctx: ReviewContext, old: NamespaceObject): Verdict {
  // The namespace controller removes a finalised namespace; the garbage collector deletes one whose
  // owner went (only privileged subjects may set owner references on namespaces, T7).
  if (isPrivileged(ctx.config, ctx.user) || isSystemController(ctx.config, ctx.user)) return ALLOW;
  const name = old.metadata.name ?? '';
  const project = labelledProject(ctx, old);
  if (!project) return outsideProjectsVerdict(ctx, name, `delete namespace ${name}`);
  return (
    undisclosedToNonOwner(ctx, project, `delete namespace ${name}`) ?? {
      violations: ownerOnly(project, ctx.user, `delete namespace ${name}`),
      warnings: [],
    }
  );
}

// ---------------------------------------------------------------------------------------------
// ResourceQuotas
// ---------------------------------------------------------------------------------------------

/**
 * The project of the namespace a quota (or another object T7 guards, protected-objects.ts) lives in: by
 * the namespace's label. Only while the namespace is not in the cache yet (created a moment ago) does
 * its name prefix stand in for the label the mutating webhook has given it.
 */
export function quotaProject(ctx: ReviewContext, namespace: string): Project | undefined {
  const nsObject = ctx.snapshot.namespace(namespace);
  if (nsObject) return labelledProject(ctx, nsObject);
  return projectOfNamespace(ctx, namespace, undefined).project;
}

/**
 * `Kind namespace/name (project P, tenant T)`; the project is named only to those who may see it
 * (`visibility: own` hides it from non-owners, docs/visibility.md).
 */
export function describeNamespacedObject(
  ctx: ReviewContext,
  kind: string,
  namespace: string,
  name: string,
  project: Project,
): string {
  const visible = ctx.config.visibility !== 'own' || isOwner(project, ctx.user);
  return (
    `${kind} ${namespace}/${name}` +
    `${visible ? ` (project ${project.metadata.name ?? ''}, tenant ${project.spec.tenant})` : ''}`
  );
}

export function reviewResourceQuota(
  ctx: ReviewContext,
  operation: Operation,
  namespace: string,
  object: ResourceQuotaObject | undefined,
  oldObject: ResourceQuotaObject | undefined,
): Verdict {
  if (operation === 'CONNECT') return ALLOW;
  const privileged = isPrivileged(ctx.config, ctx.user);
  // Kubernetes' controllers finish what an authorised subject started: the namespace controller empties
  // a terminating namespace, the garbage collector removes dependents. They delete; they never write quotas.
  const controller = operation === 'DELETE' && isSystemController(ctx.config, ctx.user);
  if (controllerOnlyDropsFinalizersOrOwners(ctx, operation, object, oldObject)) return ALLOW;
  if ((privileged || controller) && operation === 'DELETE' && terminatingOrGone(ctx, namespace)) return ALLOW;
  const project = quotaProject(ctx, namespace);
  const quotaName = (object ?? oldObject)?.metadata.name ?? '';
  const subject = `ResourceQuota ${namespace}/${quotaName}`;
  const verb = verbOf(operation);
  if (!project) {
    if (privileged || controller) return ALLOW;
    return outsideProjectsVerdict(ctx, namespace, `${verb} ${subject}`);
  }
  if (!privileged && !controller) {
    const undisclosed = undisclosedToNonOwner(ctx, project, `${verb} ${subject}`);
    if (undisclosed) return undisclosed;
  }
  const violations: Violation[] = [];
  if (!privileged && !controller) violations.push(...ownerOnly(project, ctx.user, `${verb} ${subject}`));
  // T7: any quota in a project namespace counts for its budget; its finalizers and owner references
  // decide whether a cascade (the project's, or another tenant's foreground deletion) can finish.
  if (!privileged && !controller && object) {
    violations.push(
      ...checkProtectedObjectMetadata({
        subject: describeNamespacedObject(ctx, 'ResourceQuota', namespace, quotaName, project),
        who: describeUser(ctx.user),
        before: oldObject?.metadata ?? {},
        after: object.metadata,
      }),
    );
  }
  const scope = scopeOf(ctx, project);
  if (scope.budget.size === 0) return { violations, warnings: [] };
  const overlay = ctx.pending?.quotaOverlay?.(namespace);
  // What the namespace's quotas cover now: the snapshot with the writes admitted but not seen yet. The
  // overlay counts a quota whose recorded write may not have landed (its create, or a delete) as absent:
  // the strict reading for what is covered after a change, not before it. The quota under review is
  // there as the apiserver stores it (its old object), whatever the overlay says: else a namespace whose
  // quotas all have such writes looks uncovered already, and Q3 lets its last quota go.
  const coveredBefore = () => {
    if (!overlay) return observedEffectiveQuota(ctx.snapshot, namespace);
    const quotas = withOverlay([...ctx.snapshot.quotasInNamespace(namespace)], overlay);
    return oldObject
      ? effectiveQuota([...quotas.filter((q) => q.metadata.name !== quotaName), oldObject], oldObject)
      : effectiveQuota(quotas);
  };
  const removesCoverage = [...scope.budget.keys()].some(
    (r) => oldObject !== undefined && coversKey(oldObject, r) && !(object && coversKey(object, r)),
  );

  if (operation === 'DELETE') {
    if (!oldObject) return { violations, warnings: [] };
    const change: QuotaChange = { namespace, name: quotaName, ...(overlay ? { overlay } : {}) };
    // Q3 binds tenants and Kubernetes' controllers; a privileged delete may take the only coverage away
    // (dismantling, or a quota stuck on a vanished owner) — unlike a privileged update (Q2 below). docs/rules.md Q2.
    if (!privileged)
      violations.push(
        ...checkSoleCoverage(
          scope,
          ctx.user,
          subject,
          namespace,
          coveredBefore(),
          effectiveQuotaAfter(ctx.snapshot, change),
        ),
      );
    // Q1: deleting the tighter of two quotas lets the namespace grow to the other one; Q4 as for every
    // admitted quota write: a delete that lets the namespace grow can leave the project in its last 10 %.
    return quotaShareVerdict(ctx, scope, project, subject, change, violations, {
      name: quotaName,
      quota: null,
      removesCoverage,
    });
  }
  if (!object) return { violations, warnings: [] };
  const proposed: QuotaChange = { namespace, name: quotaName, quota: object, ...(overlay ? { overlay } : {}) };
  const after = effectiveQuotaAfter(ctx.snapshot, proposed);
  const change: QuotaChange = { ...proposed, effective: after };
  if (quotaTier(object) !== undefined || (oldObject && quotaTier(oldObject) !== undefined)) {
    // Q2: tenants must leave the namespace fully covered; privileged subjects may add a partial
    // quota to a namespace that is not covered yet, but nobody may remove coverage that exists.
    const before = coveredBefore();
    const required = privileged ? new Map([...scope.budget].filter(([r]) => before.has(r))) : scope.budget;
    violations.push(...checkCoverage({ ...scope, budget: required }, subject, after, ['spec', 'hard']));
  }
  if (!privileged && quotaTier(object) === OTHER_TIERS)
    violations.push(...checkOtherTiersScope(scope, project, subject, otherTiersExcluded(object)));
  return quotaShareVerdict(
    ctx,
    scope,
    project,
    subject,
    change,
    violations,
    { name: quotaName, quota: object, removesCoverage },
    ['spec', 'hard'],
  );
}

/**
 * The verdict on a quota write or delete once its own rules have run (`violations`): Q1 and C1 (the others'
 * shares, pending reservations of every replica included, and the namespace's new share, priced), then Q4's
 * warnings when nothing is violated, and the allocation the change leaves its namespace with.
 */
function quotaShareVerdict(
  ctx: ReviewContext,
  scope: BudgetScope,
  project: Project,
  subject: string,
  change: QuotaChange,
  violations: Violation[],
  quotaWrite: NonNullable<Allocation['quotaWrite']>,
  path?: FieldPath,
): Verdict {
  const { namespace } = change;
  const { self, before, others, othersOneByOne } = othersAndSelf(ctx, project, namespace, change);
  const shareGrows = grows(before.resources, self.resources);
  // Only a growing share can overspend; a shrinking or unchanged one is always within what was admitted.
  if (shareGrows)
    violations.push(
      ...checkBudgetFit({
        scope,
        project,
        pricing: ctx.config.pricing,
        subject,
        share: self,
        before: before.resources,
        others,
        otherShares: othersOneByOne,
        ...(path ? { path } : {}),
        explainIn: ctx.snapshot,
      }),
    );
  return withHeadroomWarnings(ctx, scope, others, violations, {
    project: project.metadata.name ?? '',
    namespace,
    resources: self.resources,
    grows: shareGrows,
    quotaWrite,
  });
}

/**
 * A project namespace's verdict: the violations found, Q4's warnings when there are none (the project left in its
 * last 10 % by the allocation), and the allocation.
 */
function withHeadroomWarnings(
  ctx: ReviewContext,
  scope: BudgetScope,
  others: Resources,
  violations: Violation[],
  allocation: Allocation,
): Verdict {
  const warnings = violations.length
    ? []
    : headroomWarnings(scope, others, allocation.resources, ctx.config.headroomWarningThreshold);
  return { violations, warnings, allocation };
}

/**
 * Whether a quota's `spec.hard` counts for budget key `key`: an unscoped quota for a plain resource it
 * names, a tier quota (tiers.ts quotaTier) for `<resource>@<its tier>`. Allocates nothing for an unscoped quota.
 */
function coversKey(quota: ResourceQuotaObject, key: string): boolean {
  const tier = quotaTier(quota);
  if (tier === undefined) return false;
  const hard = quota.spec?.hard;
  if (!hard) return false;
  if (tier === '') return Object.hasOwn(hard, key);
  const at = key.length - tier.length - 1;
  return at > 0 && key.charCodeAt(at) === 64 /* '@' */ && key.endsWith(tier) && Object.hasOwn(hard, key.slice(0, at));
}

/** Whether a namespace is terminating (or already gone from the cache): nothing can be created in it any more. */
function terminatingOrGone(ctx: ReviewContext, namespace: string): boolean {
  const ns = ctx.snapshot.namespace(namespace);
  return !ns || namespaceIsTerminating(ns);
}

/** Writes to the status and finalize subresources of Namespaces and ResourceQuotas (T8). */
export function reviewSubresource(
  ctx: ReviewContext,
  kind: 'Namespace' | 'ResourceQuota',
  subresource: string,
  namespace: string | undefined,
  name: string,
): Verdict {
  if (isPrivileged(ctx.config, ctx.user) || isSystemController(ctx.config, ctx.user)) return ALLOW;
  const target =
    kind === 'Namespace'
      ? `namespaces/${subresource} of Namespace ${name}`
      : `resourcequotas/${subresource} of ResourceQuota ${namespace ?? ''}/${name}`;
  return { violations: checkSubresourceWrite(ctx.config, ctx.user, target), warnings: [] };
}

// ---------------------------------------------------------------------------------------------
// Projects
// ---------------------------------------------------------------------------------------------

/**
 * Whether `after` budgets less of `resource` than `before` did (or a resource `before` did not
 * budget; or no resource named).
 */
function lowersBudget(before: Resources, after: Resources, resource: string | number | undefined): boolean {
  if (typeof resource !== 'string') return true;
  const b = before.get(resource);
  const a = after.get(resource);
  return !b || !a || a.cmp(b) < 0;
}

export function reviewProject(
  ctx: ReviewContext,
  operation: Operation,
  object: Project | undefined,
  oldObject: Project | undefined,
): Verdict {
  const name = (object ?? oldObject)?.metadata?.name ?? '';
  // The garbage collector removes `foregroundDeletion` (and orphan) finalizers from a Project an
  // administrator or Argo CD deleted in the foreground: finalizers and ownerReferences only.
  if (controllerOnlyDropsFinalizersOrOwners(ctx, operation, object, oldObject)) return ALLOW;
  // A deletion's confirmation alone is D1's, judged inside the API server (ADR 0096).
  if (operation === 'UPDATE' && object && oldObject && onlyChangesDeletionConfirmation(object, oldObject)) return ALLOW;
  if (!isPrivileged(ctx.config, ctx.user)) {
    const verb = verbOf(operation);
    return { violations: checkProjectWrite(ctx.config, ctx.user, verb, name), warnings: [] };
  }
  if (operation === 'DELETE' || !object) return ALLOW;
  if (object.metadata?.deletionTimestamp) return ALLOW; // finalizer removal during a cascade
  const others = [...ctx.snapshot.projects()].filter((p) => p.metadata.name !== name);
  const violations = validateDeclarations([object], ctx.config, ctx.at, oldObject ? [oldObject] : []);
  // B2 on CREATE (on UPDATE validateDeclarations judges it against the old object).
  if (!oldObject) violations.push(...checkEndedBursts(undefined, object, ctx.at));
  if (violations.some((v) => v.rule === 'S1')) return { violations, warnings: [] };
  violations.push(
    ...checkPrefixOverlap(
      ctx.config,
      name,
      others.map((p) => p.metadata.name ?? ''),
    ),
  );
  violations.push(...checkDeclaredNamespacesFree(object, others, ctx.snapshot));
  const scope = scopeOf(ctx, object);
  if (scope.budget.size > 0) {
    const shares = clusterShares(ctx.snapshot, object, ctx.config.clusterName, ctx.at, { pending: ctx.pending });
    // On UPDATE, Q1 judges what the update lowers: a project already over a budget the update leaves as
    // it was (a burst ended while pods still use its room, docs/budgets.md#bursts) may still be edited.
    const before = oldObject ? budgetOf(oldObject, scope.cluster, ctx.at) : undefined;
    violations.push(
      ...checkBudget(scope, shares).filter((v) => !before || lowersBudget(before, scope.budget, v.path?.at(-1))),
    );
    // C1 over the live namespaces (self-service ones included), unless validateDeclarations found
    // the declared ones over already.
    if (ctx.config.pricing && !violations.some((v) => v.rule === 'C1'))
      violations.push(...checkProjectCost(ctx.config.pricing, object, scope.cluster, shares));
  }
  return { violations, warnings: [] };
}
