/**
 * What `kubectl tenantgate why` says about each rule id a denial carries: the rule's title (as the
 * heading in docs/rules.md says it; test/unit/kubectl-plugin-why.test.ts keeps them equal) and what a
 * tenant can change. Pure data.
 */
import type { RuleId } from '../validate/types.js';

export interface RuleHelp {
  readonly title: string;
  /** What the person who got the denial can do about it. */
  readonly change: string;
}

/** Every documented rule has an entry (the test checks); a rule id newer than this table gets GENERIC_HELP. */
export const RULE_HELP: Readonly<Partial<Record<RuleId, RuleHelp>>> = {
  S1: {
    title: 'the Project matches its schema',
    change: "fix the field the message names (Projects are the platform team's, in git)",
  },
  N1: {
    title: 'a Project name is a DNS-1123 label of at most 40 characters',
    change: 'rename the Project (lowercase letters, digits and "-", at most 40 characters)',
  },
  N2: {
    title: 'a project namespace is `<project>-<suffix>` and not reserved',
    change:
      'name the namespace <project>-<suffix> (see `kubectl tenantgate projects`), not default, kube-*, ' +
      'openshift-* or tenantgate-*',
  },
  N3: {
    title: 'a namespace belongs to one project only',
    change: 'pick a namespace name no other project declares or holds',
  },
  N4: {
    title: 'project prefixes do not overlap',
    change: 'rename one of the two projects so neither prefix starts the other',
  },
  T1: {
    title: '`spec.tenant` never changes',
    change: 'create a new Project for the other tenant instead of changing spec.tenant',
  },
  T2: {
    title: "a project namespace carries its project's labels",
    change:
      'set tenantgate.io/project and tenantgate.io/tenant to the project and its tenant (`kubectl tenantgate ' +
      'create namespace` does)',
  },
  T3: {
    title: 'those two labels are immutable for non-privileged subjects',
    change:
      'leave tenantgate.io/project and tenantgate.io/tenant as they are; the platform team moves namespaces ' +
      'between projects',
  },
  T4: {
    title: "only a project's owners manage its namespaces and quotas",
    change: 'act in a project you own (`kubectl tenantgate projects`), or ask an owner of that project',
  },
  T5: {
    title: 'only privileged subjects change Projects',
    change: 'propose the Project change in git (a budget is raised there, by the platform team)',
  },
  T6: {
    title: 'outside projects, non-privileged subjects change nothing',
    change:
      'work in a namespace of a project you own; create one with `kubectl tenantgate create namespace NAME ' +
      '--project P`',
  },
  T7: {
    title: 'protected metadata',
    change:
      'leave the protected labels, annotations, finalizers and owner references (of namespaces, quotas and ' +
      "tenantgate's objects in them) alone, or ask the platform team",
  },
  T8: {
    title: "status and finalize subresources are for Kubernetes' controllers",
    change: "do not write status or finalize: Kubernetes' controllers do",
  },
  T9: {
    title: "only tenantgate writes a namespace's allow-list parameters",
    change:
      "leave AllowList tenantgate-allow alone: the controller writes it from the Project; change the Project's " +
      'spec.allow in git instead',
  },
  Q1: {
    title: "the namespaces' quotas fit the budget",
    change:
      'ask for no more than fits (lower spec.hard, or free room in another namespace of the project), or ask the ' +
      'platform team to raise the budget in git',
  },
  Q2: {
    title: 'every namespace is covered for every budgeted resource',
    change: 'keep an unscoped ResourceQuota with every resource the project budgets in the namespace',
  },
  Q3: {
    title: 'tenants cannot delete the quota that provides coverage',
    change: 'replace the quota (kubectl apply / edit) instead of deleting it',
  },
  Q4: {
    title: 'a warning when headroom runs low',
    change: 'nothing is refused; plan with the headroom left (`kubectl tenantgate headroom`)',
  },
  Q5: {
    title: 'concurrent admissions never overspend',
    change: 'retry the request: other changes of the project were being decided at the same moment',
  },
  Q6: {
    title: 'a budget is not lowered below what is in use',
    change: 'stop workloads in the project first (lowering quotas frees nothing in use), then lower the budget in git',
  },
  Q7: {
    title: 'a namespace is not removed while pods run in it',
    change: 'move or stop the pods of that namespace before removing it from the Project in git',
  },
  F1: {
    title: 'a fleet budget declaration makes sense',
    change: "fix spec.fleet as the message says (Projects are the platform team's, in git)",
  },
  F2: {
    title: 'a cluster grows beyond its share only with room the hub moved to it',
    change:
      "ask for no more than this cluster's share, free room on the clusters the message names, or ask the " +
      'platform team to raise spec.fleet.quota.hard in git',
  },
  B1: {
    title: "a burst's declaration makes sense",
    change:
      'ask the platform team to fix the burst in git: RFC 3339 from before until, a unique name, resources the ' +
      'project budgets, a declared namespace',
  },
  B2: {
    title: 'a burst that has ended cannot be added or changed',
    change: 'keep the ended burst as it was (or remove it) and ask for a new burst, with a new name, in a pull request',
  },
  C1: {
    title: "the allocation's monthly cost stays within `spec.costBudget.monthly`",
    change:
      'ask for less than the cost budget leaves (`kubectl tenantgate headroom` shows the cost), free room ' +
      'elsewhere in the project, or ask the platform team to raise spec.costBudget.monthly in git',
  },
  D1: {
    title: 'only subjects allowed `confirm-deletion` on a Project confirm its deletion',
    change:
      "nothing a tenant changes: a platform admin confirms a Project's deletion " +
      "when its namespaces' data may go (docs/deletion.md)",
  },
  D2: {
    title: 'too many Projects deleting at once pause every cascade',
    change:
      'nothing a tenant changes: an operator checks what is being deleted, ' +
      'then resumes (kubectl tenantgate resume-deletions)',
  },
  D3: {
    title: 'the Project CRD is not deleted while a Project exists',
    change:
      'delete the Projects first, or annotate the CRD tenantgate.io/allow-deletion=true ' +
      'before deleting it (docs/deletion.md)',
  },
  D4: {
    title: 'a change that removes a Project says what goes and what will be asked',
    change: 'a warning: check what the removal deletes before merging; keep the Project in git if its data must stay',
  },
  F3: {
    title: 'the hub stores only what a member may write to its share record',
    change:
      "nothing a tenant changes: a member cluster's write to the hub was refused; tell the platform team " +
      '(docs/fleet.md)',
  },
  X1: {
    title: "a pod's PriorityClass is allowed for its project",
    change:
      'use a PriorityClass the message lists (or none), or ask the platform team to add it to ' +
      'spec.allow.priorityClasses in git',
  },
  X2: {
    title: "a Service's externalIPs lie in the project's CIDRs",
    change:
      'use an address in the CIDRs the message lists, or none, or ask the platform team to add a CIDR to ' +
      'spec.allow.services.externalIPs in git',
  },
  X3: {
    title: "a Service's type is allowed",
    change:
      'use a type the message lists (ClusterIP, or an Ingress or route for outside traffic), or ask the platform ' +
      'team to add it to spec.allow.services.types in git',
  },
  X4: {
    title: 'a LoadBalancer is reachable only from the declared source ranges',
    change: 'set spec.loadBalancerSourceRanges inside the CIDRs the message lists',
  },
  X5: {
    title: 'a PersistentVolumeClaim names an allowed StorageClass',
    change:
      'use a StorageClass the message lists, or ask the platform team to add it to spec.allow.storageClasses in git',
  },
  X6: {
    title: 'a pod names an allowed RuntimeClass',
    change:
      'use a RuntimeClass the message lists, or ask the platform team to add it to spec.allow.runtimeClasses in git',
  },
  X7: {
    title: 'a claim requests only allowed DeviceClasses',
    change:
      'request a DeviceClass the message lists, or ask the platform team to add it to spec.allow.deviceClasses in git',
  },
  X8: {
    title: "a pod stays on the project's nodes",
    change: 'give the pod template the node selector the message names, no nodeName, and only the tolerations it lists',
  },
  X9: {
    title: 'images come from allowed registries',
    change:
      'use an image from a registry the message lists, or ask the platform team to add it to ' +
      'spec.allow.registries in git',
  },
  X10: {
    title: 'a claim binds only PersistentVolumes of its project',
    change:
      'name a PersistentVolume of the project (label tenantgate.io/project, or claimed from its namespaces), ' +
      'select with matchLabels tenantgate.io/project: <project>, or leave volumeName out and let a StorageClass ' +
      'provision one',
  },
  H1: {
    title: "hostnames lie under the project's suffixes",
    change:
      "use a hostname under the project's suffixes the message lists (no wildcard unless allowed), or ask the " +
      'platform team for a suffix in git',
  },
  H2: {
    title: 'an Ingress names an allowed IngressClass',
    change: 'name an IngressClass the message lists in spec.ingressClassName',
  },
  H4: {
    title: 'a Gateway names an allowed GatewayClass',
    change:
      'name a GatewayClass the message lists in spec.gatewayClassName, or ask the platform team to add it to ' +
      'spec.allow.gatewayClasses in git',
  },
  H3: {
    title: 'hostname suffixes do not overlap across projects',
    change: "pick a hostname suffix no other project's suffix equals, contains or lies under",
  },
};

const GENERIC_HELP: RuleHelp = {
  title: 'see docs/rules.md',
  change: 'read the rule in docs/rules.md; the message says what was refused',
};

export function helpFor(id: RuleId): RuleHelp {
  return RULE_HELP[id] ?? GENERIC_HELP;
}
