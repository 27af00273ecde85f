/**
 * The JSON Schema of the Project (tenantgate.io/v1alpha1), written once.
 *
 * It is a Kubernetes *structural* schema: it is emitted verbatim as the CRD's `openAPIV3Schema`
 * (crd.ts) and ajv validates documents with it offline (validate-schema.ts). Hence:
 * `type` on every node, no `$ref`, `additionalProperties` only as the value schema of maps,
 * quantities as `x-kubernetes-int-or-string` with the Kubernetes quantity pattern, metadata left as
 * a bare `type: object` (the apiserver owns it; N1 checks the name).
 *
 * Do not add `additionalProperties: false` here (forbidden beside `properties` in a structural
 * schema); the offline validator closes the spec objects itself to report unknown fields.
 */
import { POD_SECURITY_LEVELS } from '../pod-security.js';

/** The subset of JSON Schema (plus Kubernetes extensions) that a structural schema may use. */
export interface StructuralSchema {
  type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  description?: string;
  properties?: Record<string, StructuralSchema>;
  additionalProperties?: StructuralSchema;
  items?: StructuralSchema;
  required?: string[];
  enum?: Array<string | number | boolean>;
  pattern?: string;
  format?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  maxItems?: number;
  maxProperties?: number;
  anyOf?: StructuralSchema[];
  'x-kubernetes-int-or-string'?: true;
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-map-type'?: 'granular' | 'atomic';
  'x-kubernetes-validations'?: Array<{
    rule: string;
    message?: string;
    messageExpression?: string;
    reason?: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate';
    fieldPath?: string;
  }>;
}

/**
 * Kubernetes `resource.Quantity` syntax (apimachinery's validation regex); exact parsing lives in the quantity module.
 */
export const QUANTITY_PATTERN =
  '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))' +
  '(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$';

/** An amount of money: a decimal with at most 2 decimals (spec.costBudget.monthly). */
const MONEY_PATTERN = '^(0|[1-9][0-9]*)(\\.[0-9]{1,2})?$';

/** DNS-1123 label (without the length limit, which is a separate maxLength). */
const DNS1123_LABEL_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';

/** An IPv4 or IPv6 CIDR (its address and prefix length are checked by src/validate/allow-lists.ts). */
const CIDR_PATTERN = '^[0-9a-fA-F:.]+/[0-9]{1,3}$';
/** A DNS subdomain (lower case) without a wildcard: a hostname suffix. */
const DNS_SUFFIX_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';

/** metav1.Condition's reason and type patterns (as Kubernetes' own CRDs declare them). */
const CONDITION_REASON_PATTERN = '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$';
const CONDITION_TYPE_PATTERN =
  '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$';

/** What each pattern means, in words, for validation messages. */
export const PATTERN_MEANINGS: Readonly<Record<string, string>> = {
  [QUANTITY_PATTERN]: 'a Kubernetes quantity such as 500m, 2, 1.5Gi',
  [MONEY_PATTERN]: 'a decimal amount with at most 2 decimals such as "1500" or "1499.99"',
  [DNS1123_LABEL_PATTERN]:
    "a DNS-1123 label (lower-case letters, digits and '-', starting and ending with a letter or digit)",
  [CIDR_PATTERN]: 'a CIDR such as 203.0.113.0/24 or 2001:db8::/64',
  [DNS_SUFFIX_PATTERN]: 'a lower-case DNS name such as shop.example.com (no wildcard)',
  [CONDITION_REASON_PATTERN]: 'a CamelCase reason (letters, digits, _ , :)',
  [CONDITION_TYPE_PATTERN]: 'a condition type such as Ready or example.com/Ready',
};

const PROJECT_NAMESPACE_HEALTH = [
  'Healthy',
  'Missing',
  'Terminating',
  'QuotaMissing',
  'QuotaMismatch',
  'LabelMismatch',
] as const;
export const PROJECT_PHASES = ['Active', 'Terminating', 'Degraded'] as const;
const SUBJECT_KINDS = ['User', 'Group', 'ServiceAccount'] as const;

/** True for the schema node of a single quantity. */
export function isQuantitySchema(s: StructuralSchema | undefined): boolean {
  return s?.['x-kubernetes-int-or-string'] === true && s.pattern === QUANTITY_PATTERN;
}

/** The schema of one quantity (int-or-string with Kubernetes' quantity pattern), shared by every CRD. */
export const quantitySchema = (): StructuralSchema => ({
  description: 'A Kubernetes quantity (e.g. 500m, 2, 1.5Gi).',
  anyOf: [{ type: 'integer' }, { type: 'string' }],
  pattern: QUANTITY_PATTERN,
  'x-kubernetes-int-or-string': true,
});

const resourceList = (description: string): StructuralSchema => ({
  type: 'object',
  description,
  additionalProperties: quantitySchema(),
});

const quotaSpec = (description: string): StructuralSchema => ({
  type: 'object',
  description,
  properties: {
    hard: resourceList('Resource name (any ResourceQuota resource, e.g. requests.cpu, pods) to quantity.'),
  },
});

/** Budgets per PriorityClass (docs/budgets.md#priority-tiers): tier name (a PriorityClass name) → quota. */
const tiersSchema = (description: string, quota: string): StructuralSchema => ({
  type: 'object',
  description,
  additionalProperties: {
    type: 'object',
    properties: { quota: quotaSpec(quota) },
  },
});

const stringMap = (description: string): StructuralSchema => ({
  type: 'object',
  description,
  additionalProperties: { type: 'string' },
});

const names = (description: string): StructuralSchema => ({
  type: 'array',
  description,
  'x-kubernetes-list-type': 'set',
  items: { type: 'string', minLength: 1, maxLength: 253 },
});

const cidrs = (description: string): StructuralSchema => ({
  type: 'array',
  description,
  'x-kubernetes-list-type': 'set',
  items: { type: 'string', pattern: CIDR_PATTERN, maxLength: 64 },
});

const namespaceNames = (description: string): StructuralSchema => ({
  type: 'array',
  description,
  'x-kubernetes-list-type': 'set',
  items: { type: 'string', pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$', maxLength: 63 },
});

/** spec.allow (rules X1–X10, H1–H4, docs/rules.md#allow-lists): what the project's objects may use. */
const allowListsSchema = (): StructuralSchema => ({
  type: 'object',
  description:
    "What the project's pods, Services, Ingresses, routes and claims may use (docs/rules.md#allow-lists). A " +
    "field not given takes tenantgate.yaml's allow.",
  properties: {
    priorityClasses: names(
      'PriorityClass names a pod may name (X1); absent: any but system-*, which only a Project naming it here allows.',
    ),
    services: {
      type: 'object',
      description: 'What Services may expose (X2-X4).',
      properties: {
        externalIPs: cidrs('CIDRs spec.externalIPs may take (X2); absent or empty: none.'),
        types: {
          type: 'array',
          description: 'Service types allowed besides ClusterIP (X3); absent or empty: ClusterIP only.',
          'x-kubernetes-list-type': 'set',
          items: { type: 'string', enum: ['NodePort', 'LoadBalancer', 'ExternalName'] },
        },
        loadBalancerSourceRanges: cidrs(
          'When given, a LoadBalancer Service sets spec.loadBalancerSourceRanges, each inside one of these (X4).',
        ),
      },
    },
    hostnames: {
      type: 'object',
      description:
        "The hostnames of the project's Ingresses and Gateway API routes (H1); overlapping suffixes across " +
        'projects are refused offline (H3).',
      properties: {
        suffixes: {
          type: 'array',
          description: 'DNS suffixes; a hostname is the suffix or ends with "." + suffix. Absent: no hostname.',
          'x-kubernetes-list-type': 'set',
          items: { type: 'string', pattern: DNS_SUFFIX_PATTERN, maxLength: 253 },
        },
        wildcards: {
          type: 'boolean',
          description: 'Whether a hostname may be a wildcard (*.shop.example.com). Default false.',
        },
      },
    },
    ingressClasses: names('IngressClass names an Ingress may name (H2); absent: any.'),
    gatewayClasses: names('GatewayClass names a Gateway may name in spec.gatewayClassName (H4); absent: any.'),
    persistentVolumes: {
      type: 'object',
      description:
        "Which PersistentVolumes a claim may bind by spec.volumeName (X10): the project's own always (label " +
        'tenantgate.io/project, or claimed from one of its namespaces).',
      properties: {
        unowned: {
          type: 'boolean',
          description: 'Whether a claim may name a PersistentVolume of no project. Default false.',
        },
      },
    },
    storageClasses: names('StorageClass names a PersistentVolumeClaim may name (X5); absent: any.'),
    runtimeClasses: names('RuntimeClass names a pod may name (X6); absent: any.'),
    deviceClasses: names('DeviceClass names a ResourceClaim or ResourceClaimTemplate may request (X7); absent: any.'),
    nodePlacement: {
      type: 'object',
      description:
        "Where the project's pods run (X8): each carries this nodeSelector, no nodeName, and no toleration but " +
        'these and node.kubernetes.io/* ones.',
      properties: {
        nodeSelector: stringMap('Labels every pod must select in spec.nodeSelector, with these values.'),
        tolerations: {
          type: 'array',
          description: 'Tolerations a pod may carry; absent or empty: none (besides node.kubernetes.io/*).',
          items: {
            type: 'object',
            properties: {
              key: { type: 'string' },
              operator: { type: 'string', enum: ['Exists', 'Equal'] },
              value: { type: 'string' },
              effect: { type: 'string', enum: ['', 'NoSchedule', 'PreferNoSchedule', 'NoExecute'] },
            },
          },
        },
      },
    },
    registries: names(
      'Image prefixes (registry.example.com/, ghcr.io/acme/) every container image starts with (X9); absent: any.',
    ),
  },
});

const dateTime = (description: string): StructuralSchema => ({ type: 'string', format: 'date-time', description });

const specSchema: StructuralSchema = {
  type: 'object',
  description: 'The desired state of the Project.',
  required: ['tenant'],
  properties: {
    tenant: {
      type: 'string',
      description: 'The tenant (organisation, customer) owning the project. Immutable.',
      minLength: 1,
      maxLength: 63,
      pattern: DNS1123_LABEL_PATTERN,
    },
    displayName: { type: 'string', description: 'Human-readable name.' },
    owners: {
      type: 'array',
      description: 'Who may self-serve namespaces and quotas in this project.',
      items: {
        type: 'object',
        required: ['kind', 'name'],
        properties: {
          kind: { type: 'string', enum: [...SUBJECT_KINDS] },
          name: { type: 'string', minLength: 1 },
          namespace: { type: 'string', description: 'The namespace of a ServiceAccount.' },
        },
      },
    },
    quota: quotaSpec('The project budget: the sum of the namespace quotas never exceeds it.'),
    clusters: {
      type: 'object',
      description: 'Per-cluster budgets, by cluster name; replaces spec.quota on that cluster.',
      additionalProperties: {
        type: 'object',
        properties: { quota: quotaSpec('The project budget on this cluster.') },
      },
    },
    fleet: {
      type: 'object',
      description:
        'A budget for the fleet as a whole (docs/adr/0039-fleet-budgets.md), enforced by the webhook of every ' +
        'cluster configured as a member (docs/fleet.md). Each member cluster holds a share of it; spec.clusters ' +
        "(else spec.quota) bounds a member's share.",
      required: ['quota', 'clusters'],
      properties: {
        quota: quotaSpec("The fleet budget: the member clusters' shares never sum to more."),
        clusters: {
          type: 'array',
          description:
            'The member clusters sharing the fleet budget (their names in spec.clusters, ARGOCD_ENV_CLUSTER).',
          'x-kubernetes-list-type': 'set',
          items: { type: 'string', minLength: 1 },
        },
      },
    },
    costBudget: {
      type: 'object',
      description:
        "What the project's allocation may cost per month, in the currency of tenantgate.yaml's pricing " +
        '(docs/budgets.md#cost; rule C1).',
      required: ['monthly'],
      properties: {
        monthly: {
          type: 'string',
          pattern: MONEY_PATTERN,
          maxLength: 24,
          description: 'A decimal amount with at most 2 decimals, e.g. "1500" or "1499.99".',
        },
      },
    },
    bursts: {
      type: 'array',
      description:
        'Time-bound increases of the budget, approved in git (docs/budgets.md#bursts; rules B1, B2). While from ' +
        '<= now < until, quota.hard is added to the budget (and to the quota of `namespace`).',
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['name'],
      items: {
        type: 'object',
        required: ['name', 'from', 'until', 'reason', 'quota'],
        properties: {
          name: {
            type: 'string',
            minLength: 1,
            maxLength: 63,
            pattern: DNS1123_LABEL_PATTERN,
            description: 'Unique in the project; a burst that has ended is kept as is or removed, never changed (B2).',
          },
          from: {
            type: 'string',
            minLength: 1,
            description: 'RFC 3339 instant the burst starts (included), e.g. 2026-12-01T00:00:00Z.',
          },
          until: { type: 'string', minLength: 1, description: 'RFC 3339 instant the burst ends (excluded).' },
          reason: { type: 'string', minLength: 1, description: 'Why: shown by plan, the status and the Events.' },
          quota: quotaSpec('What the burst adds to the budget (resources the project budgets).'),
          namespace: {
            type: 'string',
            minLength: 1,
            description:
              'A declared namespace whose quota the controller raises by quota.hard while the burst is active, ' +
              'and lowers at until (never below what it uses).',
          },
          cluster: {
            type: 'string',
            minLength: 1,
            description: 'The cluster whose budget it raises (a key of spec.clusters); every cluster when absent.',
          },
        },
      },
    },
    tiers: tiersSchema(
      'Budgets per PriorityClass, by PriorityClass name (docs/budgets.md#priority-tiers). Each namespace gets a ' +
        'ResourceQuota scoped to each tier with a quota, and one refusing pods of any other PriorityClass. A tier ' +
        'without quota is bounded by spec.quota only.',
      "The tier's budget: the sum of the namespaces' quotas scoped to this PriorityClass never exceeds it.",
    ),
    maxNamespaces: { type: 'integer', minimum: 0, description: 'The most namespaces the project may have.' },
    deletionPolicy: {
      type: 'string',
      enum: ['Delete', 'Orphan'],
      description:
        'What deleting the Project does to its namespaces (docs/adr/0096-deletion-loses-no-data.md): Delete (a ' +
        "namespace holding data waits for the annotation tenantgate.io/deletion-confirmed: <the Project's uid>), " +
        "Orphan (every namespace is released, its contents kept). Absent: tenantgate.yaml's deletion.policy.",
    },
    namespaceDefaults: {
      type: 'object',
      description: 'Applied to declared namespaces without a quota, and to self-service namespaces.',
      properties: {
        quota: quotaSpec('The default ResourceQuota of a project namespace.'),
        tiers: tiersSchema(
          'The default quota per tier of a project namespace (a ResourceQuota scoped to the PriorityClass).',
          'The default quota scoped to this PriorityClass.',
        ),
        limitRange: {
          type: 'object',
          description: 'The container LimitRange of every project namespace.',
          properties: {
            default: resourceList('Default limits.'),
            defaultRequest: resourceList('Default requests.'),
            max: resourceList('Maximum per container.'),
            min: resourceList('Minimum per container.'),
          },
        },
      },
    },
    podSecurity: {
      type: 'object',
      description:
        'Pod Security Standards levels of every project namespace (pod-security.kubernetes.io/<mode> labels); ' +
        'each mode not given takes podSecurity of tenantgate.yaml.',
      properties: {
        enforce: { type: 'string', enum: [...POD_SECURITY_LEVELS] },
        warn: { type: 'string', enum: [...POD_SECURITY_LEVELS] },
        audit: { type: 'string', enum: [...POD_SECURITY_LEVELS] },
      },
    },
    networkIsolation: {
      type: 'boolean',
      description:
        "Keep a NetworkPolicy in each namespace admitting traffic only from the project's namespaces (and " +
        'spec.network.allowFrom), and letting pods reach only them, DNS in kube-system and spec.network.egress.',
    },
    network: {
      type: 'object',
      description:
        "With networkIsolation: what the isolation NetworkPolicy allows besides the project's own namespaces " +
        "(docs/network.md). A field not given takes tenantgate.yaml's network.",
      properties: {
        egress: {
          type: 'object',
          description: 'Where pods may connect besides the project and DNS.',
          properties: {
            namespaces: namespaceNames('Namespaces the pods may reach.'),
            cidrs: cidrs('CIDRs the pods may reach.'),
          },
        },
        allowFrom: {
          type: 'object',
          description: "Who may connect to the project's pods besides its own namespaces.",
          properties: {
            sameTenant: {
              type: 'boolean',
              description: 'The namespaces of every project of the same tenant. Default false.',
            },
            namespaces: namespaceNames("Namespaces, such as the ingress controller's."),
          },
        },
      },
    },
    allow: allowListsSchema(),
    namespaces: {
      type: 'array',
      description: 'Declared namespaces, rendered by the Argo CD plugin.',
      items: {
        type: 'object',
        required: ['name'],
        properties: {
          name: { type: 'string', minLength: 1 },
          cluster: { type: 'string', description: 'Render this namespace only for that cluster.' },
          quota: quotaSpec('The namespace ResourceQuota; namespaceDefaults.quota when absent.'),
          tiers: tiersSchema(
            'The namespace quota per tier; namespaceDefaults.tiers for a tier not given.',
            'The ResourceQuota of this namespace scoped to this PriorityClass.',
          ),
          labels: stringMap('Extra labels of the Namespace.'),
          annotations: stringMap('Extra annotations of the Namespace.'),
        },
      },
    },
  },
  'x-kubernetes-validations': [
    {
      rule: 'self.tenant == oldSelf.tenant',
      message: '[T1] spec.tenant is immutable',
      reason: 'FieldValueForbidden',
      fieldPath: '.tenant',
    },
  ],
};

const statusSchema: StructuralSchema = {
  type: 'object',
  description: 'The observed state of the Project, written by the controller.',
  properties: {
    phase: { type: 'string', enum: [...PROJECT_PHASES] },
    observedGeneration: { type: 'integer', minimum: 0 },
    namespaceCount: { type: 'integer', minimum: 0, description: 'How many namespaces the project has.' },
    budgetUse: {
      type: 'string',
      description: 'The tightest budget resource, allocated/budget (e.g. "requests.cpu 16/20").',
    },
    allocated: stringMap('Sum of the effective namespace quotas, per resource.'),
    used: stringMap('Sum of the ResourceQuota status.used, per resource.'),
    headroom: stringMap('Budget minus allocated, per resource.'),
    namespaces: {
      type: 'array',
      items: {
        type: 'object',
        required: ['name', 'health'],
        properties: {
          name: { type: 'string' },
          health: { type: 'string', enum: [...PROJECT_NAMESPACE_HEALTH] },
          phase: { type: 'string' },
          message: { type: 'string' },
        },
      },
    },
    conditions: {
      type: 'array',
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['type'],
      items: {
        type: 'object',
        required: ['type', 'status', 'reason', 'message'],
        properties: {
          type: { type: 'string', maxLength: 316, pattern: CONDITION_TYPE_PATTERN },
          status: { type: 'string', enum: ['True', 'False', 'Unknown'] },
          reason: { type: 'string', minLength: 1, maxLength: 1024, pattern: CONDITION_REASON_PATTERN },
          message: { type: 'string', maxLength: 32768 },
          lastTransitionTime: dateTime('When the status last changed.'),
          observedGeneration: { type: 'integer', minimum: 0 },
        },
      },
    },
  },
};

/**
 * The openAPIV3Schema of a custom resource: its spec (required) and status under the usual
 * apiVersion, kind and metadata.
 */
export function resourceSchema(
  description: string,
  spec: StructuralSchema,
  status: StructuralSchema,
): StructuralSchema {
  return {
    type: 'object',
    description,
    required: ['spec'],
    properties: {
      apiVersion: { type: 'string' },
      kind: { type: 'string' },
      metadata: { type: 'object' },
      spec,
      status,
    },
  };
}

/** The Project's openAPIV3Schema. Treat as read-only. */
export const PROJECT_SCHEMA: StructuralSchema = resourceSchema(
  'A tenantgate Project: a set of namespaces of one tenant sharing a resource budget.',
  specSchema,
  statusSchema,
);
