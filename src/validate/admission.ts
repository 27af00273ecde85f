/**
 * The cluster-side rules for objects under admission review. Pure: the snapshot is fed
 * from informer caches by the webhook; nothing here does I/O.
 */
import { isPrivileged, isSystemController, projectPrefix, type TenantgateConfig } from '../config/config.js';
import { podSecurityLabels } from './pod-security.js';
import { validateDeclarations } from './offline.js';
import {
  budgetOf,
  budgetPath,
  clusterShares,
  namespaceShare,
  othersTotal,
  defaultsOf,
  effectiveQuota,
  effectiveQuotaAfter,
  isUnscoped,
  namespaceIsTerminating,
  parseResources,
  withOverlay,
  observedEffectiveQuota,
  namespaceAllocation,
  type NamespaceShare,
  type PendingAllocations,
  type QuotaChange,
  type Resources,
} from './resources.js';
import { checkNamespaceName, checkPrefixOverlap, isReservedName, projectByPrefix } from './rules/naming.js';
import { checkBudget, checkCoverage, checkFits, headroomWarnings, type BudgetScope } from './rules/quota.js';
import { checkProtectedMetadata } from './rules/metadata.js';
import { describeUser, isOwner, ownerOnly, type UserInfo } from './rules/tenancy.js';
import {
  ANNOTATION_PROJECT_UID,
  LABEL_PROJECT,
  LABEL_TENANT,
  type NamespaceObject,
  type ObjectMeta,
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
  /** Q5: what was admitted but is not in the snapshot yet (counts as max(observed, pending)). */
  pending?: PendingAllocations;
}

export interface Allocation {
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

/** The configured privileged subjects, as a denial names them. */
function privilegedSummary(ctx: Pick<ReviewContext, 'config'>): string {
  const { users, groups } = ctx.config.privileged;
  return [...groups.map((g) => `group ${g}`), ...users.map((u) => `user ${u}`)].join(', ') || 'none configured';
}

function scopeOf(ctx: ReviewContext, project: Project): BudgetScope {
  const cluster = ctx.config.clusterName;
  return { project: project.metadata.name ?? '', cluster, budget: budgetOf(project, cluster), budgetPath: budgetPath(project, cluster) };
}

/** The project a namespace (by name and labels) belongs to: its label, else the project whose prefix it carries. */
export function projectOfNamespace(ctx: Pick<ReviewContext, 'config' | 'snapshot'>, name: string, labels: Record<string, string> | undefined): { project?: Project; claimed?: string } {
  const claimed = labels?.[LABEL_PROJECT];
  if (claimed) {
    const project = ctx.snapshot.project(claimed);
    return project ? { project, claimed } : { claimed };
  }
  const project = projectByPrefix(ctx.config, ctx.snapshot.projects(), name);
  return project ? { project } : {};
}

/** Whether `after` asks more than `before` of some resource. */
function grows(before: Resources, after: Resources): boolean {
  for (const [r, q] of after) {
    const prev = before.get(r);
    if (!prev || q.cmp(prev) > 0) return true;
  }
  return false;
}

/**
 * The namespace's share before and after a change, and what the project's other namespaces hold
 * together (a change touches one namespace only).
 */
function othersAndSelf(ctx: ReviewContext, project: Project, namespace: string, change?: QuotaChange): { self: NamespaceShare; before: NamespaceShare; others: Resources } {
  const cluster = ctx.config.clusterName;
  const pending = ctx.pending ? { pending: ctx.pending } : {};
  const before = namespaceShare(ctx.snapshot, project, cluster, namespace, pending);
  const self = change ? namespaceShare(ctx.snapshot, project, cluster, namespace, { change, ...pending }) : before;
  return { self, before, others: othersTotal(ctx.snapshot, project, cluster, namespace, ctx.pending) };
}

// ---------------------------------------------------------------------------------------------
// Namespaces
// ---------------------------------------------------------------------------------------------

export function reviewNamespace(ctx: ReviewContext, operation: Operation, object: NamespaceObject | undefined, oldObject: NamespaceObject | undefined): Verdict {
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
    violations.push({ rule: 'T2', path: ['metadata', 'labels', LABEL_PROJECT], message: `Namespace ${name} is labelled ${LABEL_PROJECT}=${claimed}, but there is no project ${claimed}` });
    return { violations, warnings: [] };
  }
  if (!project) {
    if (privileged) return ALLOW;
    const reserved = isReservedName(ctx.config, name);
    if (reserved) violations.push({ rule: 'N2', path: ['metadata', 'name'], message: `namespace ${JSON.stringify(name)} is not allowed: ${reserved}` });
    if (ctx.config.requireProjectForUsers) {
      const own = [...ctx.snapshot.projects()].filter((p) => isOwner(p, ctx.user)).map((p) => projectPrefix(ctx.config, p.metadata.name ?? ''));
      violations.push({
        rule: 'T6',
        path: ['metadata', 'name'],
        message: `Namespace ${name} belongs to no project, and ${describeUser(ctx.user)} may only create namespaces inside a project it owns${own.length ? ` (names starting with ${own.map((p) => JSON.stringify(p)).join(' or ')})` : ' (it owns none)'}`,
      });
    }
    return { violations, warnings: [] };
  }
  const projectName = project.metadata.name ?? '';
  violations.push(...checkNamespaceName(ctx.config, projectName, name));
  // Unlabelled and claimed only by its prefix: the mutating webhook labels it for owners and
  // privileged subjects; for anyone else T4 says what is wrong, missing labels would be noise.
  if (claimed || privileged || isOwner(project, ctx.user)) violations.push(...checkProjectLabels(project, name, labels));
  if (!privileged) {
    violations.push(...ownerOnly(project, ctx.user, `create namespace ${name}`));
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
  if (project.metadata.deletionTimestamp) {
    violations.push({ rule: 'T4', message: `Namespace ${name} cannot be created: project ${projectName} is being deleted` });
  }
  const max = project.spec.maxNamespaces;
  if (typeof max === 'number') {
    // Namespaces admitted a moment ago count before the cache shows them (Q5 keeps them pending).
    const members = new Set<string>();
    for (const n of ctx.snapshot.namespacesOfProject(projectName)) members.add(n.metadata.name ?? '');
    for (const n of ctx.pending?.namespaces(projectName) ?? []) members.add(n);
    members.delete(name);
    if (members.size + 1 > max) violations.push({ rule: 'Q1', message: `Namespace ${name} would be namespace ${members.size + 1} of project ${projectName}, whose maxNamespaces is ${max}` });
  }
  const scope = scopeOf(ctx, project);
  if (!privileged) violations.push(...checkNewNamespaceCoverage(ctx, project, scope, name));
  const { self, before, others } = othersAndSelf(ctx, project, name);
  const share: NamespaceShare = { namespace: name, resources: namespaceAllocation(new Map(), scope.budget, defaultsOf(project)), defaulted: true };
  violations.push(...checkFits(scope, `Namespace ${name}`, share, others));
  const warnings = violations.length ? [] : headroomWarnings(scope, others, share.resources, ctx.config.headroomWarningThreshold);
  return { violations, warnings, allocation: { project: projectName, namespace: name, resources: share.resources, grows: grows(before.resources, self.resources) || !ctx.snapshot.namespace(name) } };
}

/**
 * Q2 for a namespace a tenant creates: the quota it will get (its declared quota, else
 * namespaceDefaults.quota, as render and the controller make it) must cover every budgeted resource,
 * or the namespace would run BestEffort pods, PVCs and limits without any bound.
 */
function checkNewNamespaceCoverage(ctx: ReviewContext, project: Project, scope: BudgetScope, name: string): Violation[] {
  if (scope.budget.size === 0) return [];
  const declared = (project.spec.namespaces ?? []).find((d) => d.name === name && (!d.cluster || d.cluster === ctx.config.clusterName));
  const source = declared?.quota?.hard ? `the quota declared for it in spec.namespaces` : 'spec.namespaceDefaults.quota';
  const covered = parseResources(declared?.quota?.hard ?? project.spec.namespaceDefaults?.quota?.hard);
  const missing = [...scope.budget.keys()].filter((r) => !covered.has(r)).sort();
  if (missing.length === 0) return [];
  return [
    {
      rule: 'Q2',
      path: ['metadata', 'name'],
      message: `Namespace ${name} would have no quota for ${missing.join(', ')}: ${where(scope)} budgets ${missing.length === 1 ? 'it' : 'them'}, but ${source} does not cover ${missing.length === 1 ? 'it' : 'them'}; the platform team must declare spec.namespaceDefaults.quota.hard with ${[...scope.budget.keys()].sort().join(', ')} in Project ${scope.project}`,
    },
  ];
}

function where(scope: BudgetScope): string {
  return scope.cluster ? `project ${scope.project} on cluster ${scope.cluster}` : `project ${scope.project}`;
}

/** T2: a project namespace carries its project's project and tenant labels. */
function checkProjectLabels(project: Project, name: string, labels: Record<string, string>): Violation[] {
  const wrong: string[] = [];
  if (labels[LABEL_PROJECT] !== project.metadata.name) wrong.push(`${LABEL_PROJECT}=${project.metadata.name} (has ${JSON.stringify(labels[LABEL_PROJECT] ?? null)})`);
  if (labels[LABEL_TENANT] !== project.spec.tenant) wrong.push(`${LABEL_TENANT}=${project.spec.tenant} (has ${JSON.stringify(labels[LABEL_TENANT] ?? null)})`);
  if (wrong.length === 0) return [];
  return [{ rule: 'T2', path: ['metadata', 'labels'], message: `Namespace ${name} of project ${project.metadata.name} must carry the labels ${wrong.join(', ')}` }];
}

function namespaceUpdate(ctx: ReviewContext, ns: NamespaceObject, old: NamespaceObject): Verdict {
  if (isSystemController(ctx.config, ctx.user) && onlyFinalizersOrOwners(ns, old)) return ALLOW;
  if (!isPrivileged(ctx.config, ctx.user)) return namespaceUpdateByTenant(ctx, ns, old);
  const name = ns.metadata.name ?? '';
  const before = old.metadata.labels ?? {};
  const after = ns.metadata.labels ?? {};
  if (before[LABEL_PROJECT] === after[LABEL_PROJECT] && before[LABEL_TENANT] === after[LABEL_TENANT]) return ALLOW;
  const claimed = after[LABEL_PROJECT];
  if (!claimed) return ALLOW; // a privileged subject releases the namespace from its project
  const project = ctx.snapshot.project(claimed);
  if (!project) {
    return { violations: [{ rule: 'T2', path: ['metadata', 'labels', LABEL_PROJECT], message: `Namespace ${name} is labelled ${LABEL_PROJECT}=${claimed}, but there is no project ${claimed}` }], warnings: [] };
  }
  return { violations: [...checkNamespaceName(ctx.config, claimed, name), ...checkProjectLabels(project, name, after)], warnings: [] };
}

/**
 * Whether an update changes nothing but metadata.finalizers and metadata.ownerReferences: the garbage
 * collector removing the foregroundDeletion or orphan finalizer, or an owner reference whose owner is gone.
 */
function onlyFinalizersOrOwners(after: { metadata: ObjectMeta; spec?: unknown }, before: { metadata: ObjectMeta; spec?: unknown }): boolean {
  const rest = (o: { metadata: ObjectMeta; spec?: unknown }) => JSON.stringify([o.metadata.labels ?? {}, o.metadata.annotations ?? {}, o.spec ?? null]);
  return rest(after) === rest(before) && dropsOnly(after.metadata.finalizers, before.metadata.finalizers, (f) => f) && dropsOnly(after.metadata.ownerReferences, before.metadata.ownerReferences, (r) => JSON.stringify(r));
}

/**
 * Kubernetes' controllers remove finalizers (the garbage collector's foregroundDeletion, orphan) and
 * owner references to owners that are gone; they never need to add one. Adding is how a finalizer
 * stalls a cascade or an owner reference stalls another tenant's deletion (T7), so it is judged as
 * for anyone else.
 */
function dropsOnly<T>(after: readonly T[] | undefined, before: readonly T[] | undefined, key: (item: T) => string): boolean {
  const had = new Set((before ?? []).map(key));
  return (after ?? []).every((item) => had.has(key(item)));
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

/** T6 for the verbs after CREATE: outside projects, only privileged subjects act. */
function outsideProjects(ctx: ReviewContext, subject: string, verb: string, path?: Violation['path']): Violation {
  return {
    rule: 'T6',
    ...(path ? { path } : {}),
    message: `${subject} belongs to no project: ${describeUser(ctx.user)} may not ${verb}; only privileged subjects (${privilegedSummary(ctx)}) manage namespaces outside projects`,
  };
}

function namespaceUpdateByTenant(ctx: ReviewContext, ns: NamespaceObject, old: NamespaceObject): Verdict {
  const name = ns.metadata.name ?? '';
  const project = labelledProject(ctx, old);
  if (!project) return { violations: [outsideProjects(ctx, `Namespace ${name}`, `update namespace ${name}`)], warnings: [] };
  const violations: Violation[] = [...ownerOnly(project, ctx.user, `update namespace ${name}`)];
  const before = old.metadata.labels ?? {};
  const after = ns.metadata.labels ?? {};
  const changed = [LABEL_PROJECT, LABEL_TENANT].filter((k) => before[k] !== after[k]);
  if (changed.length > 0) {
    violations.push({
      rule: 'T3',
      path: ['metadata', 'labels'],
      message: `Namespace ${name}: the labels ${changed.map((k) => `${k} (${JSON.stringify(before[k] ?? null)} → ${JSON.stringify(after[k] ?? null)})`).join(', ')} are immutable for ${describeUser(ctx.user)}; only privileged subjects may move a namespace between projects`,
    });
  }
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
  if (!project) return { violations: [outsideProjects(ctx, `Namespace ${name}`, `delete namespace ${name}`)], warnings: [] };
  return { violations: ownerOnly(project, ctx.user, `delete namespace ${name}`), warnings: [] };
}

// ---------------------------------------------------------------------------------------------
// ResourceQuotas
// ---------------------------------------------------------------------------------------------

/**
 * The project of the namespace a quota lives in: by the namespace's label. Only while the namespace is
 * not in the cache yet (created a moment ago) does its name prefix stand in for the label the mutating
 * webhook has given it.
 */
function quotaProject(ctx: ReviewContext, namespace: string): Project | undefined {
  const nsObject = ctx.snapshot.namespace(namespace);
  if (nsObject) return labelledProject(ctx, nsObject);
  return projectOfNamespace(ctx, namespace, undefined).project;
}

export function reviewResourceQuota(ctx: ReviewContext, operation: Operation, namespace: string, object: ResourceQuotaObject | undefined, oldObject: ResourceQuotaObject | undefined): Verdict {
  if (operation === 'CONNECT') return ALLOW;
  const privileged = isPrivileged(ctx.config, ctx.user);
  // Kubernetes' controllers finish what an authorised subject started: the namespace controller empties
  // a terminating namespace, the garbage collector removes dependents. They delete; they never write quotas.
  const controller = operation === 'DELETE' && isSystemController(ctx.config, ctx.user);
  if (operation === 'UPDATE' && object && oldObject && isSystemController(ctx.config, ctx.user) && onlyFinalizersOrOwners(object, oldObject)) return ALLOW;
  if ((privileged || controller) && operation === 'DELETE' && terminatingOrGone(ctx, namespace)) return ALLOW;
  const project = quotaProject(ctx, namespace);
  const quotaName = (object ?? oldObject)?.metadata.name ?? '';
  const subject = `ResourceQuota ${namespace}/${quotaName}`;
  const verb = operation === 'CREATE' ? 'create' : operation === 'UPDATE' ? 'update' : 'delete';
  if (!project) {
    if (privileged || controller) return ALLOW;
    return { violations: [outsideProjects(ctx, `Namespace ${namespace}`, `${verb} ${subject}`)], warnings: [] };
  }
  const violations: Violation[] = [];
  if (!privileged && !controller) violations.push(...ownerOnly(project, ctx.user, `${verb} ${subject}`));
  const scope = scopeOf(ctx, project);
  if (scope.budget.size === 0) return { violations, warnings: [] };
  const projectName = project.metadata.name ?? '';
  const overlay = ctx.pending?.quotaOverlay?.(namespace);
  // What the namespace's quotas cover now: the snapshot with the writes admitted but not seen yet.
  const coveredBefore = () => (overlay ? effectiveQuota(withOverlay([...ctx.snapshot.quotasInNamespace(namespace)], overlay)) : observedEffectiveQuota(ctx.snapshot, namespace));
  const removesCoverage = [...scope.budget.keys()].some((r) => oldObject !== undefined && isUnscoped(oldObject) && Object.hasOwn(oldObject.spec?.hard ?? {}, r) && !(object && isUnscoped(object) && Object.hasOwn(object.spec?.hard ?? {}, r)));

  if (operation === 'DELETE') {
    if (!oldObject) return { violations, warnings: [] };
    const change: QuotaChange = { namespace, name: quotaName, ...(overlay ? { overlay } : {}) };
    if (!privileged) {
      const before = coveredBefore();
      const after = effectiveQuotaAfter(ctx.snapshot, change);
      const lost = [...scope.budget.keys()].filter((r) => before.has(r) && !after.has(r)).sort();
      if (lost.length) {
        violations.push({
          rule: 'Q3',
          message: `${subject} provides the only coverage of ${lost.join(', ')} in namespace ${namespace} (project ${projectName} budgets ${lost.length === 1 ? 'it' : 'them'}); ${describeUser(ctx.user)} may replace it but not delete it`,
        });
      }
    }
    // Q1: deleting the tighter of two quotas lets the namespace grow to the other one.
    const { self, before, others } = othersAndSelf(ctx, project, namespace, change);
    const shareGrows = grows(before.resources, self.resources);
    if (shareGrows) violations.push(...explainInUse(ctx, project, scope, namespace, checkFits(scope, subject, self, others)));
    return { violations, warnings: [], allocation: { project: projectName, namespace, resources: self.resources, grows: shareGrows, quotaWrite: { name: quotaName, quota: null, removesCoverage } } };
  }
  if (!object) return { violations, warnings: [] };
  const proposed: QuotaChange = { namespace, name: quotaName, quota: object, ...(overlay ? { overlay } : {}) };
  const after = effectiveQuotaAfter(ctx.snapshot, proposed);
  const change: QuotaChange = { ...proposed, effective: after };
  if (isUnscoped(object) || (oldObject && isUnscoped(oldObject))) {
    // Q2: tenants must leave the namespace fully covered; privileged subjects may add a partial
    // quota to a namespace that is not covered yet, but nobody may remove coverage that exists.
    const before = coveredBefore();
    const required = privileged ? new Map([...scope.budget].filter(([r]) => before.has(r))) : scope.budget;
    violations.push(...checkCoverage({ ...scope, budget: required }, subject, after, ['spec', 'hard']));
  }
  const { self, before, others } = othersAndSelf(ctx, project, namespace, change);
  const quotaGrows = grows(before.resources, self.resources);
  // Only a growing share can overspend; a shrinking or unchanged one is always within what was admitted.
  if (quotaGrows) violations.push(...explainInUse(ctx, project, scope, namespace, checkFits(scope, subject, self, others, ['spec', 'hard'])));
  const warnings = violations.length ? [] : headroomWarnings(scope, others, self.resources, ctx.config.headroomWarningThreshold);
  return { violations, warnings, allocation: { project: projectName, namespace, resources: self.resources, grows: quotaGrows, quotaWrite: { name: quotaName, quota: object, removesCoverage } } };
}

/** Whether a namespace is terminating (or already gone from the cache): nothing can be created in it any more. */
function terminatingOrGone(ctx: ReviewContext, namespace: string): boolean {
  const ns = ctx.snapshot.namespace(namespace);
  return !ns || namespaceIsTerminating(ns);
}

/**
 * A Q1 denial of a growing share, with what the other namespaces hold above their quotas (in use, or
 * still enforced by the apiserver): the budget they take although their quotas were lowered.
 */
function explainInUse(ctx: ReviewContext, project: Project, scope: BudgetScope, namespace: string, violations: Violation[]): Violation[] {
  if (violations.length === 0) return violations;
  const above: string[] = [];
  for (const ns of ctx.snapshot.namespacesOfProject(project.metadata.name ?? '')) {
    const name = ns.metadata.name ?? '';
    if (name === namespace) continue;
    const quoted = observedEffectiveQuota(ctx.snapshot, name);
    const held = namespaceShare(ctx.snapshot, project, ctx.config.clusterName, name).resources;
    for (const [r, q] of held) {
      const limit = quoted.get(r);
      if (scope.budget.has(r) && limit && q.cmp(limit) > 0) above.push(`${name} holds ${r} ${q.toString()} (its quota says ${limit.toString()}; in use or still enforced)`);
    }
  }
  if (above.length === 0) return violations;
  const note = `; counted by usage: ${above.sort().join(', ')}`;
  return violations.map((v) => ({ ...v, message: v.message + note }));
}

/**
 * Writes to the status and finalize subresources of Namespaces and ResourceQuotas: Kubernetes' own
 * controllers and privileged subjects only (T8). A tenant who rewrote a quota's status.used would
 * blind the apiserver's quota admission; one who finalised a namespace would skip the deletion of
 * its contents. RBAC grants tenants neither; this is the second layer.
 */
export function reviewSubresource(ctx: ReviewContext, kind: 'Namespace' | 'ResourceQuota', subresource: string, namespace: string | undefined, name: string): Verdict {
  if (isPrivileged(ctx.config, ctx.user) || isSystemController(ctx.config, ctx.user)) return ALLOW;
  const target = kind === 'Namespace' ? `namespaces/${subresource} of Namespace ${name}` : `resourcequotas/${subresource} of ResourceQuota ${namespace ?? ''}/${name}`;
  const controllers = ctx.config.systemControllers.join(', ') || 'none configured';
  return {
    violations: [{ rule: 'T8', message: `${describeUser(ctx.user)} may not write ${target}: only Kubernetes' controllers (${controllers}) and privileged subjects (${privilegedSummary(ctx)}) write the status and finalize subresources` }],
    warnings: [],
  };
}

// ---------------------------------------------------------------------------------------------
// Projects
// ---------------------------------------------------------------------------------------------

export function reviewProject(ctx: ReviewContext, operation: Operation, object: Project | undefined, oldObject: Project | undefined): Verdict {
  const name = (object ?? oldObject)?.metadata?.name ?? '';
  // The garbage collector removes `foregroundDeletion` (and orphan) finalizers from a Project an
  // administrator or Argo CD deleted in the foreground: finalizers and ownerReferences only.
  if (operation === 'UPDATE' && object && oldObject && isSystemController(ctx.config, ctx.user) && onlyFinalizersOrOwners(object, oldObject)) return ALLOW;
  if (!isPrivileged(ctx.config, ctx.user)) {
    const verb = operation === 'CREATE' ? 'create' : operation === 'UPDATE' ? 'update' : 'delete';
    return {
      violations: [{ rule: 'T5', message: `${describeUser(ctx.user)} may not ${verb} Project ${name}: only privileged subjects (${privilegedSummary(ctx)}) change projects; propose the change in git` }],
      warnings: [],
    };
  }
  if (operation === 'DELETE' || !object) return ALLOW;
  if (object.metadata?.deletionTimestamp) return ALLOW; // finalizer removal during a cascade
  const others = [...ctx.snapshot.projects()].filter((p) => p.metadata.name !== name);
  const violations = validateDeclarations([object], ctx.config, oldObject ? [oldObject] : []);
  if (violations.some((v) => v.rule === 'S1')) return { violations, warnings: [] };
  violations.push(...checkPrefixOverlap(ctx.config, name, others.map((p) => p.metadata.name ?? '')));
  (object.spec.namespaces ?? []).forEach((declared, i) => {
    const path = ['spec', 'namespaces', i, 'name'];
    const elsewhere = others.find((p) => (p.spec.namespaces ?? []).some((n) => n.name === declared.name));
    if (elsewhere) violations.push({ rule: 'N3', path, message: `namespace ${declared.name} is already declared by project ${elsewhere.metadata.name}; a namespace belongs to at most one project` });
    const existing = ctx.snapshot.namespace(declared.name);
    const owner = existing?.metadata.labels?.[LABEL_PROJECT];
    if (owner && owner !== name && owner !== elsewhere?.metadata.name) {
      violations.push({ rule: 'N3', path, message: `namespace ${declared.name} already exists in the cluster labelled for project ${owner}; a namespace belongs to at most one project` });
    }
  });
  const scope = scopeOf(ctx, object);
  if (scope.budget.size > 0) {
    const shares = clusterShares(ctx.snapshot, object, ctx.config.clusterName, { pending: ctx.pending });
    violations.push(...checkBudget(scope, shares));
  }
  return { violations, warnings: [] };
}
