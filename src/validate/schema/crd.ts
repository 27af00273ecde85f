/**
 * The CustomResourceDefinition `projects.tenantgate.io`, generated from PROJECT_SCHEMA.
 *
 * `make crd` (hack/generate-crd.ts) writes it; the committed copy is
 * manifests/crd/projects.tenantgate.io.yaml and a unit test fails when the two differ.
 */
import { stringify } from 'yaml';
import { API_GROUP, PROJECT_KIND } from '../types.js';
import { PROJECT_SCHEMA, type StructuralSchema } from './project-schema.js';

export const CRD_PATH = 'manifests/crd/projects.tenantgate.io.yaml';

const HEADER =
  '# generated from src/validate/schema/project-schema.ts by hack/generate-crd.ts, do not edit (regenerate with ' +
  '`make crd`)\n';

function projectCrd(): Record<string, unknown> {
  return customResourceDefinition({
    kind: PROJECT_KIND,
    plural: 'projects',
    singular: 'project',
    shortNames: ['proj'],
    scope: 'Cluster',
    printerColumns: [
      { name: 'Tenant', type: 'string', jsonPath: '.spec.tenant' },
      { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
      { name: 'Namespaces', type: 'integer', jsonPath: '.status.namespaceCount' },
      {
        name: 'Budget use',
        type: 'string',
        jsonPath: '.status.budgetUse',
        description: 'The tightest budget resource, allocated/budget',
      },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ],
    schema: structuredClone(PROJECT_SCHEMA),
  });
}

/**
 * What tells one of tenantgate's CustomResourceDefinitions from another (each has one version, v1alpha1, with a status
 * subresource unless `statusSubresource: false`).
 */
export interface CrdDefinition {
  kind: string;
  plural: string;
  singular: string;
  shortNames: string[];
  scope: 'Cluster' | 'Namespaced';
  printerColumns: Array<Record<string, unknown>>;
  schema: StructuralSchema;
  /** Whether the kind has a status subresource (default true). */
  statusSubresource?: boolean;
}

/** A CustomResourceDefinition of group tenantgate.io (Projects, the hub's FleetBudgets). */
export function customResourceDefinition(d: CrdDefinition): Record<string, unknown> {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${d.plural}.${API_GROUP}`,
      labels: { 'app.kubernetes.io/name': 'tenantgate', 'app.kubernetes.io/part-of': 'tenantgate' },
      // `helm uninstall` keeps the CRD: deleting it would delete every object of its kind (every Project;
      // every FleetBudget, and with it the shares the members hold).
      annotations: { 'helm.sh/resource-policy': 'keep' },
    },
    spec: {
      group: API_GROUP,
      scope: d.scope,
      names: {
        kind: d.kind,
        listKind: `${d.kind}List`,
        plural: d.plural,
        singular: d.singular,
        shortNames: d.shortNames,
      },
      versions: [
        {
          name: 'v1alpha1',
          served: true,
          storage: true,
          ...(d.statusSubresource === false ? {} : { subresources: { status: {} } }),
          additionalPrinterColumns: d.printerColumns,
          schema: { openAPIV3Schema: d.schema },
        },
      ],
    },
  };
}

/**
 * A CRD as YAML after its generated-file header: keys sorted, no line folding, so the output is stable byte for byte.
 */
export function crdYaml(header: string, crd: Record<string, unknown>): string {
  return (
    header +
    stringify(crd, {
      sortMapEntries: true,
      lineWidth: 0,
      minContentWidth: 0,
      indent: 2,
      indentSeq: true,
      aliasDuplicateObjects: false,
    })
  );
}

/** The CRD as YAML: keys sorted, no line folding, so the output is stable byte for byte. */
export function renderCrdYaml(): string {
  return crdYaml(HEADER, projectCrd());
}
