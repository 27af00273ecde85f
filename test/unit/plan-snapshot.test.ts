/**
 * The snapshot file (src/plan/snapshot-file.ts): only project namespaces and their quotas, only the
 * fields plan reads, sorted; a malformed file is refused naming the file, the field and what is
 * allowed. And `--cluster NAME=CONTEXT` parsing (src/cli/plan.ts).
 */
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseClusterFlag } from '../../src/cli/plan.js';
import { liveStateOf, parseSnapshot, snapshotOf } from '../../src/plan/snapshot-file.js';
import { aNamespace, aProject, aQuota } from '../support/fixtures.js';

const TAKEN = '2026-01-05T06:00:00.000Z';

function listed() {
  const ns = aNamespace('web-b', { project: 'web' });
  ns.metadata.annotations = { 'kubectl.kubernetes.io/last-applied-configuration': '{}' };
  (ns.metadata as Record<string, unknown>).managedFields = [{ manager: 'kubectl' }];
  return {
    projects: [
      aProject('web', { quota: { hard: { pods: '10' } } }, { uid: 'u1', resourceVersion: '7' }),
      aProject('api'),
    ],
    namespaces: [ns, aNamespace('web-a', { project: 'web' }), aNamespace('kube-system'), aNamespace('other')],
    quotas: [
      aQuota('web-b', { pods: '5' }, { used: { pods: '2' } }),
      aQuota('web-a', { pods: '5' }),
      aQuota('other', { pods: '100' }),
    ],
  };
}

describe('snapshotOf', () => {
  it('keeps project namespaces and the quotas in them, sorted; drops what plan does not read', () => {
    const doc = snapshotOf('prod-eu', TAKEN, listed());
    expect(doc).toMatchObject({
      apiVersion: 'tenantgate.io/v1alpha1',
      kind: 'ClusterSnapshot',
      cluster: 'prod-eu',
      takenAt: TAKEN,
    });
    expect(doc.projects.map((p) => p.metadata.name)).toEqual(['api', 'web']);
    expect(doc.projects[1]!.metadata).toEqual({ name: 'web', uid: 'u1' });
    expect(doc.namespaces.map((n) => n.metadata.name)).toEqual(['web-a', 'web-b']);
    expect(doc.resourceQuotas.map((q) => q.metadata.namespace)).toEqual(['web-a', 'web-b']);
    expect(doc.resourceQuotas[1]!.status).toEqual({ hard: { pods: '5' }, used: { pods: '2' } });
    expect(JSON.stringify(doc)).not.toContain('managedFields');
  });

  it('round-trips through YAML and JSON into the same live state', () => {
    const doc = snapshotOf('prod-eu', TAKEN, listed());
    expect(parseSnapshot(stringify(doc), 's.yaml')).toEqual(doc);
    expect(parseSnapshot(JSON.stringify(doc), 's.json')).toEqual(doc);
    expect(liveStateOf(doc, 'snapshot s.yaml')).toEqual({
      cluster: 'prod-eu',
      takenAt: TAKEN,
      source: 'snapshot s.yaml',
      projects: doc.projects,
      namespaces: doc.namespaces,
      quotas: doc.resourceQuotas,
    });
  });
});

describe('snapshotOf with the objects the allow-lists judge', () => {
  const objects = () => [
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: 'web-b', managedFields: [{ manager: 'kubectl' }] },
      spec: { type: 'NodePort' },
      status: { loadBalancer: {} },
    },
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p', namespace: 'web-a' },
      spec: { containers: [{ name: 'c', image: 'docker.io/x' }] },
      status: { phase: 'Running' },
    },
    { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'q', namespace: 'other' }, spec: {} },
  ];
  it('keeps those of project namespaces, their apiVersion, kind, metadata and spec, sorted; the live state carries them', () => {
    const doc = snapshotOf('prod-eu', TAKEN, { ...listed(), objects: objects() });
    expect(doc.objects).toEqual([
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'p', namespace: 'web-a' },
        spec: { containers: [{ name: 'c', image: 'docker.io/x' }] },
      },
      { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'web-b' }, spec: { type: 'NodePort' } },
    ]);
    expect(parseSnapshot(stringify(doc), 's.yaml')).toEqual(doc);
    expect(liveStateOf(doc).objects).toEqual(doc.objects);
    expect(() => parseSnapshot(stringify({ ...doc, objects: [{ metadata: { name: 'x' } }] }), 's.yaml')).toThrow(
      /objects\[0\] has no apiVersion, kind, metadata\.name or metadata\.namespace/,
    );
  });
});

describe('parseSnapshot refuses what tenantgate snapshot does not write', () => {
  const good = () => snapshotOf('local', TAKEN, listed()) as unknown as Record<string, unknown>;
  it.each([
    ['not YAML', ': : [', /^s\.yaml: not YAML or JSON/],
    ['a list', '[]', /a snapshot is a mapping with kind ClusterSnapshot/],
    [
      'another kind',
      stringify({ ...good(), kind: 'ConfigMap' }),
      /apiVersion\/kind is "tenantgate\.io\/v1alpha1"\/"ConfigMap"; allowed: tenantgate\.io\/v1alpha1\/ClusterSnapshot/,
    ],
    ['no cluster', stringify({ ...good(), cluster: 3 }), /cluster is 3; allowed: a string/],
    ['a bad time', stringify({ ...good(), takenAt: 'yesterday' }), /takenAt is "yesterday"; allowed: an RFC 3339 time/],
    ['namespaces not a list', stringify({ ...good(), namespaces: {} }), /namespaces is \{\}; allowed: a list/],
    [
      'a quota without namespace',
      stringify({ ...good(), resourceQuotas: [{ metadata: { name: 'q' } }] }),
      /resourceQuotas\[0\] \(q\) has no metadata\.namespace/,
    ],
    [
      'a project without tenant',
      stringify({ ...good(), projects: [{ metadata: { name: 'p' }, spec: {} }] }),
      /projects\[0\] \(p\) has no spec\.tenant/,
    ],
  ])('%s', (_, text, message) => {
    expect(() => parseSnapshot(text, 's.yaml')).toThrow(message);
  });
});

describe('--cluster NAME=CONTEXT', () => {
  it('splits at the first =; an empty NAME is the unnamed cluster', () => {
    expect(parseClusterFlag('prod-eu=admin@prod=eu')).toEqual({ name: 'prod-eu', context: 'admin@prod=eu' });
    expect(parseClusterFlag('=kind-local')).toEqual({ name: '', context: 'kind-local' });
  });
  it.each(['admin', 'prod-eu=', 'Prod_EU=ctx'])('refuses %j naming the flag, the value and the form', (raw) => {
    expect(() => parseClusterFlag(raw)).toThrow(`--cluster ${JSON.stringify(raw)} is not allowed: NAME=CONTEXT`);
  });
});
