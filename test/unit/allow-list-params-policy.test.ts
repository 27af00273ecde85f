/**
 * The ValidatingAdmissionPolicy tenantgate-allow-lists-params (T9, src/validate/policies/allow-list-params-policy.ts):
 * the committed copy is the generated one; it matches every write of an AllowList and lets it through only
 * for a subject that may `manage` allowlists cluster-wide (or for a delete in a terminating namespace).
 * What it does on the real API server: test/e2e/allow-list-params.test.ts.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import {
  ALLOW_LIST_PARAMS_POLICY_NAME,
  ALLOW_LIST_PARAMS_POLICY_PATH,
  PARAMS_POLICY_VALIDATIONS,
  PARAMS_POLICY_VARIABLES,
  renderAllowListParamsPolicyYaml,
} from '../../src/validate/policies/allow-list-params-policy.js';

const variable = (name: string) => PARAMS_POLICY_VARIABLES.find((v) => v.name === name)?.expression;

describe('ValidatingAdmissionPolicy tenantgate-allow-lists-params', () => {
  it('the committed policy is the generated one, byte for byte', () => {
    const committed = readFileSync(new URL(`../../${ALLOW_LIST_PARAMS_POLICY_PATH}`, import.meta.url), 'utf8');
    const hint = `${ALLOW_LIST_PARAMS_POLICY_PATH} differs from its generator: run \`make crd\` and commit the result`;
    expect(committed === renderAllowListParamsPolicyYaml(), hint).toBe(true);
  });

  it('matches CREATE, UPDATE and DELETE of allowlists in every namespace, failing closed, with a Deny binding', () => {
    const [policy, binding, ...rest] = parseAllDocuments(renderAllowListParamsPolicyYaml()).map((d) => d.toJS());
    expect(rest).toEqual([]);
    expect(policy.metadata.name).toBe(ALLOW_LIST_PARAMS_POLICY_NAME);
    expect(policy.spec.failurePolicy).toBe('Fail');
    const operations = ['CREATE', 'UPDATE', 'DELETE'];
    const rule = { apiGroups: ['tenantgate.io'], apiVersions: ['*'], operations, resources: ['allowlists'] };
    expect(policy.spec.matchConstraints).toEqual({ resourceRules: [rule] });
    expect(policy.spec.matchConditions).toBeUndefined();
    expect(binding.spec).toEqual({ policyName: ALLOW_LIST_PARAMS_POLICY_NAME, validationActions: ['Deny'] });
  });

  it('asks the authorizer for manage on allowlists with no namespace and no name (cluster-wide), and says [T9]', () => {
    const manage = "authorizer.group('tenantgate.io').resource('allowlists').check('manage').allowed()";
    expect(variable('mayManage')).toBe(manage);
    expect(PARAMS_POLICY_VALIDATIONS).toHaveLength(1);
    expect(PARAMS_POLICY_VALIDATIONS[0]!.expression).toBe(
      'variables.namespaceTerminating || variables.keepsTheParameters || variables.mayManage',
    );
    expect(PARAMS_POLICY_VALIDATIONS[0]!.messageExpression).toMatch(/^'\[T9\] AllowList ' \+ request\.namespace/);
    // The exceptions: a delete, only in a namespace being deleted; an update that keeps spec and labels (the
    // garbage collector removing the foregroundDeletion finalizer of an object Argo CD pruned).
    expect(variable('namespaceTerminating')).toBe(
      "request.operation == 'DELETE' && namespaceObject != null && has(namespaceObject.metadata.deletionTimestamp)",
    );
    expect(variable('keepsTheParameters')).toBe(
      "request.operation == 'UPDATE' && object.spec == oldObject.spec && " +
        '(has(object.metadata.labels) ? object.metadata.labels : {}) == ' +
        '(has(oldObject.metadata.labels) ? oldObject.metadata.labels : {})',
    );
  });
});
