/**
 * Which ledger entries leave before their expiry, the settled marks they leave behind, and the
 * readiness check on them (src/webhook/headroom/ledger-settlement.ts, docs/adr/0003-headroom-ledger.md).
 * The whole protocol against lagging replicas is checked by test/unit/headroom-model.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { LedgerEntry } from '../../src/ledger/ledger.js';
import { settledOf } from '../../src/ledger/ledger-format.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import type { NamespaceObject, Project, ResourceQuotaObject } from '../../src/validate/types.js';
import { marksLive, marksReach, maxMarks, settle, shownInView } from '../../src/webhook/headroom/ledger-settlement.js';
import { mergeEntry } from '../../src/webhook/headroom/ledger-entries.js';

/** The instant the shares are judged at (no burst in these projects: any instant gives the same). */
const AT = Date.UTC(2026, 10, 1);

const project: Project = {
  metadata: { name: 'p', uid: 'uid-p', resourceVersion: '1' },
  spec: {
    tenant: 't',
    owners: [{ kind: 'User', name: 'alice' }],
    quota: { hard: { 'requests.cpu': '10' } },
    namespaceDefaults: { quota: { hard: { 'requests.cpu': '1' } } },
  },
};
const ns = (name: string, uid = `uid-${name}`, rv = '20'): NamespaceObject => ({
  metadata: { name, uid, resourceVersion: rv, labels: { 'tenantgate.io/project': 'p', 'tenantgate.io/tenant': 't' } },
});
const quota = (namespace: string, name: string, cpu: string, rv: string): ResourceQuotaObject => ({
  metadata: { name, namespace, resourceVersion: rv },
  spec: { hard: { 'requests.cpu': cpu } },
  status: { hard: { 'requests.cpu': cpu } },
});
const view = (namespaces: NamespaceObject[], quotas: ResourceQuotaObject[] = []) =>
  MemorySnapshot.of({ projects: [project], namespaces, quotas });
const marks = { Namespace: '100', ResourceQuota: '100' };
const base = { created: 1, expires: 30_001, seen: { Namespace: '10', ResourceQuota: '10' } };

const nsCreate: LedgerEntry = { namespace: 'p-a', allocation: { 'requests.cpu': '1' }, ...base };
const raise: LedgerEntry = {
  namespace: 'p-a',
  quota: 'q',
  allocation: { 'requests.cpu': '3' },
  write: { spec: { hard: { 'requests.cpu': '3' } } },
  versions: [{ spec: { hard: { 'requests.cpu': '2' } } }, { spec: { hard: { 'requests.cpu': '3' } } }],
  basedOn: '40',
  ...base,
};
const deletion: LedgerEntry = {
  namespace: 'p-a',
  quota: 'q',
  allocation: {},
  write: null,
  versions: [{ spec: { hard: { 'requests.cpu': '2' } } }, null],
  basedOn: '40',
  ...base,
};

describe('shownInView: an entry leaves once the writer’s own cache shows what it stands for', () => {
  it('a namespace creation: once the namespace is shown, and not an incarnation it replaces', () => {
    expect(shownInView(nsCreate, view([]), marks, 'p', 'c', AT)).toBe(false);
    expect(shownInView(nsCreate, view([ns('p-a')]), marks, 'p', 'c', AT)).toBe(true);
    expect(shownInView({ ...nsCreate, replaces: ['uid-old'] }, view([ns('p-a', 'uid-old')]), marks, 'p', 'c', AT)).toBe(
      false,
    );
    expect(shownInView({ ...nsCreate, replaces: ['uid-old'] }, view([ns('p-a', 'uid-new')]), marks, 'p', 'c', AT)).toBe(
      true,
    );
  });

  it('only an object stored after the admission: an older incarnation a lagging cache still shows is not it', () => {
    // The admitting replica had seen the old p-a go (its marks are past it) and did not list it in replaces.
    const late = { ...nsCreate, seen: { Namespace: '30', ResourceQuota: '30' } };
    expect(shownInView(late, view([ns('p-a', 'uid-old', '20')]), marks, 'p', 'c', AT)).toBe(false);
    expect(shownInView(late, view([ns('p-a', 'uid-new', '31')]), marks, 'p', 'c', AT)).toBe(true);
    // A quota created again with the same spec: the one a lagging cache shows is older than the admission.
    const create = { ...raise, basedOn: undefined, seen: { Namespace: '50', ResourceQuota: '50' } } as LedgerEntry;
    delete create.basedOn;
    expect(shownInView(create, view([ns('p-a')], [quota('p-a', 'q', '3', '45')]), marks, 'p', 'c', AT)).toBe(false);
    expect(shownInView(create, view([ns('p-a')], [quota('p-a', 'q', '3', '51')]), marks, 'p', 'c', AT)).toBe(true);
    // Without the admitting replicas' marks (settlement off there, or merged with such an admission): by expiry only.
    const unmarked = { ...nsCreate };
    delete unmarked.seen;
    expect(shownInView(unmarked, view([ns('p-a')]), marks, 'p', 'c', AT)).toBe(false);
  });

  it('a quota write: once its newest write is stored above the version it replaced, covering the allocation', () => {
    expect(shownInView(raise, view([ns('p-a')], [quota('p-a', 'q', '2', '40')]), marks, 'p', 'c', AT)).toBe(false);
    // Same spec but not above the version replaced: another write of that spec, not this one.
    expect(shownInView(raise, view([ns('p-a')], [quota('p-a', 'q', '3', '40')]), marks, 'p', 'c', AT)).toBe(false);
    expect(shownInView(raise, view([ns('p-a')], [quota('p-a', 'q', '3', '41')]), marks, 'p', 'c', AT)).toBe(true);
    // The namespace's share is capped by another quota below the reserved allocation: not covered yet.
    expect(
      shownInView(
        raise,
        view([ns('p-a')], [quota('p-a', 'q', '3', '41'), quota('p-a', 'other', '2', '30')]),
        marks,
        'p',
        'c',
        AT,
      ),
    ).toBe(false);
  });

  it('a quota written twice: the write that can land last, not the one recorded last', () => {
    // 2 → 3 conditional on version 40 is recorded first; a slower review of 5 → 2, conditional on the
    // older 35, is recorded after it (it reserves nothing: it lowers). 2 shown at 40 is not the second
    // write stored (it can no longer land) and the first still can: the entry, and its room, stay.
    const late: LedgerEntry = {
      ...raise,
      allocation: {},
      write: { spec: { hard: { 'requests.cpu': '2' } } },
      versions: [{ spec: { hard: { 'requests.cpu': '5' } } }, { spec: { hard: { 'requests.cpu': '2' } } }],
      basedOn: '35',
    };
    const [merged] = mergeEntry([raise], late);
    expect(shownInView(merged!, view([ns('p-a')], [quota('p-a', 'q', '2', '40')]), marks, 'p', 'c', AT)).toBe(false);
    expect(shownInView(merged!, view([ns('p-a')], [quota('p-a', 'q', '3', '41')]), marks, 'p', 'c', AT)).toBe(true);
    // Recorded in the order of their bases, the newer record is the one to see stored.
    const [inOrder] = mergeEntry([{ ...late, basedOn: '30' }], raise);
    expect(shownInView(inOrder!, view([ns('p-a')], [quota('p-a', 'q', '3', '41')]), marks, 'p', 'c', AT)).toBe(true);
  });

  it('a deletion: once the quota is absent and the quota stream is past the version deleted', () => {
    expect(shownInView(deletion, view([ns('p-a')], [quota('p-a', 'q', '2', '40')]), marks, 'p', 'c', AT)).toBe(false);
    expect(shownInView(deletion, view([ns('p-a')]), { Namespace: '100', ResourceQuota: '39' }, 'p', 'c', AT)).toBe(
      false,
    );
    expect(shownInView(deletion, view([ns('p-a')]), marks, 'p', 'c', AT)).toBe(true);
  });
});

describe('settle: the entries that stay and the marks left', () => {
  it('drops what is shown, keeps the rest, and raises the marks per stream with the latest expiry settled', () => {
    const pending: LedgerEntry = { namespace: 'p-b', allocation: { 'requests.cpu': '1' }, created: 2, expires: 40_000 };
    const out = settle(
      [nsCreate, pending],
      view([ns('p-a')]),
      { Namespace: '90', ResourceQuota: '120' },
      { Namespace: '95', ResourceQuota: '80' },
      'p',
      'c',
      AT,
    );
    expect(out.kept).toEqual([pending]);
    expect(out.settled).toBe(1);
    expect(out.settledThrough).toEqual({ Namespace: '95', ResourceQuota: '120', until: 30_001 });
  });

  it('settles nothing and keeps the marks when nothing is shown, or the watermarks are not revisions', () => {
    expect(settle([nsCreate], view([]), marks, undefined, 'p', 'c', AT)).toEqual({
      kept: [nsCreate],
      settled: 0,
      settledThrough: undefined,
    });
    expect(settle([nsCreate], view([ns('p-a')]), { Namespace: 'x', ResourceQuota: '1' }, marks, 'p', 'c', AT)).toEqual({
      kept: [nsCreate],
      settled: 0,
      settledThrough: marks,
    });
    expect(settle([nsCreate], view([ns('p-a')]), undefined, marks, 'p', 'c', AT).settled).toBe(0);
  });
});

describe('the marks', () => {
  it('marksReach compares every stream as etcd revisions, and never guesses', () => {
    expect(marksReach(undefined, undefined)).toBe(true);
    expect(marksReach(marks, undefined)).toBe(true);
    expect(marksReach(undefined, marks)).toBe(false);
    expect(marksReach({ Namespace: '100', ResourceQuota: '99' }, marks)).toBe(false);
    expect(marksReach({ Namespace: '1000', ResourceQuota: '100' }, marks)).toBe(true);
    // Compared as integers, not as text ("99" > "100" as text).
    expect(marksReach({ Namespace: '99', ResourceQuota: '99' }, { Namespace: '100', ResourceQuota: '100' })).toBe(
      false,
    );
    expect(marksReach({ Namespace: 'abc', ResourceQuota: '100' }, marks)).toBe(false);
  });

  it('maxMarks is per stream and keeps the later until; marksLive until it passes', () => {
    expect(
      maxMarks({ Namespace: '9', ResourceQuota: '200', until: 5 }, { Namespace: '10', ResourceQuota: '30', until: 3 }),
    ).toEqual({ Namespace: '10', ResourceQuota: '200', until: 5 });
    expect(marksLive({ ...marks, until: 10 }, 9)).toBe(true);
    expect(marksLive({ ...marks, until: 10 }, 10)).toBe(false);
    expect(marksLive(undefined, 0)).toBe(false);
  });

  it('the ConfigMap key `settled` reads back; absent it is no marks, anything else is refused', () => {
    const cm = 'tenantgate-system/tenantgate-ledger-web';
    expect(settledOf(cm, JSON.stringify({ Namespace: '1', ResourceQuota: '2', until: 3 }))).toEqual({
      settledThrough: { Namespace: '1', ResourceQuota: '2', until: 3 },
    });
    expect(settledOf(cm, undefined)).toEqual({});
    expect(() => settledOf(cm, 'not json')).toThrow(
      /^ConfigMap tenantgate-system\/tenantgate-ledger-web, data key settled: not JSON/,
    );
    expect(() => settledOf(cm, JSON.stringify({ Namespace: 1 }))).toThrow(
      'ConfigMap tenantgate-system/tenantgate-ledger-web, data key settled: settled.Namespace is 1, allowed: a resourceVersion (decimal digits)',
    );
  });
});
