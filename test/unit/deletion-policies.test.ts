/**
 * The ValidatingAdmissionPolicies tenantgate-deletion-confirmation (D1) and tenantgate-project-crd-protection (D3),
 * src/validate/policies/deletion-policies.ts: the committed copy is the generated one; D1 matches Project CREATE and
 * UPDATE and asks the authorizer for confirm-deletion on the named Project; D3 matches only the DELETE of the Project
 * CRD, takes every Project as a parameter and lets the delete through when there is none.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import {
  CONFIRMATION_POLICY_VALIDATIONS,
  CONFIRMATION_POLICY_VARIABLES,
  CRD_PROTECTION_VALIDATIONS,
  DELETION_POLICIES_PATH,
  renderDeletionPoliciesYaml,
} from '../../src/validate/policies/deletion-policies.js';

const docs = () => parseAllDocuments(renderDeletionPoliciesYaml()).map((d) => d.toJS());

describe('deletion policies (D1, D3)', () => {
  it('the committed policies are the generated ones, byte for byte', () => {
    const committed = readFileSync(new URL(`../../${DELETION_POLICIES_PATH}`, import.meta.url), 'utf8');
    expect(committed === renderDeletionPoliciesYaml(), `${DELETION_POLICIES_PATH}: run \`make crd\``).toBe(true);
  });

  it('D1: Project CREATE and UPDATE, confirm-deletion on the named Project, [D1]', () => {
    const [policy, binding] = docs();
    expect(policy.metadata.name).toBe('tenantgate-deletion-confirmation');
    expect(policy.spec.failurePolicy).toBe('Fail');
    expect(policy.spec.matchConstraints.resourceRules).toEqual([
      { apiGroups: ['tenantgate.io'], apiVersions: ['*'], operations: ['CREATE', 'UPDATE'], resources: ['projects'] },
    ]);
    expect(CONFIRMATION_POLICY_VARIABLES.find((v) => v.name === 'mayConfirm')?.expression).toBe(
      "authorizer.group('tenantgate.io').resource('projects').name(object.metadata.name).check('confirm-deletion').allowed()",
    );
    expect(CONFIRMATION_POLICY_VALIDATIONS[0]!.expression).toBe('!variables.setsConfirmation || variables.mayConfirm');
    expect(CONFIRMATION_POLICY_VALIDATIONS[0]!.messageExpression).toMatch(
      /^'\[D1\] Project ' \+ object\.metadata\.name/,
    );
    expect(binding.spec).toEqual({ policyName: 'tenantgate-deletion-confirmation', validationActions: ['Deny'] });
  });

  it('D3: DELETE of projects.tenantgate.io only, every Project a parameter, none: allowed; [D3]', () => {
    const [, , policy, binding, ...rest] = docs();
    expect(rest).toEqual([]);
    expect(policy.spec.paramKind).toEqual({ apiVersion: 'tenantgate.io/v1alpha1', kind: 'Project' });
    expect(policy.spec.matchConstraints.resourceRules).toEqual([
      {
        apiGroups: ['apiextensions.k8s.io'],
        apiVersions: ['*'],
        operations: ['DELETE'],
        resources: ['customresourcedefinitions'],
        resourceNames: ['projects.tenantgate.io'],
      },
    ]);
    expect(CRD_PROTECTION_VALIDATIONS[0]!.expression).toContain(
      "oldObject.metadata.annotations['tenantgate.io/allow-deletion'] == 'true'",
    );
    expect(CRD_PROTECTION_VALIDATIONS[0]!.messageExpression).toMatch(/^'\[D3\] CustomResourceDefinition/);
    expect(binding.spec.paramRef).toEqual({ selector: {}, parameterNotFoundAction: 'Allow' });
    expect(binding.spec.validationActions).toEqual(['Deny']);
  });
});
