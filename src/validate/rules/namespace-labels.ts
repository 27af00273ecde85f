/**
 * T2 and T3: the tenancy labels of a namespace. A project namespace carries its project's
 * `tenantgate.io/project` and `tenantgate.io/tenant` labels (T2); only privileged subjects move a
 * namespace between projects, and only they label a namespace outside projects with a tenant (T3).
 */
import { LABEL_PROJECT, LABEL_TENANT, type Project, type Violation } from '../types.js';
import { describeUser, type UserInfo } from './tenancy.js';

/** T2: the project label names a project that does not exist. */
export function unknownProject(namespace: string, claimed: string): Violation {
  return {
    rule: 'T2',
    path: ['metadata', 'labels', LABEL_PROJECT],
    message: `Namespace ${namespace} is labelled ${LABEL_PROJECT}=${claimed}, but there is no project ${claimed}`,
  };
}

/** T2: a project namespace carries its project's project and tenant labels. */
export function checkProjectLabels(project: Project, name: string, labels: Record<string, string>): Violation[] {
  const wrong: string[] = [];
  if (labels[LABEL_PROJECT] !== project.metadata.name)
    wrong.push(`${LABEL_PROJECT}=${project.metadata.name} (has ${JSON.stringify(labels[LABEL_PROJECT] ?? null)})`);
  if (labels[LABEL_TENANT] !== project.spec.tenant)
    wrong.push(`${LABEL_TENANT}=${project.spec.tenant} (has ${JSON.stringify(labels[LABEL_TENANT] ?? null)})`);
  if (wrong.length === 0) return [];
  return [
    {
      rule: 'T2',
      path: ['metadata', 'labels'],
      message: `Namespace ${name} of project ${project.metadata.name} must carry the labels ${wrong.join(', ')}`,
    },
  ];
}

/** T3: a non-privileged subject leaves the tenancy labels of an existing namespace as they are. */
export function checkTenancyLabelsUnchanged(
  user: UserInfo,
  name: string,
  before: Record<string, string>,
  after: Record<string, string>,
): Violation[] {
  const changed = [LABEL_PROJECT, LABEL_TENANT].filter((k) => before[k] !== after[k]);
  if (changed.length === 0) return [];
  const show = (value: string | undefined) => JSON.stringify(value ?? null);
  return [
    {
      rule: 'T3',
      path: ['metadata', 'labels'],
      message:
        `Namespace ${name}: the labels ` +
        `${changed.map((k) => `${k} (${show(before[k])} → ${show(after[k])})`).join(', ')}` +
        ` are immutable for ${describeUser(user)}; only privileged subjects may move a namespace between projects`,
    },
  ];
}

/**
 * T3: outside projects, the tenant label is a privileged subject's to set. The isolation policy's
 * `sameTenant` peer also requires the project label; this keeps a tenant's namespace outside projects
 * (possible with `requireProjectForUsers: false`) from claiming a tenant at all.
 */
export function checkNoTenantLabelOutsideProjects(
  user: UserInfo,
  name: string,
  labels: Record<string, string>,
): Violation[] {
  if (!(LABEL_TENANT in labels)) return [];
  const label = `${LABEL_TENANT}=${labels[LABEL_TENANT] ?? ''}`;
  const message =
    `Namespace ${name} belongs to no project: the label ${label} is not allowed for ${describeUser(user)}; ` +
    'only privileged subjects label a namespace outside projects with a tenant';
  return [{ rule: 'T3', path: ['metadata', 'labels', LABEL_TENANT], message }];
}
