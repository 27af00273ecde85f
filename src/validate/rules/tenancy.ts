/**
 * Who may act on what: T1 (a project's tenant is immutable), T4 (owners only), T5 (projects change in
 * git), T6 (outside projects, privileged subjects only), T8 (status and finalize subresources).
 * T2 and T3 (the tenancy labels) are in namespace-labels.ts, T7 (protected metadata) in metadata.ts.
 */
import type { TenantgateConfig } from '../../config/config.js';
import type { FieldPath, Project, Subject, Violation } from '../types.js';

export interface UserInfo {
  username?: string;
  groups?: string[];
}

/** T1 */
export function checkTenantImmutable(oldProject: Project, newProject: Project): Violation[] {
  const before = oldProject.spec?.tenant;
  const after = newProject.spec?.tenant;
  if (before === undefined || before === after) return [];
  return [
    {
      rule: 'T1',
      path: ['spec', 'tenant'],
      message:
        `Project ${newProject.metadata.name}: spec.tenant is immutable (was ${JSON.stringify(before)}, now ` +
        `${JSON.stringify(after)}); create a new project for another tenant`,
    },
  ];
}

function subjectMatches(subject: Subject, user: UserInfo): boolean {
  switch (subject.kind) {
    case 'User':
      return user.username === subject.name;
    case 'Group':
      return (user.groups ?? []).includes(subject.name);
    case 'ServiceAccount':
      return user.username === `system:serviceaccount:${subject.namespace ?? ''}:${subject.name}`;
    default:
      return false;
  }
}

export function isOwner(project: Project, user: UserInfo): boolean {
  return (project.spec.owners ?? []).some((s) => subjectMatches(s, user));
}

export function describeUser(user: UserInfo): string {
  return `user ${JSON.stringify(user.username ?? '(anonymous)')}`;
}

function ownersSummary(project: Project): string {
  const owners = (project.spec.owners ?? []).map((s) =>
    s.kind === 'ServiceAccount' ? `ServiceAccount ${s.namespace}/${s.name}` : `${s.kind} ${s.name}`,
  );
  return owners.length ? owners.join(', ') : 'no owners (privileged subjects only)';
}

/**
 * T4: `action` is e.g. "create namespace payments-dev". With `own` (a namespace created by
 * generateName, whose caller picked a prefix rather than a name), the message also says which projects
 * the caller owns and their prefixes; `own` is asked only for a denial, so an owner's create lists nothing.
 */
export function ownerOnly(
  project: Project,
  user: UserInfo,
  action: string,
  own?: () => readonly OwnProject[],
): Violation[] {
  if (isOwner(project, user)) return [];
  return [
    {
      rule: 'T4',
      message:
        `${describeUser(user)} may not ${action}: it belongs to project ${project.metadata.name} (tenant ` +
        `${project.spec.tenant}), whose owners are ${ownersSummary(project)}` +
        `${own ? `; ${ownedProjectsText(user, own())}` : ''}`,
    },
  ];
}

/** A project the caller owns, as a denial under `visibility: own` offers it instead. */
export interface OwnProject {
  name: string;
  /** The prefix its namespaces start with (projectPrefix). */
  prefix: string;
}

/**
 * T4 under `visibility: own` (docs/visibility.md): the caller may not see the project, so the message
 * names neither its tenant nor its owners (nor its budget: admission.ts makes this the only finding);
 * it says what the caller may do instead.
 */
export function ownerOnlyUndisclosed(user: UserInfo, action: string, own: readonly OwnProject[]): Violation {
  const who = describeUser(user);
  return {
    rule: 'T4',
    message:
      `${who} may not ${action}: it belongs to a project ${who} does not own; ${ownedProjectsText(user, own)}; ask ` +
      `the platform team to be made an owner of another`,
  };
}

/** `user "bob" owns project ml (namespaces starting with "ml-")`, or `… owns no project`. */
function ownedProjectsText(user: UserInfo, own: readonly OwnProject[]): string {
  const who = describeUser(user);
  return own.length
    ? `${who} owns ${own.length === 1 ? 'project' : 'projects'} ` +
        `${own.map((p) => `${p.name} (namespaces starting with ${JSON.stringify(p.prefix)})`).join(', ')}`
    : `${who} owns no project`;
}

/** The configured privileged subjects, as a denial names them. */
function privilegedSummary(config: TenantgateConfig): string {
  const { users, groups } = config.privileged;
  return [...groups.map((g) => `group ${g}`), ...users.map((u) => `user ${u}`)].join(', ') || 'none configured';
}

/** T5: only privileged subjects create, update or delete Projects; `verb` is create, update or delete. */
export function checkProjectWrite(
  config: TenantgateConfig,
  user: UserInfo,
  verb: string,
  project: string,
): Violation[] {
  return [
    {
      rule: 'T5',
      message:
        `${describeUser(user)} may not ${verb} Project ${project}: only privileged subjects (` +
        `${privilegedSummary(config)}) change projects; propose the change in git`,
    },
  ];
}

/** T6 for the verbs after CREATE: outside projects, only privileged subjects act. */
export function outsideProjects(
  config: TenantgateConfig,
  user: UserInfo,
  subject: string,
  verb: string,
  path?: FieldPath,
): Violation {
  return {
    rule: 'T6',
    ...(path ? { path } : {}),
    message:
      `${subject} belongs to no project: ${describeUser(user)} may not ${verb}; only privileged subjects (` +
      `${privilegedSummary(config)}) manage namespaces outside projects`,
  };
}

/**
 * T6 for CREATE: with requireProjectForUsers, a tenant creates namespaces only inside a project it owns
 * (`ownPrefixes`).
 */
export function checkNamespaceOutsideProjects(user: UserInfo, name: string, ownPrefixes: readonly string[]): Violation {
  return {
    rule: 'T6',
    path: ['metadata', 'name'],
    message:
      `Namespace ${name} belongs to no project, and ${describeUser(user)} may only create namespaces inside a ` +
      `project it owns` +
      (ownPrefixes.length
        ? ` (names starting with ${ownPrefixes.map((p) => JSON.stringify(p)).join(' or ')})`
        : ' (it owns none)'),
  };
}

/**
 * T8: writes to the status and finalize subresources of Namespaces and ResourceQuotas are for
 * Kubernetes' own controllers and privileged subjects. A tenant who rewrote a quota's status.used would
 * blind the apiserver's quota admission; one who finalised a namespace would skip the deletion of its
 * contents. RBAC grants tenants neither; this is the second layer. `target` names the write, e.g.
 * "namespaces/finalize of Namespace payments-api".
 */
export function checkSubresourceWrite(config: TenantgateConfig, user: UserInfo, target: string): Violation[] {
  const controllers = config.systemControllers.join(', ') || 'none configured';
  return [
    {
      rule: 'T8',
      message:
        `${describeUser(user)} may not write ${target}: only Kubernetes' controllers (${controllers}) and ` +
        `privileged subjects (${privilegedSummary(config)}) write the status and finalize subresources`,
    },
  ];
}

/** T4 for a namespace of a project that is being deleted. */
export function checkProjectNotDeleting(project: Project, namespace: string): Violation[] {
  if (!project.metadata.deletionTimestamp) return [];
  return [
    {
      rule: 'T4',
      message: `Namespace ${namespace} cannot be created: project ${project.metadata.name ?? ''} is being deleted`,
    },
  ];
}
