/**
 * The CustomResourceDefinition `fleetbudgets.tenantgate.io`: the hub's share record of one
 * fleet-budgeted Project (docs/adr/0039-fleet-budgets.md).
 *
 * `make crd` (hack/generate-crd.ts) writes it to FLEET_CRD_PATH; a unit test fails when the committed
 * copy differs. The schema is structural and bounded (maxProperties/maxItems) so that the
 * ValidatingAdmissionPolicy `tenantgate-fleet-shares`, which walks it in CEL, has a bounded cost.
 */
import { crdYaml, customResourceDefinition } from '../validate/schema/crd.js';
import { quantitySchema, resourceSchema, type StructuralSchema } from '../validate/schema/project-schema.js';
import { FLEET_KIND, FLEET_PLURAL } from './fleet-budget-object.js';

export const FLEET_CRD_PATH = 'charts/tenantgate/files/crd/fleetbudgets.tenantgate.io.yaml';

/** The most members a FleetBudget names, and the most resources a budget lists (bounds CEL's cost). */
export const MAX_FLEET_MEMBERS = 64;
const MAX_FLEET_RESOURCES = 32;

const HEADER =
  '# generated from src/fleet/fleet-budget-crd.ts by hack/generate-crd.ts, do not edit (regenerate with `make crd`)\n';

const resourceList = (description: string): StructuralSchema => ({
  type: 'object',
  description,
  maxProperties: MAX_FLEET_RESOURCES,
  additionalProperties: quantitySchema(),
});

const clusterName = (): StructuralSchema => ({ type: 'string', minLength: 1, maxLength: 63 });

const specSchema: StructuralSchema = {
  type: 'object',
  description: "From git: rendered for the hub from the Project's spec.fleet (Argo CD applies it).",
  required: ['budget', 'members'],
  properties: {
    budget: resourceList(
      "The fleet budget (the Project's spec.fleet.quota.hard): the members' shares never sum to more.",
    ),
    members: {
      type: 'array',
      description: "The member clusters (the Project's spec.fleet.clusters): only they may be granted room.",
      maxItems: MAX_FLEET_MEMBERS,
      'x-kubernetes-list-type': 'set',
      items: clusterName(),
    },
    bounds: {
      type: 'object',
      description:
        'Per member, the upper bound of its share (its spec.clusters.<name>.quota.hard, else spec.quota.hard).',
      maxProperties: MAX_FLEET_MEMBERS,
      additionalProperties: resourceList('Resource name to the most this member may hold.'),
    },
  },
};

const statusSchema: StructuralSchema = {
  type: 'object',
  description:
    'The share record: written by members (and the operator) through fleetbudgets/status with the ' +
    'resourceVersion they read.',
  properties: {
    members: {
      type: 'object',
      description: 'Per member cluster, its share; a member without an entry holds nothing.',
      maxProperties: MAX_FLEET_MEMBERS,
      additionalProperties: {
        type: 'object',
        properties: {
          share: resourceList('The most this member may enforce (less what it lends).'),
          lendable: resourceList('The part of share the member no longer enforces and lets other members take.'),
          lastRequest: {
            type: 'string',
            maxLength: 253,
            description: 'The idempotency key of the last write of this member the ledger applied.',
          },
        },
      },
    },
    released: {
      type: 'object',
      description:
        'Members an operator released (kubectl tenantgate fleet release): their writes are refused for good.',
      maxProperties: MAX_FLEET_MEMBERS,
      additionalProperties: {
        type: 'object',
        required: ['at', 'by'],
        properties: {
          at: { type: 'string', format: 'date-time', description: 'When the member was released.' },
          by: { type: 'string', description: 'Who released it (the operator user name).' },
        },
      },
    },
  },
};

export function fleetBudgetCrd(): Record<string, unknown> {
  return customResourceDefinition({
    kind: FLEET_KIND,
    plural: FLEET_PLURAL,
    singular: 'fleetbudget',
    shortNames: ['fb'],
    scope: 'Namespaced',
    printerColumns: [
      { name: 'Budget', type: 'string', jsonPath: '.spec.budget', description: 'The fleet budget' },
      { name: 'Members', type: 'string', jsonPath: '.spec.members', description: 'The member clusters' },
      {
        name: 'Holders',
        type: 'string',
        jsonPath: '.status.members',
        priority: 1,
        description: "Each member's share and what it lends",
      },
      { name: 'Released', type: 'string', jsonPath: '.status.released', description: 'Members an operator released' },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ],
    schema: resourceSchema(
      "One fleet-budgeted Project's share record on the hub (docs/fleet.md).",
      specSchema,
      statusSchema,
    ),
  });
}

/** The CRD as YAML: keys sorted, no line folding, so the output is stable byte for byte. */
export function renderFleetCrdYaml(): string {
  return crdYaml(HEADER, fleetBudgetCrd());
}
