/** The budget view's pure parts: routing and objects (src/view/api.ts), the front-proxy check (src/view/server.ts), visibility's per-project RBAC (src/controller/project-access.ts). */
import { TEST_NOW } from '../support/instant.js';
import { describe, expect, it } from 'vitest';
import { API_RESOURCE_LIST, handle, wantsTable, type Identity, type ViewSource } from '../../src/view/api.js';
import { callerOf, frontProxyAuthFrom, type FrontProxyAuth } from '../../src/view/server.js';
import { desiredProjectAccess, projectAccessMatches } from '../../src/controller/project-access.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import { aNamespace, aProject, aQuota } from '../support/fixtures.js';

const pay = aProject(
  'pay',
  { owners: [{ kind: 'User', name: 'alice' }], quota: { hard: { 'requests.cpu': '4' } } },
  { uid: 'u-pay' },
);
const web = aProject(
  'web',
  {
    tenant: 'globex',
    owners: [
      { kind: 'Group', name: 'web-admins' },
      { kind: 'ServiceAccount', name: 'ci', namespace: 'build' },
    ],
    quota: { hard: { 'requests.cpu': '2' } },
  },
  { uid: 'u-web' },
);
const snapshot = MemorySnapshot.of({
  projects: [pay, web],
  namespaces: [
    aNamespace('pay-a', { project: 'pay' }),
    aNamespace('pay-b', { project: 'pay' }),
    aNamespace('web-a', { project: 'web', tenant: 'globex' }),
    aNamespace('plain'),
  ],
  quotas: [
    aQuota('pay-a', { 'requests.cpu': '1' }, { used: { 'requests.cpu': '250m' } }),
    aQuota('pay-b', { 'requests.cpu': '500m' }),
  ],
});
const source: ViewSource = { snapshot: () => snapshot, cluster: '' };
const alice: Identity = { username: 'alice', groups: ['tenants'] };
const get = (path: string, user: Identity = alice, accept = 'application/json') =>
  handle({ at: TEST_NOW, method: 'GET', path, accept, user }, source);
const V = '/apis/view.tenantgate.io/v1alpha1';
const TABLE =
  'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';

describe('budget view handlers', () => {
  it('discovery: /apis, the group, the version with both resources', () => {
    expect(get('/apis').body).toMatchObject({
      kind: 'APIGroupList',
      groups: [{ name: 'view.tenantgate.io', preferredVersion: { groupVersion: 'view.tenantgate.io/v1alpha1' } }],
    });
    expect(get('/apis/view.tenantgate.io').body).toMatchObject({ kind: 'APIGroup', name: 'view.tenantgate.io' });
    expect(get(V).body).toBe(API_RESOURCE_LIST);
    expect(
      API_RESOURCE_LIST.resources.map((r) => [r.name, r.namespaced, r.kind, r.verbs.join(','), r.shortNames ?? []]),
    ).toEqual([
      ['budgets', true, 'Budget', 'get,list', ['budget']],
      ['ownedprojects', false, 'OwnedProject', 'get,list', []],
    ]);
  });

  it("a Budget is the project's budget, named after the project, with this namespace's share", () => {
    // By hand from the snapshot above: pay-a holds its quota's 1 (250m in use), pay-b its 500m; 4 − 1.5 left.
    const payA = {
      namespace: 'pay-a',
      allocated: { 'requests.cpu': '1' },
      used: { 'requests.cpu': '250m' },
      hard: { 'requests.cpu': '1' },
      defaulted: false,
    };
    const payB = {
      namespace: 'pay-b',
      allocated: { 'requests.cpu': '500m' },
      used: {},
      hard: { 'requests.cpu': '500m' },
      defaulted: false,
    };
    const r = get(`${V}/namespaces/pay-b/budgets/pay`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      apiVersion: 'view.tenantgate.io/v1alpha1',
      kind: 'Budget',
      metadata: { name: 'pay', namespace: 'pay-b' },
      project: 'pay',
      tenant: 'acme',
      cluster: '',
      resources: [{ resource: 'requests.cpu', budget: '4', allocated: '1500m', used: '250m', headroom: '2500m' }],
      namespace: payB,
      namespaces: [payA, payB],
    });
  });

  it('list in a project namespace: exactly one Budget; outside projects: none, and get is NotFound naming the namespace', () => {
    expect((get(`${V}/namespaces/pay-a/budgets`).body as { kind: string; items: unknown[] }).items).toHaveLength(1);
    expect(get(`${V}/namespaces/plain/budgets`).body).toMatchObject({ kind: 'BudgetList', items: [] });
    const missing = get(`${V}/namespaces/plain/budgets/pay`);
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({
      kind: 'Status',
      reason: 'NotFound',
      code: 404,
      message: 'budgets.view.tenantgate.io "pay" not found: namespace plain belongs to no project, so it has no budget',
    });
    expect((get(`${V}/namespaces/pay-a/budgets/web`).body as { message: string }).message).toContain(
      'the Budget in namespace pay-a is pay',
    );
    expect(
      (get(`${V}/budgets`).body as { items: Array<{ metadata: { namespace: string } }> }).items.map(
        (b) => b.metadata.namespace,
      ),
    ).toEqual(['pay-a', 'pay-b', 'web-a']);
  });

  it('a Table for kubectl get: one row per resource, RESOURCE/BUDGET/ALLOCATED/USED/HEADROOM (NAME only with -o wide)', () => {
    const t = get(`${V}/namespaces/pay-a/budgets`, alice, TABLE).body as {
      kind: string;
      columnDefinitions: Array<{ name: string; priority: number }>;
      rows: Array<{ cells: unknown[]; object: { metadata: unknown } }>;
    };
    expect(t.kind).toBe('Table');
    expect(t.columnDefinitions.filter((c) => c.priority === 0).map((c) => c.name)).toEqual([
      'Resource',
      'Budget',
      'Allocated',
      'Used',
      'Headroom',
    ]);
    expect(t.rows).toEqual([
      {
        cells: ['pay', 'requests.cpu', '4', '1500m', '250m', '2500m'],
        object: {
          kind: 'PartialObjectMetadata',
          apiVersion: 'meta.k8s.io/v1',
          metadata: { name: 'pay', namespace: 'pay-a' },
        },
      },
    ]);
    expect(wantsTable('application/json')).toBe(false);
    expect(wantsTable('application/json;as=Table;v=v1beta1;g=meta.k8s.io')).toBe(false);
  });

  it('ownedprojects: only the projects the caller owns, by user, group or ServiceAccount', () => {
    const names = (user: Identity) =>
      (get(`${V}/ownedprojects`, user).body as { items: Array<{ metadata: { name: string } }> }).items.map(
        (i) => i.metadata.name,
      );
    expect(names(alice)).toEqual(['pay']);
    expect(names({ username: 'bob', groups: ['web-admins'] })).toEqual(['web']);
    expect(names({ username: 'system:serviceaccount:build:ci', groups: [] })).toEqual(['web']);
    expect(names({ username: 'mallory', groups: ['tenants'] })).toEqual([]);
    expect(get(`${V}/ownedprojects/pay`).body).toMatchObject({
      kind: 'OwnedProject',
      metadata: { name: 'pay' },
      tenant: 'acme',
      namespaces: ['pay-a', 'pay-b'],
      owners: [{ kind: 'User', name: 'alice' }],
    });
    expect(get(`${V}/ownedprojects/web`).status).toBe(404);
  });

  it('read-only, 404 for unknown paths, 503 before the cache has synced', () => {
    expect(
      handle(
        { at: TEST_NOW, method: 'DELETE', path: `${V}/namespaces/pay-a/budgets/pay`, accept: '', user: alice },
        source,
      ).status,
    ).toBe(405);
    expect(get(`${V}/widgets`).status).toBe(404);
    expect(
      handle(
        { at: TEST_NOW, method: 'GET', path: `${V}/budgets`, accept: '', user: alice },
        { snapshot: () => undefined, cluster: '' },
      ).status,
    ).toBe(503);
    expect(
      handle(
        { at: TEST_NOW, method: 'GET', path: V, accept: '', user: alice },
        { snapshot: () => undefined, cluster: '' },
      ).status,
    ).toBe(200);
  });
});

describe('front proxy authentication', () => {
  const auth: FrontProxyAuth = {
    ca: 'PEM',
    allowedNames: ['front-proxy-client'],
    usernameHeaders: ['X-Remote-User'],
    groupHeaders: ['X-Remote-Group'],
  };

  it('reads kube-system/extension-apiserver-authentication, naming what is missing', () => {
    expect(
      frontProxyAuthFrom({
        'requestheader-client-ca-file': 'PEM',
        'requestheader-allowed-names': '["front-proxy-client"]',
        'requestheader-username-headers': '["X-Remote-User"]',
        'requestheader-group-headers': '["X-Remote-Group"]',
      }),
    ).toEqual(auth);
    expect(() => frontProxyAuthFrom({})).toThrow('no requestheader-client-ca-file');
    expect(() =>
      frontProxyAuthFrom({ 'requestheader-client-ca-file': 'PEM', 'requestheader-username-headers': 'X-Remote-User' }),
    ).toThrow('requestheader-username-headers is "X-Remote-User", expected a JSON list of strings');
  });

  it('trusts the headers only from a certificate the CA signed with an allowed name', () => {
    const headers = { 'x-remote-user': ['alice'], 'x-remote-group': ['tenants', 'acme'] };
    expect(callerOf({ authorized: true, commonName: 'front-proxy-client' }, headers, auth)).toEqual({
      username: 'alice',
      groups: ['tenants', 'acme'],
    });
    expect(callerOf({ authorized: false, commonName: '' }, headers, auth)).toMatchObject({
      refused: expect.stringContaining('no client certificate'),
    });
    expect(
      callerOf({ authorized: false, commonName: 'x', error: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' }, headers, auth),
    ).toMatchObject({
      refused: expect.stringContaining('not signed by the requestheader CA (UNABLE_TO_VERIFY_LEAF_SIGNATURE)'),
    });
    expect(callerOf({ authorized: true, commonName: 'someone-else' }, headers, auth)).toMatchObject({
      refused: expect.stringContaining('not one of requestheader-allowed-names'),
    });
    expect(callerOf({ authorized: true, commonName: 'front-proxy-client' }, {}, auth)).toMatchObject({
      refused: expect.stringContaining('no user in X-Remote-User'),
    });
  });
});

describe('visibility own: the per-project ClusterRole and binding', () => {
  const namespaces = [...snapshot.namespacesOfProject('pay')];

  it('get on the Project and its labelled namespaces, bound to the owners, owned by the Project', () => {
    const d = desiredProjectAccess(pay, namespaces)!;
    expect(d.role.metadata).toMatchObject({
      name: 'tenantgate:project:pay',
      labels: { 'tenantgate.io/project': 'pay', 'app.kubernetes.io/managed-by': 'tenantgate' },
      ownerReferences: [{ kind: 'Project', name: 'pay', uid: 'u-pay', controller: true }],
    });
    expect(d.role.rules).toEqual([
      { apiGroups: ['tenantgate.io'], resources: ['projects'], resourceNames: ['pay'], verbs: ['get'] },
      { apiGroups: [''], resources: ['namespaces'], resourceNames: ['pay-a', 'pay-b'], verbs: ['get'] },
    ]);
    expect(desiredProjectAccess(web, [...snapshot.namespacesOfProject('web')])!.binding.subjects).toEqual([
      { apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'web-admins' },
      { kind: 'ServiceAccount', name: 'ci', namespace: 'build' },
    ]);
  });

  it('no namespaces: no namespace rule at all (empty resourceNames would mean every namespace)', () => {
    expect(desiredProjectAccess(pay, [])!.role.rules).toEqual([
      { apiGroups: ['tenantgate.io'], resources: ['projects'], resourceNames: ['pay'], verbs: ['get'] },
    ]);
  });

  it('matches what is stored regardless of order; a changed rule, subject or uid does not match', () => {
    const d = desiredProjectAccess(pay, namespaces)!;
    const stored = (o: object) => JSON.parse(JSON.stringify(o)) as never;
    expect(projectAccessMatches(stored(d.role), d.role)).toBe(true);
    expect(projectAccessMatches(stored({ ...d.role, rules: [...d.role.rules].reverse() }), d.role)).toBe(true);
    expect(projectAccessMatches(stored({ ...d.role, rules: [d.role.rules[0]] }), d.role)).toBe(false);
    expect(
      projectAccessMatches(
        stored({ ...d.binding, subjects: [{ kind: 'User', name: 'mallory', apiGroup: 'rbac.authorization.k8s.io' }] }),
        d.binding,
      ),
    ).toBe(false);
    expect(
      projectAccessMatches(
        stored({
          ...d.binding,
          metadata: { ...d.binding.metadata, annotations: { 'tenantgate.io/project-uid': 'older' } },
        }),
        d.binding,
      ),
    ).toBe(false);
    expect(desiredProjectAccess(aProject('new'), [])).toBeUndefined();
  });
});
