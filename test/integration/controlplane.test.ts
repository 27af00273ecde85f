/** The local control plane is real: authorizer, quota admission, namespace controller, dry run, CRD schema. */
import { describe, expect, it } from 'vitest';
import { ensureProjectCrd, eventually, kubectl, uniqueName } from '../support/cluster.js';

const pod = (ns: string, name: string, cpu: string) =>
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns },
    spec: {
      containers: [
        {
          name: 'c',
          image: 'registry.invalid/pause:3',
          resources: { requests: { cpu, memory: '64Mi' }, limits: { cpu, memory: '64Mi' } },
        },
      ],
    },
  });

describe('local control plane', () => {
  it('lets the admin create a Namespace and a ResourceQuota', async () => {
    const ns = uniqueName('cp-admin');
    await kubectl('admin', ['create', 'namespace', ns]);
    await kubectl('admin', ['-n', ns, 'create', 'quota', 'q', '--hard=requests.cpu=1,pods=2']);
    const got = await kubectl('admin', [
      '-n',
      ns,
      'get',
      'resourcequota',
      'q',
      '-o',
      'jsonpath={.spec.hard.requests\\.cpu}',
    ]);
    expect(got.stdout).toBe('1');
  });

  it('refuses a user without RBAC with 403 from the real authorizer', async () => {
    const result = await kubectl('nobody', ['create', 'namespace', uniqueName('cp-nobody')], { reject: false });
    expect(result.exitCode).not.toBe(0);
    expect(result.stderr).toMatch(/Forbidden|forbidden/);
    expect(result.stderr).toContain('User "nobody" cannot create resource "namespaces"');
  });

  it('refuses a pod over the namespace quota (real ResourceQuota admission, usage from the controller manager)', async () => {
    const ns = uniqueName('cp-quota');
    await kubectl('admin', ['create', 'namespace', ns]);
    await kubectl('admin', [
      '-n',
      ns,
      'create',
      'quota',
      'q',
      '--hard=requests.cpu=500m,requests.memory=1Gi,limits.cpu=500m,limits.memory=1Gi,pods=5',
    ]);
    await eventually(async () => {
      const r = await kubectl('admin', ['-n', ns, 'get', 'quota', 'q', '-o', 'jsonpath={.status.hard.pods}']);
      if (r.stdout !== '5') throw new Error('quota status not computed yet');
    });
    await kubectl('admin', ['apply', '-f', '-'], { input: pod(ns, 'fits', '300m') });
    const over = await kubectl('admin', ['apply', '-f', '-'], { input: pod(ns, 'too-big', '300m'), reject: false });
    expect(over.exitCode).not.toBe(0);
    expect(over.stderr).toMatch(/exceeded quota: q, requested: .*requests\.cpu=300m/);
  });

  it('refuses a pod asking for cpu in a namespace without quota (limitedResources)', async () => {
    const ns = uniqueName('cp-noquota');
    await kubectl('admin', ['create', 'namespace', ns]);
    await eventually(async () => kubectl('admin', ['-n', ns, 'get', 'serviceaccount', 'default']));
    const result = await kubectl('admin', ['apply', '-f', '-'], { input: pod(ns, 'p', '100m'), reject: false });
    expect(result.exitCode).not.toBe(0);
    // The ResourceQuota admission's limitedResources refusal (k8s.io/apiserver's resourcequota
    // controller: "insufficient quota to consume: <the limited resources without a covering quota>"),
    // not any other Forbidden (RBAC, a policy, a webhook).
    expect(result.stderr).toContain(
      `pods "p" is forbidden: insufficient quota to consume: requests.cpu,requests.memory`,
    );
    expect((await kubectl('admin', ['-n', ns, 'get', 'pod', 'p', '--ignore-not-found', '-o', 'name'])).stdout).toBe('');
  });

  it('really deletes a namespace with content (namespace controller runs)', async () => {
    const ns = uniqueName('cp-delete');
    await kubectl('admin', ['create', 'namespace', ns]);
    for (let i = 0; i < 3; i++)
      await kubectl('admin', ['-n', ns, 'create', 'configmap', `cm${i}`, '--from-literal=k=v']);
    await kubectl('admin', ['-n', ns, 'create', 'quota', 'q', '--hard=pods=1']);
    await kubectl('admin', ['delete', 'namespace', ns, '--wait=false']);
    await eventually(
      async () => {
        const r = await kubectl('admin', ['get', 'namespace', ns], { reject: false });
        if (r.exitCode === 0) throw new Error(`namespace ${ns} still exists`);
        expect(r.stderr).toContain('NotFound');
      },
      { timeoutMs: 90_000, what: `namespace ${ns} gone` },
    );
  });

  it('persists nothing on kubectl apply --dry-run=server', async () => {
    const ns = uniqueName('cp-dry');
    const out = await kubectl('admin', ['create', 'namespace', ns, '--dry-run=server', '-o', 'name']);
    expect(out.stdout).toBe(`namespace/${ns}`);
    const get = await kubectl('admin', ['get', 'namespace', ns], { reject: false });
    expect(get.exitCode).not.toBe(0);
    expect(get.stderr).toContain('NotFound');
  });

  it('installs the Project CRD from manifests/crd: a valid Project is accepted, an invalid one rejected by the schema', async () => {
    await ensureProjectCrd();
    const name = uniqueName('crdok');
    const valid = {
      apiVersion: 'tenantgate.io/v1alpha1',
      kind: 'Project',
      metadata: { name },
      spec: {
        tenant: 'acme',
        quota: { hard: { 'requests.cpu': '4', pods: 10 } },
        owners: [{ kind: 'User', name: 'alice' }],
      },
    };
    await kubectl('admin', ['apply', '-f', '-'], { input: JSON.stringify(valid) });
    const got = await kubectl('admin', ['get', 'project', name, '-o', 'jsonpath={.spec.tenant}']);
    expect(got.stdout).toBe('acme');
    const invalid = {
      ...valid,
      metadata: { name: uniqueName('crdbad') },
      spec: { ...valid.spec, owners: [{ kind: 'Robot', name: 'r2' }], quota: { hard: { 'requests.cpu': 'lots' } } },
    };
    const rejected = await kubectl('admin', ['apply', '-f', '-'], { input: JSON.stringify(invalid), reject: false });
    expect(rejected.exitCode).not.toBe(0);
    expect(rejected.stderr).toMatch(/spec\.owners\[0\]\.kind: Unsupported value: "Robot"/);
    expect(rejected.stderr).toMatch(/spec\.quota\.hard\.requests\.cpu: Invalid value: "lots"/);
    const noTenant = { ...valid, metadata: { name: uniqueName('crdbad') }, spec: { quota: valid.spec.quota } };
    const rejected2 = await kubectl('admin', ['apply', '-f', '-'], { input: JSON.stringify(noTenant), reject: false });
    expect(rejected2.stderr).toMatch(/spec\.tenant: Required value/);
    await kubectl('admin', ['delete', 'project', name]);
  });
});
