/**
 * S1 for the CIDRs a Project declares: each is a CIDR in the canonical form Kubernetes 1.36+ stores.
 * The schema only checks their shape; a CIDR with host bits set (10.0.0.1/8) would pass it, render into
 * the isolation NetworkPolicy and be refused there by the apiserver, so the Argo CD sync and the
 * controller's write would fail instead of the declaration. Pure.
 */
import { cidrProblem } from '../cidr.js';
import type { FieldPath, Project, Violation } from '../types.js';

/** Where a Project declares CIDRs. */
const CIDR_LISTS: ReadonlyArray<{ path: FieldPath; read: (p: Project) => unknown }> = [
  { path: ['spec', 'network', 'egress', 'cidrs'], read: (p) => p.spec.network?.egress?.cidrs },
  { path: ['spec', 'allow', 'services', 'externalIPs'], read: (p) => p.spec.allow?.services?.externalIPs },
  { path: ['spec', 'allow', 'services', 'loadBalancerSourceRanges'], read: (p) => p.spec.allow?.services?.loadBalancerSourceRanges },
];

export function checkCanonicalCidrs(project: Project): Violation[] {
  const name = project.metadata?.name ?? '';
  const out: Violation[] = [];
  for (const { path, read } of CIDR_LISTS) {
    const list = read(project);
    if (!Array.isArray(list)) continue;
    list.forEach((value: unknown, i) => {
      if (typeof value !== 'string') return;
      const problem = cidrProblem(value);
      if (problem) out.push({ rule: 'S1', path: [...path, i], message: `Project ${name}: ${path.join('.')}[${i}] ${JSON.stringify(value)} ${problem}` });
    });
  }
  return out;
}
