/**
 * The JSON Schema of `tenantgate.yaml`, and its validation with ajv: every key at every depth is known,
 * every number has its range, and every error names the key, the value and what is allowed.
 */
import { Ajv, type ErrorObject } from 'ajv';
import { POD_SECURITY_LEVELS } from '../validate/pod-security.js';
import { QUANTITY_PATTERN } from '../validate/schema/project-schema.js';

const DNS_LABEL = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';
/** A label or annotation key (a Kubernetes qualified name with an optional DNS prefix), or a prefix ending in `*`. */
const KEY_OR_PREFIX =
  '^(([a-z0-9]([-a-z0-9]*[a-z0-9])?)(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?' +
  '([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?\\*?$';

/**
 * Empty, or an Argo CD `defaultServiceAccount`: `[namespace:]name` (lowercase letters, digits, "-",
 * "."; {tenant} anywhere).
 */
const TENANT_TOKEN = '(?:[a-z0-9]|\\{tenant\\})';
const LABEL_WITH_TENANT = `${TENANT_TOKEN}(?:(?:[-.]|${TENANT_TOKEN})*${TENANT_TOKEN})?`;
const SYNC_SERVICE_ACCOUNT = `^$|^(?:${LABEL_WITH_TENANT}:)?${LABEL_WITH_TENANT}$`;

const strings = (description: string, pattern?: string) =>
  ({
    type: 'array',
    description,
    items: { type: 'string', minLength: 1, ...(pattern ? { pattern } : {}) },
  }) as const;

/** A resource list of tenantgate.yaml (fleet.keep, fleet.above): resource name → a quantity ≥ 0. */
const RESOURCE_LIST = {
  type: 'object',
  additionalProperties: { type: ['string', 'number'], pattern: QUANTITY_PATTERN, minimum: 0 },
} as const;

/**
 * A price as an exact decimal (no exponent, no sign): "0.031", "2.48", "12". Quoted in YAML: a YAML number is a float.
 */
const PRICE_PATTERN = '^(0|[1-9][0-9]*)(\\.[0-9]+)?$';
/** An ISO 4217 currency code. */
const CURRENCY_PATTERN = '^[A-Z]{3}$';
/**
 * A resource name a quota counts, without a tier (`@`): tier keys count the same pods again and
 * have no price of their own.
 */
const PRICED_RESOURCE = '^[^@]+$';

/**
 * tenantgate.yaml's price sheet (docs/budgets.md#cost): what one `per` of a resource costs per hour.
 * What the schema cannot say (per > 0) is checked in config.ts.
 */
const PRICING = {
  type: 'object',
  additionalProperties: false,
  required: ['currency', 'perHour'],
  properties: {
    currency: { type: 'string', pattern: CURRENCY_PATTERN },
    /** Hours a month is billed for (730: 365 × 24 / 12, as the cloud bills count). */
    hoursPerMonth: { type: 'number', exclusiveMinimum: 0, maximum: 744, default: 730 },
    perHour: {
      type: 'object',
      propertyNames: { pattern: PRICED_RESOURCE },
      additionalProperties: {
        type: 'object',
        additionalProperties: false,
        required: ['price'],
        properties: {
          price: { type: 'string', pattern: PRICE_PATTERN, maxLength: 40 },
          per: { type: ['string', 'number'], pattern: QUANTITY_PATTERN, exclusiveMinimum: 0, default: '1' },
        },
      },
    },
  },
} as const;

const CIDR = '^[0-9a-fA-F:.]+/[0-9]{1,3}$';
/** A hostname suffix of tenantgate.yaml's allow: a DNS name where {project} and {tenant} may stand for labels. */
const SUFFIX_TEMPLATE = '^([a-z0-9]|\\{project\\}|\\{tenant\\})([-a-z0-9.]|\\{project\\}|\\{tenant\\})*$';
const nameSet = (description: string) => ({ ...strings(description), uniqueItems: true });

/** tenantgate.yaml's `network`: the network baseline of every Project that does not give its own (docs/network.md). */
const NETWORK = {
  type: 'object',
  additionalProperties: false,
  properties: {
    egress: {
      type: 'object',
      additionalProperties: false,
      properties: {
        namespaces: strings('namespace names', DNS_LABEL),
        cidrs: strings('CIDRs the pods may reach', CIDR),
      },
    },
    allowFrom: {
      type: 'object',
      additionalProperties: false,
      properties: { sameTenant: { type: 'boolean' }, namespaces: strings('namespace names', DNS_LABEL) },
    },
  },
} as const;

/**
 * tenantgate.yaml's `allow`: the allow-lists of every Project that does not give its own (docs/rules.md#allow-lists).
 */
const ALLOW = {
  type: 'object',
  additionalProperties: false,
  properties: {
    priorityClasses: nameSet('PriorityClass names (system-* never from here: only a Project naming one allows it)'),
    services: {
      type: 'object',
      additionalProperties: false,
      properties: {
        externalIPs: strings('CIDRs spec.externalIPs may take', CIDR),
        types: { type: 'array', items: { type: 'string', enum: ['NodePort', 'LoadBalancer', 'ExternalName'] } },
        loadBalancerSourceRanges: strings("CIDRs a LoadBalancer Service's source ranges lie in", CIDR),
      },
    },
    hostnames: {
      type: 'object',
      additionalProperties: false,
      properties: {
        suffixes: strings('hostname suffixes ({project} and {tenant} allowed)', SUFFIX_TEMPLATE),
        wildcards: { type: 'boolean' },
      },
    },
    ingressClasses: nameSet('IngressClass names'),
    gatewayClasses: nameSet('GatewayClass names'),
    persistentVolumes: { type: 'object', additionalProperties: false, properties: { unowned: { type: 'boolean' } } },
    storageClasses: nameSet('StorageClass names'),
    runtimeClasses: nameSet('RuntimeClass names'),
    deviceClasses: nameSet('DeviceClass names'),
    nodePlacement: {
      type: 'object',
      additionalProperties: false,
      properties: {
        nodeSelector: { type: 'object', additionalProperties: { type: 'string' } },
        tolerations: {
          type: 'array',
          items: {
            type: 'object',
            additionalProperties: false,
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
    registries: nameSet('image prefixes such as registry.example.com/'),
  },
} as const;

/** What each pattern means, for messages. */
const PATTERN_MEANINGS: Record<string, string> = {
  [DNS_LABEL]: 'a DNS-1123 label (lowercase letters, digits and "-", at most 63 characters)',
  [KEY_OR_PREFIX]:
    'a label or annotation key such as example.com/name, or a prefix ending in * such as pod-security.kubernetes.io/*',
  '\\{project\\}': 'a template containing {project}, such as {project}-',
  [QUANTITY_PATTERN]: 'a Kubernetes quantity such as 500m, 2, 1.5Gi',
  [SYNC_SERVICE_ACCOUNT]:
    '"" or a ServiceAccount as namespace:name or name, {tenant} allowed, such as argocd:tenant-{tenant}',
  [PRICE_PATTERN]: 'a decimal price as a quoted string, such as "0.031" (no sign, no exponent: prices are exact)',
  [CURRENCY_PATTERN]: 'an ISO 4217 currency code such as USD, EUR',
  [CIDR]: 'a CIDR such as 203.0.113.0/24 or 2001:db8::/64',
  [SUFFIX_TEMPLATE]: 'a lower-case DNS name such as {project}.apps.example.com ({project} and {tenant} allowed)',
  [PRICED_RESOURCE]:
    'a resource name without "@" such as requests.cpu (a tier key counts the same pods as its resource)',
};

/** Who sees what (docs/visibility.md): every Project and namespace, or only one's own. */
const VISIBILITIES = ['all', 'own'] as const;
/**
 * What a Project's deletion does to its namespaces (tenantgate.yaml deletion.policy, a Project's spec.deletionPolicy).
 */
export const DELETION_POLICIES = ['Delete', 'Orphan'] as const;

/**
 * tenantgate.yaml, each option declared once: its range, its `default` (absent: the option stays unset)
 * and, from both, its type (TenantgateConfig, config.ts). A mapping with a `default` is filled in key by
 * key; a list or a mapping without `properties` (allow, network, fleet.keep) is taken whole as given.
 */
export const CONFIG_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    apiVersion: { type: 'string' },
    kind: { type: 'string' },
    /** Name of this cluster; selects `spec.clusters[name]` budgets. Empty: the default budget. */
    clusterName: { type: 'string', maxLength: 63, anyOf: [{ const: '' }, { pattern: DNS_LABEL }], default: '' },
    privileged: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        users: {
          ...strings('user names (ServiceAccounts as system:serviceaccount:<ns>:<name>)'),
          // Argo CD's application controller is deliberately absent (ADR 0007): list the identity that
          // syncs the platform's Project repository explicitly.
          default: ['system:serviceaccount:tenantgate-system:tenantgate-controller'],
        },
        groups: { ...strings('group names'), default: ['system:masters'] },
      },
    },
    reserved: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        names: { ...strings('reserved namespace names'), default: ['default'] },
        prefixes: { ...strings('reserved namespace name prefixes'), default: ['kube-', 'openshift-', 'tenantgate-'] },
      },
    },
    /** Namespace prefix template; `{project}` is replaced with the project name. */
    namespacePrefix: { type: 'string', minLength: 1, maxLength: 63, pattern: '\\{project\\}', default: '{project}-' },
    requireProjectForUsers: { type: 'boolean', default: true },
    /** Q4 warns when headroom falls below this fraction of the budget. */
    headroomWarningThreshold: { type: 'number', minimum: 0, exclusiveMaximum: 1, default: 0.1 },
    resyncPeriodSeconds: { type: 'integer', minimum: 1, maximum: 86_400, default: 300 },
    /** Namespace tenantgate itself runs in (excluded from the webhook). */
    systemNamespace: { type: 'string', maxLength: 63, pattern: DNS_LABEL, default: 'tenantgate-system' },
    /** Q5: reserve allocations with a compare-and-swap write across replicas. */
    crossReplicaReservation: { type: 'boolean', default: true },
    /** How long an admitted-but-not-yet-seen allocation keeps counting. */
    reservationTtlSeconds: { type: 'integer', minimum: 1, maximum: 3600, default: 30 },
    /**
     * Q5: a ledger entry leaves once the writer's cache shows its object, and replicas catch up to the
     * ledger's settled marks before deciding (docs/adr/0003-headroom-ledger.md). Switch it on only once
     * every webhook replica runs a version that knows it; off one TTL before a downgrade.
     */
    ledgerSettlement: { type: 'boolean', default: true },
    /**
     * Who sees what (docs/visibility.md): `all`, every tenant reads every Project and lists namespaces;
     * `own`, a tenant reads only the Projects it owns and their namespaces (the controller keeps a
     * per-project ClusterRole for the owners; the chart's tenant RBAC grants no cluster-wide reads).
     */
    visibility: { type: 'string', enum: VISIBILITIES, default: 'all' },
    /**
     * T7: namespace label and annotation keys only privileged subjects may add, change or remove, besides
     * the ones that grant power (Pod Security, DRA admin access, PodNodeSelector…), which are protected
     * whatever this lists (GRANTING_NAMESPACE_METADATA, src/validate/granting-metadata.ts). An entry is
     * an exact key or a prefix ending in `*` (`example.com/*`).
     */
    protectedNamespaceMetadata: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        labels: {
          ...strings(
            'namespace label keys protected besides the ones that grant power (always protected)',
            KEY_OR_PREFIX,
          ),
          default: ['tenantgate.io/*'],
        },
        annotations: {
          ...strings(
            'namespace annotation keys protected besides the ones that grant power (always protected)',
            KEY_OR_PREFIX,
          ),
          default: ['tenantgate.io/*'],
        },
      },
    },
    /**
     * Kubernetes' own controllers (namespace controller, garbage collector, quota controller) by user
     * name. They are neither privileged nor owners, yet must finish what an authorised subject started:
     * deleting the contents of a terminating namespace, collecting dependents, writing status
     * (docs/adr/0002-rule-engine.md).
     */
    systemControllers: {
      ...strings("user names of Kubernetes' own controllers (system:serviceaccount:kube-system:namespace-controller…)"),
      default: [
        // kube-controller-manager with --use-service-account-credentials (kubeadm, kind, EKS, GKE, AKS)…
        'system:serviceaccount:kube-system:namespace-controller',
        'system:serviceaccount:kube-system:generic-garbage-collector',
        'system:serviceaccount:kube-system:resourcequota-controller',
        // …and without it: one identity for every controller.
        'system:kube-controller-manager',
      ],
    },
    /** The Pod Security Standards levels of project namespaces unless a Project sets its own. */
    podSecurity: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        enforce: { type: 'string', enum: POD_SECURITY_LEVELS, default: 'baseline' },
        warn: { type: 'string', enum: POD_SECURITY_LEVELS, default: 'restricted' },
        audit: { type: 'string', enum: POD_SECURITY_LEVELS, default: 'restricted' },
      },
    },
    /** The tenants' Argo CD AppProjects `tenantgate render --app-projects` emits (docs/argocd.md). */
    argocd: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        /** Argo CD's namespace: where the AppProjects go. */
        namespace: { type: 'string', maxLength: 63, pattern: DNS_LABEL, default: 'argocd' },
        /**
         * The repositories a tenant's Applications may use (AppProject `sourceRepos`); `{tenant}` is
         * replaced with the tenant. Empty (the default): render refuses to emit AppProjects that would
         * admit nothing.
         */
        sourceRepos: {
          ...strings('repository URLs or globs a tenant may use ({tenant} is replaced with the tenant)'),
          default: [],
        },
        /** The Argo CD destination server of namespaces without `cluster` (the cluster Argo CD runs in). */
        defaultServer: { type: 'string', minLength: 1, default: 'https://kubernetes.default.svc' },
        /** tenantgate cluster name → Argo CD server URL; a cluster not listed is matched by its Argo CD name. */
        clusterServers: {
          type: 'object',
          propertyNames: { pattern: DNS_LABEL },
          additionalProperties: { type: 'string', minLength: 1 },
          default: {},
        },
        /**
         * With Argo CD's sync impersonation: the ServiceAccount a tenant's syncs run as (`namespace:name`,
         * or `name` in the destination namespace; `{tenant}` is replaced). Empty (the default): no
         * `destinationServiceAccounts`.
         */
        syncServiceAccount: { type: 'string', pattern: SYNC_SERVICE_ACCOUNT, default: '' },
      },
    },
    /** This cluster as a member of a fleet sharing Projects' fleet budgets (docs/fleet.md). */
    fleet: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        /**
         * The hub's kubeconfig file (the Secret tenantgate-fleet-hub, mounted). Empty (the default): this
         * cluster is no fleet member and every Project keeps its per-cluster budget. Set: `clusterName`
         * must be set and `crossReplicaReservation` on (the enforced limit lives in the headroom ledger).
         */
        hubKubeconfig: { type: 'string', default: '' },
        /** Free room to ask for beyond a growth's need, per resource (a chunk: the next growths need no hub write). */
        keep: { ...RESOURCE_LIST, default: {} },
        /** Give back only free room above this (≥ keep); the band between keep and above is the hysteresis. */
        above: { ...RESOURCE_LIST, default: {} },
        /**
         * The controller's give-back loop (docs/adr/0039-fleet-budgets.md): room held above `above` for
         * this long is offered to the other members (lendable). Default equal to giveBackAfterSeconds: no
         * offers, since a member's own growth does not take back what it offered (it asks the pool).
         */
        offerAfterSeconds: { type: 'integer', minimum: 0, maximum: 86400, default: 300 },
        /** Room held above `above` this long (≥ offerAfterSeconds) goes back to the pool, offered part included. */
        giveBackAfterSeconds: { type: 'integer', minimum: 0, maximum: 604800, default: 900 },
        /** How often the controller's leader checks every fleet-budgeted Project against the hub. */
        checkEverySeconds: { type: 'integer', minimum: 1, maximum: 3600, default: 60 },
      },
    },
    /**
     * The price sheet (docs/budgets.md#cost): what a project's allocation costs, for `spec.costBudget`
     * (C1), the budget view, the plugin, the metrics and `tenantgate plan`. Absent (the default): no
     * cost anywhere, and a Project with a costBudget is refused (C1) rather than left unchecked.
     */
    pricing: PRICING,
    /**
     * The allow-lists of every Project, field by field, where a Project gives none (docs/rules.md#allow-lists);
     * `{project}` and `{tenant}` in hostname suffixes stand for the project's name and tenant. Default:
     * nothing, so what attacks other tenants (system-* PriorityClasses, externalIPs, NodePort and
     * LoadBalancer Services, hostnames, tolerations) is refused and the rest is open.
     */
    allow: { ...ALLOW, default: {} },
    /** The network baseline of every Project with networkIsolation, field by field, where a Project gives none. */
    network: { ...NETWORK, default: {} },
    /** What a Project's deletion does to its namespaces, and the breaker (docs/adr/0096-deletion-loses-no-data.md). */
    deletion: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        /**
         * A Project without `spec.deletionPolicy`: `Delete` (cascade, asking before data goes) or `Orphan` (release).
         */
        policy: { type: 'string', enum: DELETION_POLICIES, default: 'Delete' },
        /** D2: more deletions than this within the window pause every cascade until an operator resumes. */
        breaker: {
          type: 'object',
          additionalProperties: false,
          default: {},
          properties: {
            windowSeconds: { type: 'integer', minimum: 1, maximum: 604800, default: 600 },
            maxProjects: { type: 'integer', minimum: 0, maximum: 100000, default: 3 },
            maxShare: { type: 'number', minimum: 0, maximum: 1, default: 0.1 },
          },
        },
      },
    },
  },
} as const;

const ajv = new Ajv({ allErrors: true, strict: false, verbose: true });
const validate = ajv.compile(CONFIG_SCHEMA);

/** `/privileged/users/0` → `privileged.users[0]`. */
function keyPath(instancePath: string, extra?: string): string {
  const parts = instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (extra !== undefined) parts.push(extra);
  return parts.reduce((acc, p) => (/^\d+$/.test(p) ? `${acc}[${p}]` : acc ? `${acc}.${p}` : p), '') || 'the document';
}

function schemaAt(instancePath: string): Record<string, unknown> | undefined {
  let node: Record<string, unknown> | undefined = CONFIG_SCHEMA as unknown as Record<string, unknown>;
  for (const part of instancePath.split('/').slice(1)) {
    if (!node) return undefined;
    if (/^\d+$/.test(part) && node.items) node = node.items as Record<string, unknown> | undefined;
    else
      node =
        (node.properties as Record<string, Record<string, unknown>> | undefined)?.[part] ??
        (node.additionalProperties as Record<string, unknown> | undefined);
  }
  return node;
}

function allowed(e: ErrorObject): string {
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'additionalProperties': {
      const known = Object.keys((schemaAt(e.instancePath)?.properties as object | undefined) ?? {});
      return known.join(', ');
    }
    case 'type':
      return p.type === 'integer'
        ? 'an integer'
        : p.type === 'array'
          ? 'a list'
          : p.type === 'object'
            ? 'a mapping'
            : `a ${String(p.type)}`;
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum': {
      const s = schemaAt(e.instancePath) ?? {};
      const kind = s.type === 'integer' ? 'an integer' : 'a number';
      if (s.exclusiveMinimum !== undefined)
        return s.maximum !== undefined
          ? `${kind} above ${String(s.exclusiveMinimum)}, at most ${String(s.maximum)}`
          : `${kind} above ${String(s.exclusiveMinimum)}`;
      if (s.exclusiveMaximum !== undefined)
        return `${kind} from ${String(s.minimum)} up to (not including) ${String(s.exclusiveMaximum)}`;
      return `${kind} from ${String(s.minimum)} to ${String(s.maximum)}`;
    }
    case 'pattern':
      return PATTERN_MEANINGS[String(p.pattern)] ?? `text matching ${String(p.pattern)}`;
    case 'minLength':
      return 'a non-empty string';
    case 'maxLength':
      return `at most ${String(p.limit)} characters`;
    case 'enum':
      return ((p.allowedValues as unknown[] | undefined) ?? []).map((v) => JSON.stringify(v)).join(', ');
    case 'anyOf':
      return `"" or ${PATTERN_MEANINGS[DNS_LABEL]}`;
    default:
      return e.message ?? 'see the documentation';
  }
}

/** What a required key must hold, for the message naming it missing. */
function requiredMeaning(instancePath: string, key: string): string {
  const s = (schemaAt(instancePath)?.properties as Record<string, Record<string, unknown>> | undefined)?.[key];
  const pattern = typeof s?.pattern === 'string' ? PATTERN_MEANINGS[s.pattern] : undefined;
  if (pattern) return pattern;
  return s?.type === 'object' ? 'a mapping' : `a ${String(s?.type ?? 'value')}`;
}

/** Every problem of a parsed `tenantgate.yaml`, one message each; empty when it is valid. */
export function configErrors(doc: unknown, where: string): string[] {
  if (validate(doc)) return [];
  const out: string[] = [];
  for (const e of validate.errors ?? []) {
    // anyOf reports its branches too; the anyOf error itself says it all.
    if (e.schemaPath.includes('/anyOf/')) continue;
    // propertyNames reports the failing name's own error too, which says it all.
    if (e.keyword === 'propertyNames') continue;
    if (e.propertyName !== undefined) {
      out.push(`${where}: ${keyPath(e.instancePath, e.propertyName)} is not an allowed key; allowed: ${allowed(e)}`);
      continue;
    }
    if (e.keyword === 'required') {
      const key = String((e.params as { missingProperty: string }).missingProperty);
      out.push(
        `${where}: ${keyPath(e.instancePath, key)} is missing; allowed: ${requiredMeaning(e.instancePath, key)}`,
      );
    } else if (e.keyword === 'additionalProperties') {
      const key = String((e.params as { additionalProperty: string }).additionalProperty);
      out.push(`${where}: ${keyPath(e.instancePath, key)} is not a known key; allowed: ${allowed(e)}`);
    } else {
      out.push(`${where}: ${keyPath(e.instancePath)} is ${JSON.stringify(e.data)}; allowed: ${allowed(e)}`);
    }
  }
  return [...new Set(out)];
}
