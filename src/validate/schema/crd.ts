/**
 * The CustomResourceDefinition `projects.tenantgate.io`, generated from PROJECT_SCHEMA.
 *
 * `make crd` (hack/generate-crd.ts) writes it; the committed copy is
 * manifests/crd/projects.tenantgate.io.yaml and a unit test fails when the two differ.
 */
import { stringify } from 'yaml';
import { API_GROUP, PROJECT_KIND } from '../types.js';
import { PROJECT_SCHEMA } from './project-schema.js';

export const CRD_NAME = `projects.${API_GROUP}`;
export const CRD_PATH = 'manifests/crd/projects.tenantgate.io.yaml';

const HEADER =
  '# generated from src/validate/schema/project-schema.ts by hack/generate-crd.ts, do not edit (regenerate with `make crd`)\n';

export function projectCrd(): Record<string, unknown> {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: CRD_NAME,
      labels: { 'app.kubernetes.io/name': 'tenantgate', 'app.kubernetes.io/part-of': 'tenantgate' },
      // `helm uninstall` keeps the CRD, and with it every Project (deleting it would delete them all).
      annotations: { 'helm.sh/resource-policy': 'keep' },
    },
    spec: {
      group: API_GROUP,
      scope: 'Cluster',
      names: {
        kind: PROJECT_KIND,
        listKind: `${PROJECT_KIND}List`,
        plural: 'projects',
        singular: 'project',
        shortNames: ['proj'],
      },
      versions: [
        {
          name: 'v1alpha1',
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [
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
          schema: { openAPIV3Schema: structuredClone(PROJECT_SCHEMA) },
        },
      ],
    },
  };
}

/** The CRD as YAML: keys sorted, no line folding, so the output is stable byte for byte. */
export function renderCrdYaml(): string {
  return (
    HEADER +
    stringify(projectCrd(), {
      sortMapEntries: true,
      lineWidth: 0,
      minContentWidth: 0,
      indent: 2,
      indentSeq: true,
      aliasDuplicateObjects: false,
    })
  );
}
