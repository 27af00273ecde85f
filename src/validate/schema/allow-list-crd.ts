/**
 * The CustomResourceDefinition `allowlists.tenantgate.io`: the parameters of the allow-list
 * ValidatingAdmissionPolicies, one `AllowList` per project namespace (src/validate/allow-list-params.ts,
 * docs/adr/0095-allow-lists-in-the-api-server.md). No status: the controller and Argo CD write the spec,
 * nothing reports on it.
 *
 * `make crd` (hack/generate-crd.ts) writes it to ALLOW_LIST_CRD_PATH; a unit test fails when the committed
 * copy differs. Every field is required (the writers always give all of them, so the policies need no
 * `has()`), every list and map has maxItems/maxProperties and every string a maxLength, so the CEL that
 * walks the lists has a bounded cost.
 */
import { ALLOW_LIST_KIND, ALLOW_LIST_PLURAL } from '../allow-list-params.js';
import { crdYaml, customResourceDefinition } from './crd.js';
import type { StructuralSchema } from './project-schema.js';

export const ALLOW_LIST_CRD_PATH = 'charts/tenantgate/files/crd/allowlists.tenantgate.io.yaml';

/** The most entries of one list (class names, CIDRs, hostname suffixes, registry prefixes). */
const MAX_ALLOW_LIST_ITEMS = 256;
/** The most allowed tolerations, and the most keys of the required nodeSelector. */
const MAX_ALLOW_LIST_TOLERATIONS = 64;
const MAX_ALLOW_LIST_NODE_SELECTOR = 64;

const HEADER =
  '# generated from src/validate/schema/allow-list-crd.ts by hack/generate-crd.ts, ' +
  'do not edit (regenerate with `make crd`)\n';

const string = (maxLength: number, description?: string): StructuralSchema => ({
  type: 'string',
  maxLength,
  ...(description ? { description } : {}),
});
const strings = (maxLength: number, description: string): StructuralSchema => ({
  type: 'array',
  description,
  maxItems: MAX_ALLOW_LIST_ITEMS,
  items: string(maxLength),
});
const object = (description: string, properties: Record<string, StructuralSchema>): StructuralSchema => ({
  type: 'object',
  description,
  required: Object.keys(properties),
  properties,
});
const bool = (description: string): StructuralSchema => ({ type: 'boolean', description });
/** `{any, names}`: a list of object names, or any name. */
const nameList = (description: string): StructuralSchema =>
  object(description, {
    any: bool('Every name is allowed (the Project and tenantgate.yaml leave the list unset); names is then empty.'),
    names: strings(253, 'The names allowed.'),
  });

const CIDR_LENGTH = 64;

const SPEC_DESCRIPTION =
  "The Project's allow-lists over tenantgate.yaml's allow, every list resolved (written by tenantgate).";

const specSchema: StructuralSchema = object(SPEC_DESCRIPTION, {
  project: string(63, 'The project of the namespace.'),
  tenant: string(63, "The project's tenant."),
  priorityClasses: nameList('PriorityClasses a pod may name (X1); any: every class but system-*.'),
  systemPriorityClasses: strings(253, 'The system-* PriorityClasses the Project itself names (X1).'),
  services: object('What Services may expose (X2-X4).', {
    types: {
      type: 'array',
      description: 'Service types allowed besides ClusterIP (X3).',
      maxItems: 3,
      items: { type: 'string', enum: ['NodePort', 'LoadBalancer', 'ExternalName'] },
    },
    externalIPs: strings(
      CIDR_LENGTH,
      'CIDRs of the externalIPs, loadBalancerIP and Gateway addresses a tenant may claim (X2).',
    ),
    loadBalancerSourceRanges: object('The source ranges a LoadBalancer Service may open to (X4).', {
      any: bool('Any range (and none) is allowed; cidrs is then empty.'),
      cidrs: strings(CIDR_LENGTH, 'CIDRs each source range lies inside.'),
    }),
  }),
  hostnames: object('Hostnames of Ingresses, Gateways and routes (H1).', {
    suffixes: strings(253, 'DNS suffixes: a hostname is one of them or under one.'),
    wildcards: bool('Whether a hostname may be a wildcard *.x (x under a suffix).'),
  }),
  ingressClasses: nameList('IngressClasses an Ingress may name (H2).'),
  gatewayClasses: nameList('GatewayClasses a Gateway may name (H4).'),
  storageClasses: nameList('StorageClasses a PersistentVolumeClaim may name (X5).'),
  runtimeClasses: nameList('RuntimeClasses a pod may name (X6).'),
  deviceClasses: nameList('DeviceClasses a ResourceClaim may request (X7).'),
  nodeSelector: {
    type: 'object',
    description: 'Labels every pod selects in spec.nodeSelector, with these values (X8).',
    maxProperties: MAX_ALLOW_LIST_NODE_SELECTOR,
    additionalProperties: string(63),
  },
  tolerations: {
    type: 'array',
    description: 'Tolerations a pod or a device request may carry (X8), every field given.',
    maxItems: MAX_ALLOW_LIST_TOLERATIONS,
    items: object('An allowed toleration: same key, operator, value (with Equal); effect "" covers every effect.', {
      key: string(316),
      operator: { type: 'string', enum: ['Exists', 'Equal'] },
      value: string(253),
      effect: { type: 'string', enum: ['', 'NoSchedule', 'PreferNoSchedule', 'NoExecute'] },
    }),
  },
  registries: object('Where images may come from (X9).', {
    any: bool('Any image is allowed; prefixes is then empty.'),
    prefixes: strings(
      512,
      'Image prefixes: one ending in / matches what starts with it; another the image itself or continuing ' +
        'with /, or with : or @ when it names a repository.',
    ),
  }),
  persistentVolumes: object('Which PersistentVolumes a claim may bind (X10).', {
    unowned: bool('Whether a claim may name a PersistentVolume of no project.'),
  }),
});

export function allowListCrd(): Record<string, unknown> {
  return customResourceDefinition({
    kind: ALLOW_LIST_KIND,
    plural: ALLOW_LIST_PLURAL,
    singular: 'allowlist',
    shortNames: [],
    scope: 'Namespaced',
    printerColumns: [
      { name: 'Project', type: 'string', jsonPath: '.spec.project' },
      { name: 'Tenant', type: 'string', jsonPath: '.spec.tenant' },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ],
    statusSubresource: false,
    schema: {
      type: 'object',
      description:
        "A project namespace's allow-lists, the parameters of the policies tenantgate-allow-* " +
        '(docs/rules.md#allow-lists).',
      required: ['spec'],
      properties: {
        apiVersion: { type: 'string' },
        kind: { type: 'string' },
        metadata: { type: 'object' },
        spec: specSchema,
      },
    },
  });
}

/** The CRD as YAML: keys sorted, no line folding, so the output is stable byte for byte. */
export function renderAllowListCrdYaml(): string {
  return crdYaml(HEADER, allowListCrd());
}
