/** T1–T6: who owns what. */
import type { Project, Subject, Violation } from '../types.js';

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
      message: `Project ${newProject.metadata.name}: spec.tenant is immutable (was ${JSON.stringify(before)}, now ${JSON.stringify(after)}); create a new project for another tenant`,
    },
  ];
}

export function subjectMatches(subject: Subject, user: UserInfo): boolean {
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

export function ownersSummary(project: Project): string {
  const owners = (project.spec.owners ?? []).map((s) => (s.kind === 'ServiceAccount' ? `ServiceAccount ${s.namespace}/${s.name}` : `${s.kind} ${s.name}`));
  return owners.length ? owners.join(', ') : 'no owners (privileged subjects only)';
}

/** T4: `action` is e.g. "create namespace payments-dev". */
export function ownerOnly(project: Project, user: UserInfo, action: string): Violation[] {
  if (isOwner(project, user)) return [];
  return [
    {
      rule: 'T4',
      message: `${describeUser(user)} may not ${action}: it belongs to project ${project.metadata.name} (tenant ${project.spec.tenant}), whose owners are ${ownersSummary(project)}`,
    },
  ];
}
