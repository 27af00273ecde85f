/**
 * S1 for the CIDRs a Project declares (and tenantgate.yaml, whose `network` and `allow` have the same
 * shapes): each is a CIDR in the canonical form Kubernetes 1.36+ stores. The schema only checks their
 * shape; a CIDR with host bits set (10.0.0.1/8) would pass it, render into the isolation NetworkPolicy
 * and be refused there by the apiserver, so the Argo CD sync and the controller's write would fail
 * instead of the declaration. Pure.
 */
import { cidrProblem } from '../cidr.js';
import type { AllowLists, NetworkBaseline, Project, Violation } from '../types.js';

/** What declares CIDRs: a Project's spec, or tenantgate.yaml (its defaults). */
export interface CidrDeclarations {
  network?: NetworkBaseline | undefined;
  allow?: AllowLists | undefined;
}

/** Where CIDRs are declared, relative to the declarations. */
const CIDR_LISTS: ReadonlyArray<{ path: readonly string[]; read: (d: CidrDeclarations) => unknown }> = [
  { path: ['network', 'egress', 'cidrs'], read: (d) => d.network?.egress?.cidrs },
  { path: ['allow', 'services', 'externalIPs'], read: (d) => d.allow?.services?.externalIPs },
  { path: ['allow', 'services', 'loadBalancerSourceRanges'], read: (d) => d.allow?.services?.loadBalancerSourceRanges },
];

export interface NonCanonicalCidr {
  /** The list's path relative to the declarations, and the index in it. */
  path: readonly string[];
  index: number;
  value: string;
  problem: string;
}

/** Every declared CIDR that is not in canonical form (entries that are not strings are the schema's). */
export function nonCanonicalCidrs(declarations: CidrDeclarations): NonCanonicalCidr[] {
  const out: NonCanonicalCidr[] = [];
  for (const { path, read } of CIDR_LISTS) {
    const list = read(declarations);
    if (!Array.isArray(list)) continue;
    list.forEach((value: unknown, index) => {
      if (typeof value !== 'string') return;
      const problem = cidrProblem(value);
      if (problem) out.push({ path, index, value, problem });
    });
  }
  return out;
}

export function checkCanonicalCidrs(project: Project): Violation[] {
  const name = project.metadata?.name ?? '';
  return nonCanonicalCidrs(project.spec).map(({ path, index, value, problem }) => ({
    rule: 'S1',
    path: ['spec', ...path, index],
    message: `Project ${name}: spec.${path.join('.')}[${index}] ${JSON.stringify(value)} ${problem}`,
  }));
}
