/**
 * The project whose pods the allow-list benches create (allow-lists, policy-cost): every kind of list a pod
 * is judged by (priority and runtime classes, a node selector, a registry), plus a storage class.
 */
import type { Project } from '../../src/validate/types.js';

export const ALLOW_BENCH_PROJECT_NAME = 'ballow';
export const ALLOW_BENCH_NAMESPACE = `${ALLOW_BENCH_PROJECT_NAME}-app`;
/** The node selector the Project requires and the benches' pods carry. */
export const ALLOW_BENCH_POOL = { pool: ALLOW_BENCH_PROJECT_NAME };

export const ALLOW_BENCH_PROJECT: Project = {
  apiVersion: 'tenantgate.io/v1alpha1',
  kind: 'Project',
  metadata: { name: ALLOW_BENCH_PROJECT_NAME },
  spec: {
    tenant: 'acme',
    owners: [{ kind: 'User', name: 'alice' }],
    allow: {
      priorityClasses: ['bench-batch'],
      runtimeClasses: ['gvisor'],
      storageClasses: ['standard'],
      nodePlacement: { nodeSelector: ALLOW_BENCH_POOL },
      registries: ['registry.k8s.io/'],
    },
  },
};
