/**
 * X10 (a claim binds only its project's PersistentVolumes) and H4 (a Gateway names an allowed
 * GatewayClass), docs/rules.md#allow-lists: the pure rules, and the webhook's decide reading the volume
 * a claim names before deciding (one GET, only when a volume name is new).
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { volumeOwnership, type PersistentVolumeLike } from '../../src/validate/allow-lists.js';
import { allowSubject, checkGateway, checkPersistentVolumeClaim } from '../../src/validate/rules/allow-lists.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import type { AllowLists } from '../../src/validate/types.js';
import { verdictFor, type AdmissionRequest } from '../../src/webhook/review.js';
import { readingPersistentVolumes } from '../../src/webhook/persistent-volumes.js';
import { aNamespace, aProject, aUser, reviewContext } from '../support/fixtures.js';

const snapshot = new MemorySnapshot();
snapshot.upsertProject(aProject('payments', {}));
snapshot.upsertProject(aProject('shop', {}));
snapshot.upsertNamespace(aNamespace('payments-batch', { project: 'payments' }));
snapshot.upsertNamespace(aNamespace('shop-db', { project: 'shop' }));
snapshot.upsertNamespace(aNamespace('elsewhere'));
const projectOf = (ns: string) => snapshot.namespace(ns)?.metadata.labels?.['tenantgate.io/project'];

const subject = (kind: string, allow: AllowLists = {}) =>
  allowSubject(DEFAULT_CONFIG, aProject('payments', { allow }), kind, 'payments-batch', 'data');
const claim = (spec: Record<string, unknown>) => ({
  metadata: { name: 'data' },
  spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, ...spec },
});
const pv = (
  labels: Record<string, string> = {},
  claimRef?: { namespace: string; name: string },
): PersistentVolumeLike => ({ metadata: { name: 'pv-1', labels }, spec: claimRef ? { claimRef } : {} });
const x10 = (volume: PersistentVolumeLike | null | undefined, allow: AllowLists = {}) => {
  const s = { ...subject('PersistentVolumeClaim', allow), volume: volumeOwnership('pv-1', volume, projectOf) };
  return checkPersistentVolumeClaim(s, claim({ volumeName: 'pv-1' })).map((v) => `[${v.rule}] ${v.message}`);
};

describe('X10: a claim binds by volumeName only a PersistentVolume of its project', () => {
  const allowed =
    'allowed: PersistentVolumes of project payments (label tenantgate.io/project=payments, or a claimRef into its namespaces)';

  it("refuses another project's volume, by label or by the claimRef a Released volume keeps", () => {
    expect(x10(pv({ 'tenantgate.io/project': 'shop' }))).toEqual([
      `[X10] PersistentVolumeClaim payments-batch/data: volumeName "pv-1" (a PersistentVolume of project shop: label tenantgate.io/project=shop) is not allowed for project payments; ${allowed}`,
    ]);
    expect(x10(pv({}, { namespace: 'shop-db', name: 'orders' }))).toEqual([
      `[X10] PersistentVolumeClaim payments-batch/data: volumeName "pv-1" (a PersistentVolume of project shop: claimRef shop-db/orders) is not allowed for project payments; ${allowed}`,
    ]);
  });

  it('admits its own volume; the label wins over a claimRef', () => {
    expect(x10(pv({ 'tenantgate.io/project': 'payments' }))).toEqual([]);
    expect(x10(pv({}, { namespace: 'payments-batch', name: 'old' }))).toEqual([]);
    expect(x10(pv({ 'tenantgate.io/project': 'payments' }, { namespace: 'shop-db', name: 'orders' }))).toEqual([]);
    expect(x10(pv({ 'tenantgate.io/project': 'shop' }, { namespace: 'payments-batch', name: 'data' })).length).toBe(1);
  });

  it('refuses a volume of no project, a missing one and an unreadable one, unless the project allows unowned volumes', () => {
    expect(x10(pv())).toEqual([
      `[X10] PersistentVolumeClaim payments-batch/data: volumeName "pv-1" (a PersistentVolume of no project: no label, no claimRef) is not allowed for project payments; ${allowed}`,
    ]);
    expect(x10(pv({}, { namespace: 'elsewhere', name: 'x' }))[0]).toContain(
      '(a PersistentVolume of no project: claimRef elsewhere/x)',
    );
    expect(x10(null)[0]).toContain(
      '(no such PersistentVolume: one created later under that name would belong to no project)',
    );
    expect(x10(undefined)[0]).toContain(
      '(the webhook could not read that PersistentVolume, so whose it is is unknown)',
    );
    const unowned = { persistentVolumes: { unowned: true } };
    expect(x10(pv(), unowned)).toEqual([]);
    expect(x10(null, unowned)).toEqual([]);
    expect(x10(undefined, unowned).length).toBe(1);
    expect(x10(pv({ 'tenantgate.io/project': 'shop' }), unowned).length).toBe(1);
  });

  it('a selector must require the project label (matchLabels, or In with only that value)', () => {
    const s = subject('PersistentVolumeClaim');
    expect(
      checkPersistentVolumeClaim(s, claim({ selector: { matchLabels: { tier: 'fast' } } })).map((v) => v.message),
    ).toEqual([
      "PersistentVolumeClaim payments-batch/data: a selector without tenantgate.io/project=payments (it may bind another project's PersistentVolume) is not allowed for project payments; allowed: a selector with matchLabels tenantgate.io/project: payments",
    ]);
    expect(
      checkPersistentVolumeClaim(s, claim({ selector: { matchLabels: { 'tenantgate.io/project': 'shop' } } })).map(
        (v) => v.rule,
      ),
    ).toEqual(['X10']);
    expect(
      checkPersistentVolumeClaim(
        s,
        claim({
          selector: {
            matchExpressions: [{ key: 'tenantgate.io/project', operator: 'In', values: ['payments', 'shop'] }],
          },
        }),
      ).map((v) => v.rule),
    ).toEqual(['X10']);
    expect(
      checkPersistentVolumeClaim(
        s,
        claim({ selector: { matchLabels: { 'tenantgate.io/project': 'payments', tier: 'fast' } } }),
      ),
    ).toEqual([]);
    expect(
      checkPersistentVolumeClaim(
        s,
        claim({
          selector: { matchExpressions: [{ key: 'tenantgate.io/project', operator: 'In', values: ['payments'] }] },
        }),
      ),
    ).toEqual([]);
    expect(checkPersistentVolumeClaim(s, claim({}))).toEqual([]);
  });
});

describe('X10 in the webhook: the volume is read once, before deciding, only when the name is new', () => {
  const request = (
    operation: 'CREATE' | 'UPDATE',
    object: Record<string, unknown>,
    oldObject?: Record<string, unknown>,
  ): AdmissionRequest => ({
    uid: 'u',
    kind: { group: '', version: 'v1', kind: 'PersistentVolumeClaim' },
    namespace: 'payments-batch',
    name: 'data',
    operation,
    userInfo: { username: 'alice' },
    object,
    ...(oldObject ? { oldObject } : {}),
  });
  const volumes: Record<string, PersistentVolumeLike | null> = {
    theirs: pv({}, { namespace: 'shop-db', name: 'orders' }),
    mine: pv({ 'tenantgate.io/project': 'payments' }),
    gone: null,
  };
  const reads: string[] = [];
  const decide = readingPersistentVolumes(
    (ctx, r) => verdictFor(ctx, r),
    async (name) => {
      reads.push(name);
      if (name === 'broken') throw new Error('connection refused');
      return volumes[name] ?? null;
    },
  );
  const rules = async (r: AdmissionRequest) =>
    (await decide(reviewContext(aUser('alice'), snapshot), r)).violations.map((v) => v.rule);

  it("refuses a create naming another project's volume, an unreadable one; admits its own", async () => {
    reads.length = 0;
    expect(await rules(request('CREATE', claim({ volumeName: 'theirs' })))).toEqual(['X10']);
    expect(await rules(request('CREATE', claim({ volumeName: 'broken' })))).toEqual(['X10']);
    expect(await rules(request('CREATE', claim({ volumeName: 'mine' })))).toEqual([]);
    expect(await rules(request('CREATE', claim({})))).toEqual([]);
    expect(reads).toEqual(['theirs', 'broken', 'mine']);
  });

  it('an update setting a volume name is judged; one keeping it reads nothing', async () => {
    reads.length = 0;
    expect(await rules(request('UPDATE', claim({ volumeName: 'theirs' }), claim({})))).toEqual(['X10']);
    expect(
      await rules(
        request(
          'UPDATE',
          { ...claim({ volumeName: 'theirs' }), metadata: { name: 'data', labels: { a: 'b' } } },
          claim({ volumeName: 'theirs' }),
        ),
      ),
    ).toEqual([]);
    expect(reads).toEqual(['theirs']);
  });

  it('without a reader (no apiserver) a claim naming a volume is refused, never admitted unjudged', () => {
    expect(
      verdictFor(
        reviewContext(aUser('alice'), snapshot),
        request('CREATE', claim({ volumeName: 'mine' })),
      ).violations.map((v) => v.rule),
    ).toEqual(['X10']);
  });
});

describe('H4: a Gateway names an allowed GatewayClass', () => {
  const gateway = (gatewayClassName?: string) => ({
    metadata: { name: 'gw' },
    spec: {
      ...(gatewayClassName ? { gatewayClassName } : {}),
      listeners: [{ name: 'http', port: 80, protocol: 'HTTP', hostname: 'www.pay.example.com' }],
    },
  });
  const allow = { hostnames: { suffixes: ['pay.example.com'] } };
  it('refuses a class not listed, admits a listed one, any class without a list', () => {
    const s = allowSubject(
      DEFAULT_CONFIG,
      aProject('payments', { allow: { ...allow, gatewayClasses: ['public'] } }),
      'Gateway',
      'payments-batch',
      'gw',
    );
    expect(checkGateway(s, gateway('internal')).map((v) => `[${v.rule}] ${v.message}`)).toEqual([
      '[H4] Gateway payments-batch/gw: gatewayClassName "internal" is not allowed for project payments; allowed: public',
    ]);
    expect(checkGateway(s, gateway('public'))).toEqual([]);
    expect(
      checkGateway(
        allowSubject(DEFAULT_CONFIG, aProject('payments', { allow }), 'Gateway', 'payments-batch', 'gw'),
        gateway('internal'),
      ),
    ).toEqual([]);
  });
});

describe('X9 on pods/ephemeralcontainers (kubectl debug)', () => {
  const registries = new MemorySnapshot();
  registries.upsertProject(aProject('payments', { allow: { registries: ['registry.example.com/'] } }));
  registries.upsertNamespace(aNamespace('payments-batch', { project: 'payments' }));
  const pod = (ephemeral: string[]) => ({
    metadata: { name: 'web' },
    spec: {
      containers: [{ name: 'app', image: 'registry.example.com/app:1' }],
      ...(ephemeral.length
        ? { ephemeralContainers: ephemeral.map((image, i) => ({ name: `debug-${i}`, image })) }
        : {}),
    },
  });
  const debug = (images: string[], before: string[]): AdmissionRequest => ({
    uid: 'u',
    kind: { group: '', version: 'v1', kind: 'Pod' },
    resource: { group: '', version: 'v1', resource: 'pods' },
    subResource: 'ephemeralcontainers',
    namespace: 'payments-batch',
    name: 'web',
    operation: 'UPDATE',
    userInfo: { username: 'alice' },
    object: pod(images),
    oldObject: pod(before),
  });
  it('refuses an ephemeral container from a registry not allowed, and judges only what the update adds', () => {
    const ctx = reviewContext(aUser('alice'), registries);
    expect(verdictFor(ctx, debug(['docker.io/busybox'], [])).violations.map((v) => `[${v.rule}] ${v.message}`)).toEqual(
      [
        '[X9] Pod payments-batch/web: image "docker.io/busybox" is not allowed for project payments; allowed: images starting with registry.example.com/',
      ],
    );
    expect(verdictFor(ctx, debug(['registry.example.com/debug:1'], [])).violations).toEqual([]);
    expect(
      verdictFor(ctx, debug(['docker.io/busybox', 'registry.example.com/debug:1'], ['docker.io/busybox'])).violations,
    ).toEqual([]);
  });
});
