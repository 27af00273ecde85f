/**
 * `make crd`: prints a CRD generated from its schema module: the Project CRD (src/validate/schema),
 * or with the argument `fleet` the FleetBudget CRD (src/fleet/fleet-budget-crd.ts).
 */
import { renderFleetCrdYaml } from '../src/fleet/fleet-budget-crd.js';
import { renderCrdYaml } from '../src/validate/schema/crd.js';

process.stdout.write(process.argv[2] === 'fleet' ? renderFleetCrdYaml() : renderCrdYaml());
