/**
 * The one judge of the budget invariant (test/support/budget-invariant.ts), used by the model test, the
 * replica and fleet races, the rolling update and the control-plane restarts: it must catch every way
 * stored objects (and, where the caller sees them, live reservations) can overspend a budget, and not flag
 * what is within it. Where the two judges it replaced disagreed, a test here decides (namespaceDefaults,
 * membership), against the product's own count of the same objects.
 */
import { describe, expect, it } from 'vitest';
import {
  budgetProjectOf,
  checkHeadroomInvariant,
  type BudgetProject,
  type ListedNamespace,
  type ListedQuota,
} from '../support/budget-invariant.js';
import { TEST_NOW } from '../support/instant.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import { namespaceShare } from '../../src/validate/shares.js';
import type { NamespaceObject, Project, ResourceQuotaObject } from '../../src/validate/types.js';

const PROJECT: BudgetProject = {
  name: 'shop',
  budget: { 'requests.cpu': '8', 'requests.memory': '16Gi' },
  defaults: { 'requests.cpu': '1', 'requests.memory': '2Gi' },
  maxNamespaces: 3,
};

const ns = (name: string, options: { project?: string | null; terminating?: boolean } = {}): ListedNamespace => ({
  metadata: {
    name,
    ...(options.project === null ? {} : { labels: { 'tenantgate.io/project': options.project ?? 'shop' } }),
    ...(options.terminating ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
  },
});

const quota = (
  namespace: string,
  cpu: string,
  memory: string,
  extra: Partial<ListedQuota> & { name?: string } = {},
): ListedQuota => ({
  metadata: { name: extra.name ?? 'tenantgate-quota', namespace },
  spec: { hard: { 'requests.cpu': cpu, 'requests.memory': memory }, ...extra.spec },
  ...(extra.status ? { status: extra.status } : {}),
});

const check = (namespaces: ListedNamespace[], quotas: ListedQuota[], project = PROJECT) =>
  checkHeadroomInvariant(project, namespaces, quotas, '42');

describe('checkHeadroomInvariant', () => {
  it('passes a project exactly at its budget and sums what each namespace holds', () => {
    const r = check(
      [ns('shop-a'), ns('shop-b')],
      [
        quota('shop-a', '4', '8Gi', {
          status: {
            hard: { 'requests.cpu': '4', 'requests.memory': '8Gi' },
            used: { 'requests.cpu': '3', 'requests.memory': '1Gi' },
          },
        }),
        quota('shop-b', '4000m', '8192Mi'),
      ],
    );
    expect(r.violations).toEqual([]);
    expect(r.held).toEqual({ 'requests.cpu': '8', 'requests.memory': '16Gi' });
    expect(r.resourceVersion).toBe('42');
  });

  it('catches an overspend of the quotas themselves, per resource', () => {
    const r = check([ns('shop-a'), ns('shop-b')], [quota('shop-a', '4', '8Gi'), quota('shop-b', '4001m', '8Gi')]);
    expect(r.violations).toEqual(['requests.cpu: the namespaces hold 8001m, the budget is 8']);
  });

  it('catches an overspend hidden in status.used: a quota lowered below what its pods use frees nothing', () => {
    const shrunk = quota('shop-a', '1', '2Gi', {
      status: {
        hard: { 'requests.cpu': '1', 'requests.memory': '2Gi' },
        used: { 'requests.cpu': '3', 'requests.memory': '1Gi' },
      },
    });
    const r = check([ns('shop-a'), ns('shop-b')], [shrunk, quota('shop-b', '6', '8Gi')]);
    expect(r.violations).toEqual(['requests.cpu: the namespaces hold 9, the budget is 8']);
    expect(r.detail['shop-a']!['requests.cpu']).toBe('3 (spec 1, status.hard 1, used 3)');
  });

  it('catches an overspend in status.hard: the apiserver still enforces the old, larger limit', () => {
    const lagging = quota('shop-a', '1', '2Gi', {
      status: { hard: { 'requests.cpu': '5', 'requests.memory': '2Gi' }, used: {} },
    });
    expect(check([ns('shop-a'), ns('shop-b')], [lagging, quota('shop-b', '4', '8Gi')]).violations).toEqual([
      'requests.cpu: the namespaces hold 9, the budget is 8',
    ]);
  });

  it('counts the tightest of two quotas of a namespace, and the other when the tight one is gone', () => {
    const loose = quota('shop-a', '6', '12Gi', { name: 'extra' });
    const tight = quota('shop-a', '1', '2Gi');
    expect(check([ns('shop-a'), ns('shop-b')], [loose, tight, quota('shop-b', '6', '8Gi')]).violations).toEqual([]);
    expect(check([ns('shop-a'), ns('shop-b')], [loose, quota('shop-b', '6', '8Gi')]).violations).toEqual([
      'requests.cpu: the namespaces hold 12, the budget is 8',
      'requests.memory: the namespaces hold 20Gi, the budget is 16Gi',
    ]);
  });

  it('counts namespaceDefaults for a live namespace without a quota, nothing more for a terminating one', () => {
    const full = [quota('shop-a', '7', '8Gi')];
    expect(check([ns('shop-a'), ns('shop-new')], full).violations).toEqual([]);
    expect(check([ns('shop-a'), ns('shop-new'), ns('shop-new2')], [quota('shop-a', '7', '8Gi')]).violations).toEqual([
      'requests.cpu: the namespaces hold 9, the budget is 8',
    ]);
    expect(check([ns('shop-a'), ns('shop-new'), ns('shop-gone', { terminating: true })], full).violations).toEqual([]);
    // A terminating namespace still counts the quotas it has left.
    expect(
      check([ns('shop-a'), ns('shop-gone', { terminating: true })], [...full, quota('shop-gone', '2', '1Gi')])
        .violations,
    ).toEqual(['requests.cpu: the namespaces hold 9, the budget is 8']);
  });

  it("counts the project's labelled namespaces only: never another project's, nor an unlabelled one under its prefix", () => {
    // Where the replica race's judge and the model's disagreed: the race's counted shop-tools by its name.
    // A cluster administrator may make it outside any project (T6 binds only non-privileged subjects, and
    // refuses them an unlabelled namespace under a project's prefix); shop's owners have no binding there
    // and the product does not count it. Counting it reported shop as holding 9 of 8, an overspend that
    // is not one.
    const quotas = [quota('shop-a', '6', '8Gi'), quota('shop-tools', '3', '1Gi'), quota('web-a', '100', '100Gi')];
    const r = check([ns('shop-a'), ns('shop-tools', { project: null }), ns('web-a', { project: 'web' })], quotas);
    expect(r.violations).toEqual([]);
    expect(r.held['requests.cpu']).toBe('6');
    expect(check([ns('shop-a', { project: null })], quotas).held['requests.cpu']).toBe('0');
  });

  it('ignores scoped quotas (they bound only some pods)', () => {
    const scoped = quota('shop-a', '50', '50Gi', { name: 'best-effort', spec: { scopes: ['BestEffort'] } });
    expect(check([ns('shop-a')], [quota('shop-a', '1', '1Gi'), scoped]).violations).toEqual([]);
  });

  it('catches more live namespaces than maxNamespaces; terminating ones are not live', () => {
    const four = ['shop-a', 'shop-b', 'shop-c', 'shop-d'];
    const quotas = four.map((n) => quota(n, '1', '1Gi'));
    expect(
      check(
        four.map((n) => ns(n)),
        quotas,
      ).violations,
    ).toEqual(['namespaces: 4 live or being created (shop-a, shop-b, shop-c, shop-d), maxNamespaces is 3']);
    const r = check([...four.slice(0, 3).map((n) => ns(n)), ns('shop-d', { terminating: true })], quotas);
    expect(r.violations).toEqual([]);
    expect([r.liveNamespaces, r.namespaces]).toEqual([3, 4]);
  });

  it('names the quota whose quantity it cannot read', () => {
    expect(() => check([ns('shop-a')], [quota('shop-a', 'lots', '1Gi')])).toThrow(
      /ResourceQuota shop-a\/tenantgate-quota requests.cpu: "lots" is not a quantity/,
    );
  });

  it('counts namespaceDefaults only for a resource no quota names: a status.hard the spec dropped still counts alone', () => {
    // Where the judges disagreed: the replica race's counted the defaults whenever no spec.hard named the
    // resource, the model's only when neither spec.hard, status.hard nor status.used does. shop-a's quota
    // no longer names CPU in its spec (an administrator's edit) but the quota controller has not synced:
    // status.hard still limits CPU to 1, which the ResourceQuota admission plugin enforces. The controller
    // makes its default quota only in a namespace without an unscoped quota, so the defaults (cpu 3 here)
    // are no room shop-a can take: it holds 1, and with shop-b at 7 the project is at its budget of 8.
    const project: BudgetProject = { ...PROJECT, defaults: { 'requests.cpu': '3', 'requests.memory': '2Gi' } };
    const dropped: ListedQuota = {
      metadata: { name: 'tenantgate-quota', namespace: 'shop-a' },
      spec: { hard: { 'requests.memory': '2Gi' } },
      status: { hard: { 'requests.cpu': '1', 'requests.memory': '2Gi' }, used: {} },
    };
    const namespaces = [ns('shop-a'), ns('shop-b')];
    const quotas = [dropped, quota('shop-b', '7', '8Gi')];
    const r = checkHeadroomInvariant(project, namespaces, quotas);
    expect(r.violations).toEqual([]);
    expect(r.detail['shop-a']!['requests.cpu']).toBe('1 (spec -, status.hard 1, used -)');
    // The product counts the namespace the same way (its share arithmetic, which the judge must not use,
    // read here only to show the two agree on the case).
    const projectObject: Project = {
      metadata: { name: 'shop', uid: 'shop' },
      spec: {
        tenant: 'acme',
        owners: [{ kind: 'User', name: 'alice' }],
        quota: { hard: project.budget },
        namespaceDefaults: { quota: { hard: project.defaults } },
      },
    };
    const snapshot = MemorySnapshot.of({
      projects: [projectObject],
      namespaces: namespaces as NamespaceObject[],
      quotas: quotas as ResourceQuotaObject[],
    });
    const share = namespaceShare(snapshot, projectObject, '', TEST_NOW, 'shop-a');
    expect(share.resources.get('requests.cpu')?.toString()).toBe('1');
    // Without any quota that names CPU, both count the defaults.
    const none = { ...dropped, status: { hard: { 'requests.memory': '2Gi' } } };
    expect(checkHeadroomInvariant(project, namespaces, [none, quota('shop-b', '7', '8Gi')]).violations).toEqual([
      'requests.cpu: the namespaces hold 10, the budget is 8',
    ]);
  });

  it('counts a live reservation as max(held, reserved), and a reserved creation against maxNamespaces', () => {
    const reserved = {
      allocations: { 'shop-a': { 'requests.cpu': '5' }, 'shop-c': { 'requests.cpu': '1' } },
      creating: ['shop-c'],
    };
    const quotas = [quota('shop-a', '2', '1Gi'), quota('shop-b', '2', '1Gi')];
    const r = checkHeadroomInvariant(PROJECT, [ns('shop-a'), ns('shop-b')], quotas, '', reserved);
    // shop-a 5 (reserved above its 2), shop-b 2, shop-c 1 (not stored yet).
    expect(r.held['requests.cpu']).toBe('8');
    expect(r.violations).toEqual([]);
    const more = { ...reserved, creating: ['shop-c', 'shop-d'] };
    expect(checkHeadroomInvariant(PROJECT, [ns('shop-a'), ns('shop-b')], quotas, '', more).violations).toEqual([
      'namespaces: 4 live or being created (shop-a, shop-b, shop-c, shop-d), maxNamespaces is 3',
    ]);
  });

  it('reads a Project object as its budget, defaults and maxNamespaces', () => {
    expect(
      budgetProjectOf({
        metadata: { name: 'shop' },
        spec: {
          quota: { hard: { 'requests.cpu': 8 } },
          namespaceDefaults: { quota: { hard: { 'requests.cpu': '1' } } },
          maxNamespaces: 3,
        },
      }),
    ).toEqual({ name: 'shop', budget: { 'requests.cpu': '8' }, defaults: { 'requests.cpu': '1' }, maxNamespaces: 3 });
  });
});
