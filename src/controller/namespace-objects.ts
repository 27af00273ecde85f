/**
 * The objects the controller keeps in every project namespace, each with the pure function that says
 * what it must be (shared with render) and how to tell that a stored one already is that.
 */
import {
  describeIsolationPolicy,
  isolationPolicyFor,
  isolationPolicyMatches,
  limitRangeFor,
  limitRangeMatches,
  LIMITRANGE_NAME,
  NETWORK_POLICY_NAME,
} from '../render/namespace-policies.js';
import { ownerBinding, ownerBindingMatches, OWNERS_BINDING_NAME } from '../render/owner-binding.js';
import { ALLOW_LIST_NAME, allowListFor, allowListMatches } from '../validate/allow-list-params.js';
import type { Project } from '../validate/types.js';
import type { TenantgateConfig } from '../config/config.js';
import type { CachedObject, ManagedKind } from './managed-objects.js';

type Desired = { kind: ManagedKind; metadata: { name: string; namespace: string; labels: Record<string, string> } };

export interface NamespaceObjectKind<T extends Desired = Desired> {
  kind: ManagedKind;
  name: string;
  /** What the Project says, for messages about an object it no longer declares. */
  declaredBy: string;
  /** `config`: tenantgate.yaml (its `network` defaults the isolation policy). */
  desired(project: Project, namespace: string, config: TenantgateConfig): T | undefined;
  matches(actual: CachedObject, desired: T): boolean;
  describe(desired: T): string;
}

function kind<T extends Desired>(k: NamespaceObjectKind<T>): NamespaceObjectKind {
  return k as unknown as NamespaceObjectKind;
}

export const NAMESPACE_OBJECTS: readonly NamespaceObjectKind[] = [
  // The allow-list policies' parameters: always there (a namespace without them admits none of the objects they judge).
  // First, before the owners' RoleBinding: once the owners may create pods, the parameters that judge them exist.
  kind({
    kind: 'AllowList',
    name: ALLOW_LIST_NAME,
    declaredBy: 'spec.allow',
    desired: (project: Project, namespace: string, config: TenantgateConfig) =>
      allowListFor(config, project, namespace),
    matches: (actual, desired) => allowListMatches(actual, desired),
    describe: () => "spec.allow over tenantgate.yaml's allow",
  }),
  kind({
    kind: 'RoleBinding',
    name: OWNERS_BINDING_NAME,
    declaredBy: 'spec.owners',
    desired: ownerBinding,
    matches: (actual, desired) => ownerBindingMatches(actual as never, desired),
    describe: (b) => `${b.subjects.length} owners, ClusterRole ${b.roleRef.name}`,
  }),
  kind({
    kind: 'LimitRange',
    name: LIMITRANGE_NAME,
    declaredBy: 'spec.namespaceDefaults.limitRange',
    desired: limitRangeFor,
    matches: (actual, desired) => limitRangeMatches(actual as never, desired),
    describe: () => 'spec.namespaceDefaults.limitRange',
  }),
  kind({
    kind: 'NetworkPolicy',
    name: NETWORK_POLICY_NAME,
    declaredBy: 'spec.networkIsolation',
    desired: (project: Project, namespace: string, config: TenantgateConfig) =>
      isolationPolicyFor(project, namespace, config.network),
    matches: (actual, desired) => isolationPolicyMatches(actual as never, desired),
    describe: describeIsolationPolicy,
  }),
];
