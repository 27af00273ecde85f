/**
 * `make crd`: prints a generated API object: the Project CRD (src/validate/schema); with the argument
 * `fleet` the FleetBudget CRD (src/fleet/fleet-budget-crd.ts); with `fleet-policy` the hub's
 * ValidatingAdmissionPolicy tenantgate-fleet-shares and its binding (src/fleet/fleet-shares-policy.ts); with
 * `allow-list` the AllowList CRD (src/validate/schema/allow-list-crd.ts); with `allow-list-params-policy` the
 * ValidatingAdmissionPolicy tenantgate-allow-lists-params and its binding (src/validate/policies/allow-list-params-policy.ts);
 * with `allow-lists-policy` the allow-list policies tenantgate-allow-* and their bindings
 * (src/validate/policies/allow-lists-policy.ts); with `deletion-policies` the policies tenantgate-deletion-confirmation
 * and tenantgate-project-crd-protection and their bindings (src/validate/policies/deletion-policies.ts).
 */
import { renderFleetCrdYaml } from '../src/fleet/fleet-budget-crd.js';
import { renderFleetPolicyYaml } from '../src/fleet/fleet-shares-policy.js';
import { renderCrdYaml } from '../src/validate/schema/crd.js';
import { renderAllowListCrdYaml } from '../src/validate/schema/allow-list-crd.js';
import { renderAllowListParamsPolicyYaml } from '../src/validate/policies/allow-list-params-policy.js';
import { renderAllowListPoliciesYaml } from '../src/validate/policies/allow-lists-policy.js';
import { renderDeletionPoliciesYaml } from '../src/validate/policies/deletion-policies.js';

const generators: Record<string, () => string> = { fleet: renderFleetCrdYaml, 'fleet-policy': renderFleetPolicyYaml };
generators['allow-list'] = renderAllowListCrdYaml;
generators['allow-list-params-policy'] = renderAllowListParamsPolicyYaml;
generators['allow-lists-policy'] = renderAllowListPoliciesYaml;
generators['deletion-policies'] = renderDeletionPoliciesYaml;
process.stdout.write((generators[process.argv[2] ?? ''] ?? renderCrdYaml)());
