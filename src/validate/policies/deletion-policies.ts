/**
 * The ValidatingAdmissionPolicies of a deletion that loses no data (docs/adr/0096-deletion-loses-no-data.md,
 * docs/deletion.md), inside the API server, no tenantgate process needed:
 *
 * - `tenantgate-deletion-confirmation` (D1): a CREATE or UPDATE of a Project that sets or changes the
 *   annotation `tenantgate.io/deletion-confirmed` (the confirmation the controller waits for before it
 *   deletes namespaces that hold data) is refused unless the requester is allowed the custom verb
 *   `confirm-deletion` on that Project. The chart's ClusterRole `tenantgate-deletion-confirmer` grants it
 *   and is bound to nobody; cluster administrators hold it through their wildcards. Removing the
 *   annotation (withdrawing a confirmation) is not judged.
 * - `tenantgate-project-crd-protection` (D3): a DELETE of the CRD `projects.tenantgate.io` (which deletes
 *   every Project) is refused while any Project exists, unless the CRD carries the annotation
 *   `tenantgate.io/allow-deletion: "true"`. Its binding takes every Project as a parameter (`selector: {}`),
 *   so the policy is evaluated once per Project, and with no Project at all `parameterNotFoundAction:
 *   Allow` lets the delete through.
 *
 * `make crd` (hack/generate-crd.ts `deletion-policies`) writes them to DELETION_POLICIES_PATH; a unit test
 * fails when the committed copy differs. What they do on the real API server: test/e2e/deletion-lifecycle.test.ts.
 */
import { API_GROUP, API_VERSION, PROJECT_KIND } from '../types.js';
import { denyingPolicy, renderPolicyYaml, tenantgateResources } from './denying-policy.js';

const DELETION_CONFIRMATION_POLICY_NAME = 'tenantgate-deletion-confirmation';
const CRD_PROTECTION_POLICY_NAME = 'tenantgate-project-crd-protection';
export const DELETION_POLICIES_PATH = 'charts/tenantgate/files/policies/deletion.yaml';
/** The annotation a platform admin sets to the Project's uid: its namespaces' contents may go (ADR 0096). */
const DELETION_CONFIRMED_ANNOTATION = 'tenantgate.io/deletion-confirmed';
/** The annotation an operator sets to "true" on the Project CRD before deleting it (D3). */
const ALLOW_DELETION_ANNOTATION = 'tenantgate.io/allow-deletion';
/** The custom RBAC verb on projects that lets a subject confirm a Project's deletion (D1). */
const CONFIRM_DELETION_VERB = 'confirm-deletion';
/** The chart's ClusterRole that grants CONFIRM_DELETION_VERB (bound to nobody by default). */
const DELETION_CONFIRMER_ROLE = 'tenantgate-deletion-confirmer';
const PROJECT_CRD_NAME = `projects.${API_GROUP}`;

const HEADER =
  '# generated from src/validate/policies/deletion-policies.ts by hack/generate-crd.ts, ' +
  'do not edit (regenerate with `make crd`)\n';

const K = `'${DELETION_CONFIRMED_ANNOTATION}'`;

export const CONFIRMATION_POLICY_VARIABLES = [
  { name: 'hasNew', expression: `has(object.metadata.annotations) && ${K} in object.metadata.annotations` },
  {
    name: 'hasOld',
    expression:
      `request.operation == 'UPDATE' && has(oldObject.metadata.annotations) && ` +
      `${K} in oldObject.metadata.annotations`,
  },
  // Set (absent before) or changed; a removal sets nothing.
  {
    name: 'setsConfirmation',
    expression:
      `variables.hasNew && (!variables.hasOld || ` +
      `object.metadata.annotations[${K}] != oldObject.metadata.annotations[${K}])`,
  },
  {
    name: 'mayConfirm',
    expression:
      `authorizer.group('${API_GROUP}').resource('projects').name(object.metadata.name)` +
      `.check('${CONFIRM_DELETION_VERB}').allowed()`,
  },
];

export const CONFIRMATION_POLICY_VALIDATIONS = [
  {
    expression: '!variables.setsConfirmation || variables.mayConfirm',
    messageExpression:
      "'[D1] Project ' + object.metadata.name + ': user \"' + request.userInfo.username + " +
      `'" may not set the annotation ${DELETION_CONFIRMED_ANNOTATION} (the confirmation that the data in its ` +
      `namespaces may be deleted); only subjects allowed the verb ${CONFIRM_DELETION_VERB} on ` +
      `projects.${API_GROUP} confirm a deletion (ClusterRole ${DELETION_CONFIRMER_ROLE}, bound by a cluster ` +
      `administrator): see docs/deletion.md'`,
    reason: 'Forbidden',
  },
];

const ALLOWED_BY_MARK =
  `has(oldObject.metadata.annotations) && '${ALLOW_DELETION_ANNOTATION}' in oldObject.metadata.annotations && ` +
  `oldObject.metadata.annotations['${ALLOW_DELETION_ANNOTATION}'] == 'true'`;

export const CRD_PROTECTION_VALIDATIONS = [
  {
    expression: ALLOWED_BY_MARK,
    messageExpression:
      `'[D3] CustomResourceDefinition ${PROJECT_CRD_NAME}: user "' + request.userInfo.username + ` +
      `'" may not delete it while Project ' + params.metadata.name + ' exists: deleting the CRD deletes ` +
      `every Project, and with them their namespaces; delete the Projects first, or annotate the CRD ` +
      (`${ALLOW_DELETION_ANNOTATION}=true (kubectl annotate crd ${PROJECT_CRD_NAME} ${ALLOW_DELETION_ANNOTATION}` +
        `=true) `) +
      `and delete it again: see docs/deletion.md'`,
    reason: 'Forbidden',
  },
];

function deletionPolicies(): Record<string, unknown>[] {
  return [
    ...denyingPolicy({
      name: DELETION_CONFIRMATION_POLICY_NAME,
      component: 'policies',
      matchConstraints: { resourceRules: [tenantgateResources(['CREATE', 'UPDATE'], ['projects'])] },
      variables: CONFIRMATION_POLICY_VARIABLES,
      validations: CONFIRMATION_POLICY_VALIDATIONS,
    }),
    ...denyingPolicy({
      name: CRD_PROTECTION_POLICY_NAME,
      component: 'policies',
      paramKind: { apiVersion: API_VERSION, kind: PROJECT_KIND },
      matchConstraints: {
        resourceRules: [
          {
            apiGroups: ['apiextensions.k8s.io'],
            apiVersions: ['*'],
            operations: ['DELETE'],
            resources: ['customresourcedefinitions'],
            resourceNames: [PROJECT_CRD_NAME],
          },
        ],
      },
      validations: CRD_PROTECTION_VALIDATIONS,
      // Every Project is a parameter: one refusal per Project while any exists, none when there is none.
      paramRef: { selector: {}, parameterNotFoundAction: 'Allow' },
    }),
  ];
}

export function renderDeletionPoliciesYaml(): string {
  return renderPolicyYaml(HEADER, deletionPolicies());
}
