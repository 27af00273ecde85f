import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { MAX_FLEET_MEMBERS } from '../../src/fleet/fleet-budget-crd.js';
import {
  FLEET_POLICY_NAME,
  FLEET_POLICY_PATH,
  POLICY_VALIDATIONS,
  POLICY_VARIABLES,
  renderFleetPolicyYaml,
} from '../../src/fleet/fleet-shares-policy.js';

describe('ValidatingAdmissionPolicy tenantgate-fleet-shares', () => {
  it('the committed policy is the generated one, byte for byte', () => {
    const committed = readFileSync(new URL(`../../${FLEET_POLICY_PATH}`, import.meta.url), 'utf8');
    expect(
      committed === renderFleetPolicyYaml(),
      `${FLEET_POLICY_PATH} differs from src/fleet/fleet-shares-policy.ts: run \`make crd\` and commit the result`,
    ).toBe(true);
  });

  it('is a policy on UPDATE of fleetbudgets and their status, failing closed, with a Deny binding', () => {
    const [policy, binding] = parseAllDocuments(renderFleetPolicyYaml()).map((d) => d.toJS());
    expect(policy.metadata.name).toBe(FLEET_POLICY_NAME);
    expect(policy.spec.failurePolicy).toBe('Fail');
    expect(policy.spec.matchConstraints.resourceRules).toEqual([
      {
        apiGroups: ['tenantgate.io'],
        apiVersions: ['*'],
        operations: ['UPDATE'],
        resources: ['fleetbudgets', 'fleetbudgets/status'],
      },
    ]);
    expect(binding.spec).toEqual({ policyName: FLEET_POLICY_NAME, validationActions: ['Deny'] });
  });

  it('sums every share the CRD allows (one term per member, a balanced tree of add) and carries a rule id in every message', () => {
    const over = POLICY_VARIABLES.find((v) => v.name === 'overBudget')!.expression;
    for (let i = 0; i < MAX_FLEET_MEMBERS; i++) expect(over).toContain(`variables.shareLists[${i}]`);
    expect(over).not.toContain(`variables.shareLists[${MAX_FLEET_MEMBERS}]`);
    // No float arithmetic: quantities are compared exactly.
    expect(over).not.toContain('asApproximateFloat');
    let depth = 0;
    let deepest = 0;
    for (const ch of over) {
      if (ch === '(') deepest = Math.max(deepest, ++depth);
      if (ch === ')') depth--;
    }
    expect(deepest).toBeLessThan(30);
    for (const v of POLICY_VALIDATIONS) expect(v.messageExpression).toMatch(/^'\[F[23]\] '/);
  });
});
