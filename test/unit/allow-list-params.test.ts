/**
 * allowListParams (docs/adr/0095-allow-lists-in-the-api-server.md, "The parameters"): the AllowList spec
 * of a project namespace, against an oracle written here from the ADR (each list: the Project's, else
 * tenantgate.yaml's, else `any`), on the ADR's own example and on generated Projects and defaults; the
 * allowed tolerations, given in full, keep what the offline rule lets through; the spec always fits the
 * CRD's schema; and what counts as a stored AllowList needing no write.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { DEFAULT_CONFIG, type TenantgateConfig } from '../../src/config/config.js';
import { tolerationAllowed } from '../../src/validate/allow-lists.js';
import {
  ALLOW_LIST_NAME,
  FINALIZER_ALLOW_LIST,
  allowListFor,
  allowListMatches,
  allowListParams,
  type AllowedToleration,
  type AllowListSpec,
} from '../../src/validate/allow-list-params.js';
import { allowListCrd } from '../../src/validate/schema/allow-list-crd.js';
import type { AllowLists, Project, Toleration } from '../../src/validate/types.js';
import { aProject } from '../support/fixtures.js';

const ROOT = join(import.meta.dirname, '..', '..');

/** The ADR's example AllowList (its YAML block under "The parameters"). */
function adrExample(): { metadata: Record<string, unknown>; spec: AllowListSpec } {
  const adr = readFileSync(join(ROOT, 'docs', 'adr', '0095-allow-lists-in-the-api-server.md'), 'utf8');
  const block = /### The parameters[\s\S]*?```yaml\n([\s\S]*?)```/.exec(adr)?.[1];
  if (!block) throw new Error('docs/adr/0095: no yaml block under "The parameters"');
  return parse(block);
}

const withAllow = (allow: AllowLists | undefined, name = 'payments', tenant = 'acme'): Project =>
  aProject(name, { tenant, ...(allow ? { allow } : {}) });
const withDefaults = (allow: AllowLists): TenantgateConfig => ({ ...DEFAULT_CONFIG, allow });

// --- the oracle: the ADR's rules, written out without src/validate/allow-lists.ts ---------------------

const fill = (s: string, p: Project) =>
  s.replaceAll('{project}', p.metadata.name ?? '').replaceAll('{tenant}', p.spec.tenant);
const names = (own: string[] | undefined, d: string[] | undefined) => {
  const list = own ?? d;
  return { any: list === undefined, names: list ?? [] };
};
const full = (t: Toleration): AllowedToleration => ({
  key: t.key ?? '',
  operator: t.operator ?? 'Equal',
  value: t.value ?? '',
  effect: t.effect ?? '',
});

function oracle(config: TenantgateConfig, p: Project): AllowListSpec {
  const own = p.spec.allow ?? {};
  const d = config.allow;
  // tenantgate.yaml never grants a system-* class; the Project's own system-* names are listed apart.
  const classes = own.priorityClasses ?? d.priorityClasses?.filter((c) => !c.startsWith('system-'));
  const ranges = own.services?.loadBalancerSourceRanges ?? d.services?.loadBalancerSourceRanges;
  const registries = own.registries ?? d.registries;
  const selector = own.nodePlacement?.nodeSelector ?? d.nodePlacement?.nodeSelector ?? {};
  return {
    project: p.metadata.name ?? '',
    tenant: p.spec.tenant,
    priorityClasses: { any: classes === undefined, names: classes ?? [] },
    systemPriorityClasses: (own.priorityClasses ?? []).filter((c) => c.startsWith('system-')),
    services: {
      types: own.services?.types ?? d.services?.types ?? [],
      externalIPs: own.services?.externalIPs ?? d.services?.externalIPs ?? [],
      loadBalancerSourceRanges: { any: ranges === undefined, cidrs: ranges ?? [] },
    },
    hostnames: {
      suffixes: own.hostnames?.suffixes ?? (d.hostnames?.suffixes ?? []).map((s) => fill(s, p)),
      wildcards: own.hostnames?.wildcards ?? d.hostnames?.wildcards ?? false,
    },
    ingressClasses: names(own.ingressClasses, d.ingressClasses),
    gatewayClasses: names(own.gatewayClasses, d.gatewayClasses),
    storageClasses: names(own.storageClasses, d.storageClasses),
    runtimeClasses: names(own.runtimeClasses, d.runtimeClasses),
    deviceClasses: names(own.deviceClasses, d.deviceClasses),
    nodeSelector: Object.fromEntries(Object.entries(selector).sort(([a], [b]) => (a < b ? -1 : 1))),
    tolerations: (own.nodePlacement?.tolerations ?? d.nodePlacement?.tolerations ?? []).map(full),
    registries: { any: registries === undefined, prefixes: registries ?? [] },
    persistentVolumes: { unowned: own.persistentVolumes?.unowned ?? d.persistentVolumes?.unowned ?? false },
  };
}

/** A toleration allowed by the params' list, compared field by field as a policy does (every field present). */
function allowedByParams(t: Toleration, allowed: readonly AllowedToleration[]): boolean {
  if ((t.key ?? '').startsWith('node.kubernetes.io/')) return true;
  const op = t.operator ?? 'Equal';
  return allowed.some(
    (a) =>
      a.key === (t.key ?? '') &&
      a.operator === op &&
      (op === 'Exists' || a.value === (t.value ?? '')) &&
      (a.effect === '' || a.effect === t.effect),
  );
}

// --- generated inputs ----------------------------------------------------------------------------------

/** A small deterministic generator (mulberry32), so a failure names its seed. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function generator(seed: number) {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const maybe = <T>(make: () => T): T | undefined => (r() < 0.5 ? undefined : make());
  const some = <T>(xs: readonly T[]): T[] => xs.filter(() => r() < 0.5);
  const toleration = (): Toleration => ({
    ...(r() < 0.8 ? { key: pick(['dedicated', 'gpu', 'node.kubernetes.io/not-ready', '']) } : {}),
    ...(r() < 0.6 ? { operator: pick(['Equal', 'Exists'] as const) } : {}),
    ...(r() < 0.6 ? { value: pick(['payments', 'batch', '']) } : {}),
    ...(r() < 0.6 ? { effect: pick(['', 'NoSchedule', 'NoExecute', 'PreferNoSchedule'] as const) } : {}),
  });
  const allow = (): AllowLists => {
    const a: AllowLists = {};
    const set = <K extends keyof AllowLists>(k: K, make: () => AllowLists[K]) => {
      const v = maybe(make);
      if (v !== undefined) a[k] = v;
    };
    set('priorityClasses', () => some(['batch-low', 'system-cluster-critical', 'high', 'system-node-critical']));
    set('services', () => ({
      ...(r() < 0.5 ? { types: some(['NodePort', 'LoadBalancer', 'ExternalName'] as const) } : {}),
      ...(r() < 0.5 ? { externalIPs: some(['203.0.113.0/28', '2001:db8::/64']) } : {}),
      ...(r() < 0.5 ? { loadBalancerSourceRanges: some(['10.0.0.0/8', '192.0.2.0/24']) } : {}),
    }));
    set('hostnames', () => ({
      ...(r() < 0.5 ? { suffixes: some(['{project}.apps.example.com', 'pay.example.com', '{tenant}.org']) } : {}),
      ...(r() < 0.5 ? { wildcards: r() < 0.5 } : {}),
    }));
    set('ingressClasses', () => some(['nginx', 'internal']));
    set('gatewayClasses', () => some(['istio', 'cilium']));
    set('storageClasses', () => some(['standard', 'fast']));
    set('runtimeClasses', () => some(['gvisor', 'kata']));
    set('deviceClasses', () => some(['gpu.example.com', 'fpga.example.com']));
    set('nodePlacement', () => ({
      ...(r() < 0.5
        ? {
            nodeSelector: Object.fromEntries(
              some([
                ['zone', 'a'],
                ['pool', 'p'],
                ['os', 'l'],
              ]),
            ),
          }
        : {}),
      ...(r() < 0.5 ? { tolerations: Array.from({ length: Math.floor(r() * 3) }, toleration) } : {}),
    }));
    set('persistentVolumes', () => (r() < 0.5 ? { unowned: r() < 0.5 } : {}));
    set('registries', () => some(['registry.example.com/', 'ghcr.io/acme', 'docker.io/library/nginx']));
    return a;
  };
  return { allow, toleration, pick, r };
}

describe('allowListParams', () => {
  it("gives the ADR's example for the Project it describes, and allowListFor its metadata", () => {
    const example = adrExample();
    const project = withAllow({
      priorityClasses: ['batch-low'],
      services: { types: ['LoadBalancer'], externalIPs: ['203.0.113.0/28'], loadBalancerSourceRanges: ['10.0.0.0/8'] },
      hostnames: { suffixes: ['pay.example.com'] },
      storageClasses: ['standard'],
      nodePlacement: {
        nodeSelector: { pool: 'payments' },
        tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'payments', effect: 'NoSchedule' }],
      },
      registries: ['registry.example.com/payments/'],
    });
    expect(allowListParams(DEFAULT_CONFIG, project)).toEqual(example.spec);
    const object = allowListFor(DEFAULT_CONFIG, project, 'payments-batch');
    expect(object).toMatchObject({ apiVersion: 'tenantgate.io/v1alpha1', kind: 'AllowList' });
    expect(object.metadata).toEqual(example.metadata);
    expect(object.metadata.name).toBe(ALLOW_LIST_NAME);
  });

  it('leaves every list `any` (and names empty) where neither the Project nor tenantgate.yaml sets it', () => {
    const spec = allowListParams(DEFAULT_CONFIG, withAllow(undefined, 'web', 'globex'));
    expect(spec).toEqual({
      project: 'web',
      tenant: 'globex',
      priorityClasses: { any: true, names: [] },
      systemPriorityClasses: [],
      services: { types: [], externalIPs: [], loadBalancerSourceRanges: { any: true, cidrs: [] } },
      hostnames: { suffixes: [], wildcards: false },
      ingressClasses: { any: true, names: [] },
      gatewayClasses: { any: true, names: [] },
      storageClasses: { any: true, names: [] },
      runtimeClasses: { any: true, names: [] },
      deviceClasses: { any: true, names: [] },
      nodeSelector: {},
      tolerations: [],
      registries: { any: true, prefixes: [] },
      persistentVolumes: { unowned: false },
    });
  });

  it("takes tenantgate.yaml's lists where the Project gives none, field by field, with {project}, {tenant}", () => {
    const config = withDefaults({
      priorityClasses: ['batch-low', 'system-cluster-critical'],
      services: { types: ['NodePort'] },
      hostnames: { suffixes: ['{project}.{tenant}.apps.example.com'], wildcards: true },
      registries: ['registry.example.com/'],
    });
    const own: AllowLists = { services: { externalIPs: ['203.0.113.0/28'] }, hostnames: { wildcards: false } };
    const spec = allowListParams(config, withAllow(own));
    // A default never grants a system-* class: only a Project naming one does.
    expect(spec.priorityClasses).toEqual({ any: false, names: ['batch-low'] });
    expect(spec.systemPriorityClasses).toEqual([]);
    expect(spec.services).toEqual({
      types: ['NodePort'],
      externalIPs: ['203.0.113.0/28'],
      loadBalancerSourceRanges: { any: true, cidrs: [] },
    });
    expect(spec.hostnames).toEqual({ suffixes: ['payments.acme.apps.example.com'], wildcards: false });
    expect(spec.registries).toEqual({ any: false, prefixes: ['registry.example.com/'] });
    // An empty list is a list: nothing allowed, not anything.
    expect(allowListParams(config, withAllow({ registries: [], storageClasses: [] }))).toMatchObject({
      registries: { any: false, prefixes: [] },
      storageClasses: { any: false, names: [] },
    });
  });

  it('lists the system-* classes the Project names apart, and keeps them among its names', () => {
    const spec = allowListParams(DEFAULT_CONFIG, withAllow({ priorityClasses: ['batch-low', 'system-node-critical'] }));
    expect(spec.priorityClasses).toEqual({ any: false, names: ['batch-low', 'system-node-critical'] });
    expect(spec.systemPriorityClasses).toEqual(['system-node-critical']);
  });

  it('gives every toleration all four fields (operator Equal and "" where unset) and drops tolerationSeconds', () => {
    const tolerations: Toleration[] = [{ key: 'gpu', operator: 'Exists', tolerationSeconds: 30 }, { value: 'x' }];
    const spec = allowListParams(DEFAULT_CONFIG, withAllow({ nodePlacement: { tolerations } }));
    expect(spec.tolerations).toEqual([
      { key: 'gpu', operator: 'Exists', value: '', effect: '' },
      { key: '', operator: 'Equal', value: 'x', effect: '' },
    ]);
  });

  it('equals the oracle on 400 generated Projects and tenantgate.yaml defaults', () => {
    for (let seed = 1; seed <= 400; seed++) {
      const g = generator(seed);
      const config = withDefaults(g.allow());
      const own = g.r() < 0.2 ? undefined : g.allow();
      const project = withAllow(own, g.pick(['payments', 'web']), g.pick(['acme', 'globex']));
      expect(allowListParams(config, project), `seed ${seed}`).toEqual(oracle(config, project));
    }
  });

  it('lets through exactly the tolerations the offline rule (tolerationAllowed) lets through', () => {
    let allowed = 0;
    for (let seed = 1; seed <= 300; seed++) {
      const g = generator(seed);
      const list = Array.from({ length: 1 + Math.floor(g.r() * 3) }, g.toleration);
      const spec = allowListParams(DEFAULT_CONFIG, withAllow({ nodePlacement: { tolerations: list } }));
      for (let i = 0; i < 10; i++) {
        const t = g.r() < 0.5 ? list[Math.floor(g.r() * list.length)]! : g.toleration();
        const offline = tolerationAllowed(t, list);
        if (offline) allowed++;
        const what = `seed ${seed}: ${JSON.stringify(t)} against ${JSON.stringify(list)}`;
        expect(allowedByParams(t, spec.tolerations), what).toBe(offline);
      }
    }
    // Both verdicts occur (the comparison is not all one way).
    expect(allowed).toBeGreaterThan(100);
    expect(allowed).toBeLessThan(2900);
  });

  it("always fits the AllowList CRD's schema (every field present, within its bounds)", () => {
    const ajv = new Ajv({ allErrors: true, strict: false });
    type Crd = { spec: { versions: Array<{ schema: { openAPIV3Schema: object } }> } };
    const schema = (allowListCrd() as Crd).spec.versions[0]!.schema.openAPIV3Schema;
    const validate = ajv.compile(schema);
    for (let seed = 1; seed <= 200; seed++) {
      const g = generator(seed);
      const object = allowListFor(withDefaults(g.allow()), withAllow(g.allow()), 'payments-api');
      expect(validate(object) ? [] : validate.errors, `seed ${seed}`).toEqual([]);
    }
    const { spec } = allowListFor(DEFAULT_CONFIG, withAllow(undefined), 'payments-api');
    const { registries, ...withoutRegistries } = spec;
    expect(registries).toBeDefined();
    expect(validate({ spec: withoutRegistries })).toBe(false);
  });
});

describe('allowListMatches', () => {
  const own: AllowLists = { registries: ['r.example.com/'], nodePlacement: { nodeSelector: { zone: 'a', pool: 'p' } } };
  const desired = allowListFor(DEFAULT_CONFIG, withAllow(own), 'payments-api');
  /** A deep copy with every object's keys in reverse order (the API server keeps no key order). */
  const reordered = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(reordered)
      : v && typeof v === 'object'
        ? Object.fromEntries(
            Object.entries(v)
              .reverse()
              .map(([k, x]) => [k, reordered(x)]),
          )
        : v;
  /** As the API server returns it: keys in another order, the labels of others kept. */
  const stored = (spec: unknown = desired.spec) => ({
    metadata: {
      labels: { 'app.kubernetes.io/instance': 'x', ...desired.metadata.labels },
      finalizers: ['example.com/other', FINALIZER_ALLOW_LIST],
      resourceVersion: '7',
    },
    spec: reordered(spec),
  });

  it('is true for what the API server stores of the desired object (key order and foreign labels aside)', () => {
    expect(JSON.stringify(stored().spec)).not.toBe(JSON.stringify(desired.spec));
    expect(allowListMatches(stored(), desired)).toBe(true);
  });

  it('is false when a list, a flag or a label differs, or a field was added or removed', () => {
    expect(allowListMatches(stored({ ...desired.spec, registries: { any: true, prefixes: [] } }), desired)).toBe(false);
    expect(allowListMatches(stored({ ...desired.spec, nodeSelector: { zone: 'a' } }), desired)).toBe(false);
    expect(allowListMatches(stored({ ...desired.spec, extra: true }), desired)).toBe(false);
    const { tolerations, ...rest } = desired.spec;
    expect(tolerations).toEqual([]);
    expect(allowListMatches(stored(rest), desired)).toBe(false);
    const projectOnly = { metadata: { labels: { 'tenantgate.io/project': 'payments' } }, spec: desired.spec };
    expect(allowListMatches(projectOnly, desired)).toBe(false);
    expect(allowListMatches({ metadata: {}, spec: desired.spec }, desired)).toBe(false);
  });

  it('is false without the finalizer that keeps it until its namespace is empty, unless it is being deleted', () => {
    const { finalizers: _, ...unheld } = stored().metadata;
    expect(allowListMatches({ ...stored(), metadata: unheld }, desired)).toBe(false);
    const deleting = { ...unheld, deletionTimestamp: '2026-12-07T16:00:00Z' };
    expect(allowListMatches({ ...stored(), metadata: deleting }, desired)).toBe(true);
  });
});
