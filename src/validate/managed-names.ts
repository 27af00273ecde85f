/**
 * The names of the objects tenantgate places in every project namespace (the LimitRange, the isolation
 * NetworkPolicy, the owners' RoleBinding). Domain: the desired-object builders in src/render use them,
 * and so do the rules that protect those objects (protected-objects.ts), which sit below render.
 */
export const LIMITRANGE_NAME = 'tenantgate-limits';
export const NETWORK_POLICY_NAME = 'tenantgate-isolation';
export const OWNERS_BINDING_NAME = 'tenantgate-owners';
