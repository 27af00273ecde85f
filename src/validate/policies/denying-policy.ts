/** The chart's ValidatingAdmissionPolicies: a policy that fails closed with the binding that makes it deny, as YAML. */
import { stringify } from 'yaml';
import { API_GROUP } from '../types.js';

export interface DenyingPolicy {
  /** The policy's name, its binding's too. */
  name: string;
  /** `app.kubernetes.io/component` of both objects. */
  component: string;
  paramKind?: Record<string, unknown>;
  matchConstraints: Record<string, unknown>;
  variables?: unknown[];
  validations: unknown[];
  /** The binding's parameters (a policy with `paramKind`). */
  paramRef?: Record<string, unknown>;
}

/** A resource rule matching `operations` on `resources` of tenantgate's API group, in every version. */
export function tenantgateResources(operations: string[], resources: string[]): Record<string, unknown> {
  return { apiGroups: [API_GROUP], apiVersions: ['*'], operations, resources };
}

/** The policy (failurePolicy Fail) followed by its binding (validationActions Deny). */
export function denyingPolicy(policy: DenyingPolicy): Record<string, unknown>[] {
  const { name, paramKind, matchConstraints, variables, validations, paramRef } = policy;
  const labels = { 'app.kubernetes.io/name': 'tenantgate', 'app.kubernetes.io/component': policy.component };
  return [
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name, labels },
      spec: {
        failurePolicy: 'Fail',
        ...(paramKind ? { paramKind } : {}),
        matchConstraints,
        ...(variables ? { variables } : {}),
        validations,
      },
    },
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name, labels },
      spec: { policyName: name, ...(paramRef ? { paramRef } : {}), validationActions: ['Deny'] },
    },
  ];
}

/** The chart file: `header`, then the documents as block YAML, no line folded, no aliases. */
export function renderPolicyYaml(header: string, docs: Record<string, unknown>[]): string {
  const options = { lineWidth: 0, minContentWidth: 0, indent: 2, indentSeq: true, aliasDuplicateObjects: false };
  return header + docs.map((doc) => stringify(doc, options)).join('---\n');
}
