/**
 * The ValidatingAdmissionPolicy `tenantgate-allow-lists-params` and its binding (rule T9,
 * docs/adr/0095-allow-lists-in-the-api-server.md): the AllowList objects are the parameters of the
 * allow-list policies, so whoever writes one decides what a project's pods, Services and claims may use.
 * Every create, update and delete of an `allowlists.tenantgate.io` is refused unless its subject may
 * `manage` allowlists cluster-wide: a custom verb that only tenantgate's controller is granted (its
 * ClusterRole) and that cluster administrators hold through their wildcards. The check names no
 * namespace, so a namespaced grant (a tenant's Role with `*` on `*`) never reaches it. RBAC is the first
 * layer (tenants hold no write on allowlists); this is the second, inside the API server.
 *
 * Two exceptions, neither of which changes what the parameters say: a delete in a namespace that is being
 * deleted (the namespace controller empties it, it holds no `manage`, and nothing judged by the allow-lists
 * is created there any more), and an update that keeps the spec and the labels (the garbage collector
 * removing the `foregroundDeletion` finalizer after Argo CD pruned the object with foreground propagation).
 *
 * `make crd` (hack/generate-crd.ts) writes it to ALLOW_LIST_PARAMS_POLICY_PATH; a unit test fails when the
 * committed copy differs.
 */
import { ALLOW_LIST_PLURAL } from '../allow-list-params.js';
import { API_GROUP } from '../types.js';
import { denyingPolicy, renderPolicyYaml, tenantgateResources } from './denying-policy.js';

export const ALLOW_LIST_PARAMS_POLICY_NAME = 'tenantgate-allow-lists-params';
export const ALLOW_LIST_PARAMS_POLICY_PATH = 'charts/tenantgate/files/policies/allow-list-params-policy.yaml';
/** The custom RBAC verb on allowlists that lets a subject write them (granted cluster-wide to the controller). */
const MANAGE_VERB = 'manage';

const HEADER =
  '# generated from src/validate/policies/allow-list-params-policy.ts by hack/generate-crd.ts, ' +
  'do not edit (regenerate with `make crd`)\n';

/** No namespace and no name: the check is cluster-wide. */
const MAY_MANAGE =
  `authorizer.group('${API_GROUP}').resource('${ALLOW_LIST_PLURAL}')` + `.check('${MANAGE_VERB}').allowed()`;
const WHAT = `${ALLOW_LIST_PLURAL}.${API_GROUP}`;

export const PARAMS_POLICY_VARIABLES = [
  // The namespace controller deleting what is left in a terminating namespace.
  {
    name: 'namespaceTerminating',
    expression:
      "request.operation == 'DELETE' && namespaceObject != null && has(namespaceObject.metadata.deletionTimestamp)",
  },
  // The garbage collector finishing a foreground deletion: metadata.finalizers change, the parameters do not.
  {
    name: 'keepsTheParameters',
    expression:
      "request.operation == 'UPDATE' && object.spec == oldObject.spec && " +
      '(has(object.metadata.labels) ? object.metadata.labels : {}) == ' +
      '(has(oldObject.metadata.labels) ? oldObject.metadata.labels : {})',
  },
  { name: 'mayManage', expression: MAY_MANAGE },
];

export const PARAMS_POLICY_VALIDATIONS = [
  {
    expression: 'variables.namespaceTerminating || variables.keepsTheParameters || variables.mayManage',
    messageExpression:
      "'[T9] AllowList ' + request.namespace + '/' + request.name + ': user \"' + request.userInfo.username + " +
      "'\" may not ' + request.operation.lowerAscii() + ' it; only subjects allowed the verb " +
      `${MANAGE_VERB} on ${WHAT} cluster-wide (the tenantgate controller, cluster administrators) write ` +
      "the allow-list parameters of a project namespace; change spec.allow of the Project in git instead'",
    reason: 'Forbidden',
  },
];

function allowListParamsPolicy(): Record<string, unknown>[] {
  return denyingPolicy({
    name: ALLOW_LIST_PARAMS_POLICY_NAME,
    component: 'policies',
    matchConstraints: { resourceRules: [tenantgateResources(['CREATE', 'UPDATE', 'DELETE'], [ALLOW_LIST_PLURAL])] },
    variables: PARAMS_POLICY_VARIABLES,
    validations: PARAMS_POLICY_VALIDATIONS,
  });
}

export function renderAllowListParamsPolicyYaml(): string {
  return renderPolicyYaml(HEADER, allowListParamsPolicy());
}
