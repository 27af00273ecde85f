/**
 * The chart's hub mode on a local control plane (docs/fleet.md): what `helm install` with
 * fleet.hub.enabled puts on the hub — the FleetBudget CRD (Established first), the namespace
 * tenantgate-fleet, a ServiceAccount and RoleBinding per member, the operator's identity and the
 * admission policy tenantgate-fleet-shares — rendered by the real helm from charts/, not copied.
 */
import { parseAllDocuments } from 'yaml';
import { helmTemplate } from '../../hack/chart-manifests.js';
import { FLEET_NAMESPACE } from '../../src/fleet/fleet-budget-object.js';
import type { ClusterInfo } from './devcluster/controlplane.js';
import { kubectlAs } from './devcluster/tenantgate.js';

const FB = 'fleetbudgets.tenantgate.io';

interface K8sObject {
  kind: string;
  metadata: { name: string };
}

/** The chart's hub mode on `hub`, as helm renders it: the CRD (Established) first, then the hub's objects. */
export async function installFleetHub(hub: ClusterInfo, members: readonly string[]): Promise<void> {
  const rendered = await helmTemplate([
    '--set',
    'fleet.hub.enabled=true',
    '--set',
    `fleet.hub.members={${members.join(',')}}`,
    '--set',
    'webhook.enabled=false',
    '--set',
    'controller.enabled=false',
  ]);
  const objects = parseAllDocuments(rendered)
    .map((d) => d.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);
  const crd = objects.filter((o) => o.kind === 'CustomResourceDefinition' && o.metadata.name === FB);
  const hubObjects = objects.filter(
    (o) =>
      [
        'Namespace',
        'Role',
        'RoleBinding',
        'ServiceAccount',
        'ValidatingAdmissionPolicy',
        'ValidatingAdmissionPolicyBinding',
      ].includes(o.kind) &&
      (o.kind !== 'Namespace' || o.metadata.name === FLEET_NAMESPACE),
  );
  if (crd.length !== 1) throw new Error(`the chart's hub mode rendered ${crd.length} ${FB} CRDs`);
  const apply = (list: K8sObject[]) =>
    kubectlAs(
      hub,
      'admin',
      ['apply', '--server-side', '--force-conflicts', '--field-manager', 'fleet-hub', '-f', '-'],
      list.map((o) => JSON.stringify(o)).join('\n'),
    );
  await apply(crd);
  await kubectlAs(hub, 'admin', ['wait', '--for=condition=Established', '--timeout=60s', `crd/${FB}`]);
  await apply(hubObjects);
}
