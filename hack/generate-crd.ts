/**
 * `make crd`: prints a generated API object: the Project CRD (src/validate/schema); with the argument
 * `fleet` the FleetBudget CRD (src/fleet/fleet-budget-crd.ts); with `fleet-policy` the hub's
 * ValidatingAdmissionPolicy tenantgate-fleet-shares and its binding (src/fleet/fleet-shares-policy.ts).
 */
import { renderFleetCrdYaml } from '../src/fleet/fleet-budget-crd.js';
import { renderFleetPolicyYaml } from '../src/fleet/fleet-shares-policy.js';
import { renderCrdYaml } from '../src/validate/schema/crd.js';

const generators: Record<string, () => string> = { fleet: renderFleetCrdYaml, 'fleet-policy': renderFleetPolicyYaml };
process.stdout.write((generators[process.argv[2] ?? ''] ?? renderCrdYaml)());
