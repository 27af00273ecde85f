/**
 * The API server's form of the allow-lists (X1–X10, H1, H2, H4; docs/adr/0095-allow-lists-in-the-api-server.md):
 * the ValidatingAdmissionPolicies `tenantgate-allow-*` and their bindings. Each policy judges one shape of
 * object (the API server type-checks every expression against every kind a policy matches, so kinds with
 * other fields get policies of their own); its parameters are the AllowList `tenantgate-allow` of the
 * object's namespace, and a project namespace without one admits none of the judged objects
 * (parameterNotFoundAction Deny). No match condition: every subject is judged.
 *
 * The offline form of the same rules is src/validate/rules/allow-lists.ts; the CEL of each rule is in
 * the modules beside this one, built from cel.ts. `make crd` (hack/generate-crd.ts) writes the policies
 * to ALLOW_LISTS_POLICY_PATH; a unit test fails when the committed copy differs. The chart's template
 * (charts/tenantgate/templates/policies/allow-lists.yaml) puts the release namespace in place of
 * RELEASE_NAMESPACE_PLACEHOLDER.
 */
import { ALLOW_LIST_KIND, ALLOW_LIST_NAME } from '../allow-list-params.js';
import { API_VERSION, LABEL_NAMESPACE_NAME, LABEL_PROJECT } from '../types.js';
import { SUBJECT, type RuleParts } from './cel.js';
import { denyingPolicy, renderPolicyYaml } from './denying-policy.js';
import { CLAIM_RULES, RESOURCE_CLAIM_RULES, RESOURCE_CLAIM_TEMPLATE_RULES } from './claims-policy.js';
import { GATEWAY_RULES, LISTENER_SET_RULES, ROUTE_RULES, TCP_UDP_ROUTE_RULES } from './gateway-api-policy.js';
import { INGRESS_RULES } from './ingress-policy.js';
import { POD_RULES } from './pods-policy.js';
import { SERVICE_RULES } from './services-policy.js';

export const ALLOW_LISTS_POLICY_PATH = 'charts/tenantgate/files/policies/allow-lists.yaml';
/** Stands for the release namespace in the generated file; the chart's template replaces it. */
export const RELEASE_NAMESPACE_PLACEHOLDER = 'RELEASE_NAMESPACE';

const HEADER =
  '# generated from src/validate/policies/allow-lists-policy.ts by hack/generate-crd.ts, do not edit ' +
  '(regenerate with `make crd`).\n' +
  '# The chart (templates/policies/allow-lists.yaml) puts its release namespace in the namespaceSelector.\n';

const GATEWAY_GROUP = 'gateway.networking.k8s.io';
const GATEWAY_EXPERIMENTAL_GROUP = 'gateway.networking.x-k8s.io';

interface ResourceRule {
  apiGroups: string[];
  apiVersions: string[];
  resources: string[];
}

export interface AllowListPolicy {
  name: string;
  /** What it judges, for readers of the policy's labels and of the docs. */
  resourceRules: ResourceRule[];
  rules: RuleParts;
}

/** Resources of one API group in the given versions. */
const resources = (apiGroup: string, apiVersions: string[], ...names: string[]): ResourceRule => ({
  apiGroups: [apiGroup],
  apiVersions,
  resources: names,
});
const core = (...names: string[]) => resources('', ['v1'], ...names);
const gatewayApi = (...names: string[]) => resources(GATEWAY_GROUP, ['*'], ...names);

/**
 * Built-in kinds are matched in the version the rules read (others are converted to it: matchPolicy
 * Equivalent); Gateway API kinds in every version, whose fields these rules read are the same.
 */
export const ALLOW_LIST_POLICIES: AllowListPolicy[] = [
  { name: 'tenantgate-allow-pods', resourceRules: [core('pods', 'pods/ephemeralcontainers')], rules: POD_RULES },
  { name: 'tenantgate-allow-services', resourceRules: [core('services')], rules: SERVICE_RULES },
  {
    name: 'tenantgate-allow-persistentvolumeclaims',
    resourceRules: [core('persistentvolumeclaims')],
    rules: CLAIM_RULES,
  },
  {
    name: 'tenantgate-allow-resourceclaims',
    resourceRules: [resources('resource.k8s.io', ['v1'], 'resourceclaims')],
    rules: RESOURCE_CLAIM_RULES,
  },
  {
    name: 'tenantgate-allow-resourceclaimtemplates',
    resourceRules: [resources('resource.k8s.io', ['v1'], 'resourceclaimtemplates')],
    rules: RESOURCE_CLAIM_TEMPLATE_RULES,
  },
  {
    name: 'tenantgate-allow-ingresses',
    resourceRules: [resources('networking.k8s.io', ['v1'], 'ingresses')],
    rules: INGRESS_RULES,
  },
  { name: 'tenantgate-allow-gateways', resourceRules: [gatewayApi('gateways')], rules: GATEWAY_RULES },
  {
    name: 'tenantgate-allow-listenersets',
    resourceRules: [gatewayApi('listenersets'), resources(GATEWAY_EXPERIMENTAL_GROUP, ['*'], 'xlistenersets')],
    rules: LISTENER_SET_RULES,
  },
  {
    name: 'tenantgate-allow-routes',
    resourceRules: [gatewayApi('httproutes', 'grpcroutes', 'tlsroutes')],
    rules: ROUTE_RULES,
  },
  {
    name: 'tenantgate-allow-tcp-udp-routes',
    resourceRules: [gatewayApi('tcproutes', 'udproutes')],
    rules: TCP_UDP_ROUTE_RULES,
  },
];

/** An update is judged too, for what it adds (cel.ts). */
const OPERATIONS = ['CREATE', 'UPDATE'];

/** Every policy followed by its binding. */
export function allowListPolicyObjects(): Record<string, unknown>[] {
  return ALLOW_LIST_POLICIES.flatMap((policy) =>
    denyingPolicy({
      name: policy.name,
      component: 'policies',
      paramKind: { apiVersion: API_VERSION, kind: ALLOW_LIST_KIND },
      matchConstraints: {
        matchPolicy: 'Equivalent',
        namespaceSelector: {
          matchExpressions: [
            { key: LABEL_PROJECT, operator: 'Exists' },
            { key: LABEL_NAMESPACE_NAME, operator: 'NotIn', values: ['kube-system', RELEASE_NAMESPACE_PLACEHOLDER] },
          ],
        },
        resourceRules: policy.resourceRules.map((r) => ({ ...r, operations: OPERATIONS, scope: 'Namespaced' })),
      },
      variables: [SUBJECT, ...policy.rules.variables],
      validations: policy.rules.validations,
      paramRef: { name: ALLOW_LIST_NAME, parameterNotFoundAction: 'Deny' },
    }),
  );
}

export function renderAllowListPoliciesYaml(): string {
  return renderPolicyYaml(HEADER, allowListPolicyObjects());
}
