/** X1–X9, H1–H3 (docs/rules.md#allow-lists): the pure rules, the defaults of tenantgate.yaml, the webhook dispatch and the offline overlap check. */
import { TEST_NOW } from '../support/instant.js';
import { describe, expect, it } from 'vitest';
import { configFromObject, ConfigError, DEFAULT_CONFIG, type TenantgateConfig } from '../../src/config/config.js';
import { hostnameProblem } from '../../src/validate/allow-lists.js';
import { cidrContains, parseCidr, withinAnyCidr } from '../../src/validate/cidr.js';
import { validateDeclarations } from '../../src/validate/offline.js';
import {
  allowSubject,
  checkIngress,
  checkPersistentVolumeClaim,
  checkPod,
  checkResourceClaim,
  checkRoute,
  checkService,
} from '../../src/validate/rules/allow-lists.js';
import { validateProjectSchema } from '../../src/validate/schema/validate-schema.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import type { AllowLists, Project } from '../../src/validate/types.js';
import { responseFor, verdictFor, type AdmissionRequest } from '../../src/webhook/review.js';
import { aNamespace, aProject, aUser, reviewContext } from '../support/fixtures.js';

const payments = (allow?: AllowLists): Project => aProject('payments', allow ? { allow } : {});
const subject = (kind: string, name: string, allow?: AllowLists, config: TenantgateConfig = DEFAULT_CONFIG) =>
  allowSubject(config, payments(allow), kind, 'payments-batch', name);
const pod = (spec: Record<string, unknown>) => ({
  metadata: { name: 'crit' },
  spec: { containers: [{ name: 'app', image: 'registry.example.com/app:1' }], ...spec },
});
const messages = (vs: Array<{ rule: string; message: string }>) => vs.map((v) => `[${v.rule}] ${v.message}`);

describe('X1: PriorityClasses', () => {
  it('refuses system-* classes unless the Project names them, whatever tenantgate.yaml says', () => {
    const config = configFromObject({ allow: { priorityClasses: ['system-node-critical', 'batch-low'] } });
    expect(
      messages(
        checkPod(
          subject('Pod', 'crit', { priorityClasses: ['batch-low', 'batch-high'] }),
          pod({ priorityClassName: 'system-node-critical' }),
        ),
      ),
    ).toEqual([
      '[X1] Pod payments-batch/crit: priorityClassName "system-node-critical" is not allowed for project payments; allowed: batch-low, batch-high',
    ]);
    expect(
      checkPod(subject('Pod', 'crit', undefined, config), pod({ priorityClassName: 'system-node-critical' })).map(
        (v) => v.rule,
      ),
    ).toEqual(['X1']);
    expect(
      checkPod(subject('Pod', 'crit'), pod({ priorityClassName: 'system-cluster-critical' }))[0]?.message,
    ).toContain('allowed: any PriorityClass but system-*');
    expect(
      checkPod(
        subject('Pod', 'crit', { priorityClasses: ['system-node-critical'] }),
        pod({ priorityClassName: 'system-node-critical' }),
      ),
    ).toEqual([]);
  });

  it('admits any other class without a list, only listed ones with one, and a pod without a class always', () => {
    expect(checkPod(subject('Pod', 'p'), pod({ priorityClassName: 'anything' }))).toEqual([]);
    expect(
      checkPod(subject('Pod', 'p', { priorityClasses: ['batch-low'] }), pod({ priorityClassName: 'batch-low' })),
    ).toEqual([]);
    expect(
      checkPod(subject('Pod', 'p', { priorityClasses: ['batch-low'] }), pod({ priorityClassName: 'batch-high' })).map(
        (v) => v.rule,
      ),
    ).toEqual(['X1']);
    expect(checkPod(subject('Pod', 'p', { priorityClasses: [] }), pod({}))).toEqual([]);
  });

  it("takes the defaults field by field: a Project list replaces tenantgate.yaml's", () => {
    const config = configFromObject({ allow: { priorityClasses: ['batch-low'], runtimeClasses: ['gvisor'] } });
    expect(
      checkPod(subject('Pod', 'p', undefined, config), pod({ priorityClassName: 'batch-high' })).map((v) => v.rule),
    ).toEqual(['X1']);
    expect(
      checkPod(
        subject('Pod', 'p', { priorityClasses: ['batch-high'] }, config),
        pod({ priorityClassName: 'batch-high', runtimeClassName: 'kata' }),
      ).map((v) => v.rule),
    ).toEqual(['X6']);
  });
});

describe('X2–X4: Services', () => {
  const service = (spec: Record<string, unknown>) => ({
    metadata: { name: 'web' },
    spec: { ports: [{ port: 80 }], ...spec },
  });
  it('refuses externalIPs by default and admits them inside the allowed CIDRs', () => {
    expect(messages(checkService(subject('Service', 'web'), service({ externalIPs: ['8.8.8.8'] })))).toEqual([
      '[X2] Service payments-batch/web: externalIPs "8.8.8.8" is not allowed for project payments; allowed: no externalIPs',
    ]);
    const allow = { services: { externalIPs: ['203.0.113.0/24'] } };
    expect(checkService(subject('Service', 'web', allow), service({ externalIPs: ['203.0.113.7'] }))).toEqual([]);
    expect(
      checkService(subject('Service', 'web', allow), service({ externalIPs: ['203.0.114.7'] })).map((v) => v.rule),
    ).toEqual(['X2']);
  });

  it('admits ClusterIP always and other types only when allowed', () => {
    expect(checkService(subject('Service', 'web'), service({}))).toEqual([]);
    expect(checkService(subject('Service', 'web'), service({ type: 'ClusterIP' }))).toEqual([]);
    for (const type of ['NodePort', 'LoadBalancer', 'ExternalName']) {
      const noNodePorts = type === 'LoadBalancer' ? { allocateLoadBalancerNodePorts: false } : {};
      expect(messages(checkService(subject('Service', 'web'), service({ type, ...noNodePorts })))).toEqual([
        `[X3] Service payments-batch/web: type ${type} is not allowed for project payments; allowed: ClusterIP`,
      ]);
    }
    expect(
      checkService(subject('Service', 'web', { services: { types: ['NodePort'] } }), service({ type: 'NodePort' })),
    ).toEqual([]);
  });

  it('holds a LoadBalancer to the declared source ranges', () => {
    const allow: AllowLists = { services: { types: ['LoadBalancer'], loadBalancerSourceRanges: ['10.0.0.0/8'] } };
    const lb = (spec: Record<string, unknown> = {}) =>
      service({ type: 'LoadBalancer', allocateLoadBalancerNodePorts: false, ...spec });
    expect(checkService(subject('Service', 'lb', allow), lb({ loadBalancerSourceRanges: ['10.1.0.0/16'] }))).toEqual(
      [],
    );
    expect(checkService(subject('Service', 'lb', allow), lb()).map((v) => v.rule)).toEqual(['X4']);
    expect(
      checkService(subject('Service', 'lb', allow), lb({ loadBalancerSourceRanges: ['0.0.0.0/0'] })).map((v) => v.rule),
    ).toEqual(['X4']);
    expect(checkService(subject('Service', 'lb', { services: { types: ['LoadBalancer'] } }), lb())).toEqual([]);
  });
});

describe('H1, H2: hostnames and classes of Ingresses and routes', () => {
  const allow: AllowLists = { hostnames: { suffixes: ['pay.example.com'] }, ingressClasses: ['public'] };
  const ingress = (spec: Record<string, unknown>) => ({
    metadata: { name: 'web' },
    spec: { ingressClassName: 'public', ...spec },
  });
  it('admits hosts under the suffixes and refuses others, empty hosts and wildcards unless allowed', () => {
    expect(
      checkIngress(
        subject('Ingress', 'web', allow),
        ingress({ rules: [{ host: 'pay.example.com' }, { host: 'api.pay.example.com' }] }),
      ),
    ).toEqual([]);
    expect(
      messages(checkIngress(subject('Ingress', 'web', allow), ingress({ rules: [{ host: 'shop.example.com' }] }))),
    ).toEqual([
      '[H1] Ingress payments-batch/web: host "shop.example.com" (it is outside the project\'s hostname suffixes) is not allowed for project payments; allowed: hostnames under pay.example.com, no wildcard',
    ]);
    expect(
      checkIngress(subject('Ingress', 'web', allow), ingress({ rules: [{ http: {} }] })).map((v) => v.rule),
    ).toEqual(['H1']);
    expect(
      checkIngress(subject('Ingress', 'web', allow), ingress({ rules: [{ host: '*.pay.example.com' }] })).map(
        (v) => v.rule,
      ),
    ).toEqual(['H1']);
    expect(
      checkIngress(
        subject('Ingress', 'web', { ...allow, hostnames: { suffixes: ['pay.example.com'], wildcards: true } }),
        ingress({ rules: [{ host: '*.pay.example.com' }] }),
      ),
    ).toEqual([]);
    expect(
      checkIngress(
        subject('Ingress', 'web', allow),
        ingress({ rules: [{ host: 'a.pay.example.com' }], tls: [{ hosts: ['evil.example.com'] }] }),
      ).map((v) => v.path),
    ).toEqual([['spec', 'tls', 0, 'hosts', 0]]);
    expect(
      checkIngress(subject('Ingress', 'web'), ingress({ rules: [{ host: 'a.example.com' }] }))[0]?.message,
    ).toContain('allowed: no hostname (the project has no hostname suffix)');
  });

  it('does not take a suffix as a string suffix: notpay.example.com is not under pay.example.com', () => {
    expect(hostnameProblem('notpay.example.com', ['pay.example.com'], false)).toBeDefined();
    expect(hostnameProblem('a.b.pay.example.com', ['pay.example.com'], false)).toBeUndefined();
  });

  it('refuses an IngressClass not listed and an Ingress without class when a list is given', () => {
    expect(
      checkIngress(
        subject('Ingress', 'web', allow),
        ingress({ ingressClassName: 'internal', rules: [{ host: 'pay.example.com' }] }),
      ).map((v) => v.rule),
    ).toEqual(['H2']);
    expect(
      checkIngress(subject('Ingress', 'web', allow), {
        metadata: {},
        spec: { rules: [{ host: 'pay.example.com' }] },
      }).map((v) => v.rule),
    ).toEqual(['H2']);
  });

  it('judges route hostnames; a route without hostnames takes every hostname of its listener', () => {
    const route = (hostnames?: string[]) => ({ metadata: { name: 'r' }, spec: hostnames ? { hostnames } : {} });
    expect(checkRoute(subject('HTTPRoute', 'r', allow), route(['api.pay.example.com']))).toEqual([]);
    expect(checkRoute(subject('HTTPRoute', 'r', allow), route(['shop.example.com'])).map((v) => v.rule)).toEqual([
      'H1',
    ]);
    expect(checkRoute(subject('GRPCRoute', 'r', allow), route()).map((v) => v.rule)).toEqual(['H1']);
  });

  it('takes {project} and {tenant} in tenantgate.yaml suffixes', () => {
    const config = configFromObject({ allow: { hostnames: { suffixes: ['{project}.{tenant}.apps.example.com'] } } });
    expect(
      checkRoute(subject('HTTPRoute', 'r', undefined, config), {
        spec: { hostnames: ['www.payments.acme.apps.example.com'] },
      }),
    ).toEqual([]);
    expect(
      checkRoute(subject('HTTPRoute', 'r', undefined, config), {
        spec: { hostnames: ['www.shop.acme.apps.example.com'] },
      }).map((v) => v.rule),
    ).toEqual(['H1']);
  });
});

describe('X5–X9: storage, runtime, devices, placement, registries', () => {
  it('X5: a PVC names a listed StorageClass (one without a class is not judged)', () => {
    const claim = (storageClassName?: string) => ({
      metadata: { name: 'data' },
      spec: storageClassName ? { storageClassName } : {},
    });
    const allow = { storageClasses: ['standard'] };
    expect(checkPersistentVolumeClaim(subject('PersistentVolumeClaim', 'data', allow), claim('standard'))).toEqual([]);
    expect(
      messages(checkPersistentVolumeClaim(subject('PersistentVolumeClaim', 'data', allow), claim('fast-ssd'))),
    ).toEqual([
      '[X5] PersistentVolumeClaim payments-batch/data: storageClassName "fast-ssd" is not allowed for project payments; allowed: standard',
    ]);
    expect(checkPersistentVolumeClaim(subject('PersistentVolumeClaim', 'data', allow), claim())).toEqual([]);
    expect(checkPersistentVolumeClaim(subject('PersistentVolumeClaim', 'data'), claim('fast-ssd'))).toEqual([]);
  });

  it('X6: a pod names a listed RuntimeClass', () => {
    expect(checkPod(subject('Pod', 'p', { runtimeClasses: ['gvisor'] }), pod({ runtimeClassName: 'gvisor' }))).toEqual(
      [],
    );
    expect(checkPod(subject('Pod', 'p', { runtimeClasses: [] }), pod({ runtimeClassName: 'gvisor' }))[0]?.message).toBe(
      'Pod payments-batch/p: runtimeClassName "gvisor" is not allowed for project payments; allowed: no RuntimeClass',
    );
  });

  it('X7: every device class of a claim (v1 exactly, v1beta1 flat, firstAvailable) and of a template', () => {
    const allow = { deviceClasses: ['gpu.example.com'] };
    const v1 = {
      spec: {
        devices: {
          requests: [
            { name: 'a', exactly: { deviceClassName: 'gpu.example.com' } },
            { name: 'b', firstAvailable: [{ name: 'x', deviceClassName: 'fpga.example.com' }] },
          ],
        },
      },
    };
    expect(checkResourceClaim(subject('ResourceClaim', 'c', allow), v1, false).map((v) => v.path)).toEqual([
      ['spec', 'devices', 'requests', 1, 'firstAvailable', 0, 'deviceClassName'],
    ]);
    const template = {
      spec: { spec: { devices: { requests: [{ name: 'a', deviceClassName: 'fpga.example.com' }] } } },
    };
    expect(checkResourceClaim(subject('ResourceClaimTemplate', 't', allow), template, true).map((v) => v.rule)).toEqual(
      ['X7'],
    );
    expect(checkResourceClaim(subject('ResourceClaim', 'c'), v1, false)).toEqual([]);
  });

  it('X8: the node selector is kept, no nodeName, only allowed tolerations (node.kubernetes.io/* always)', () => {
    const allow: AllowLists = {
      nodePlacement: {
        nodeSelector: { pool: 'payments' },
        tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'payments', effect: 'NoSchedule' }],
      },
    };
    const s = subject('Pod', 'p', allow);
    expect(
      checkPod(
        s,
        pod({
          nodeSelector: { pool: 'payments', zone: 'a' },
          tolerations: [
            { key: 'dedicated', operator: 'Equal', value: 'payments', effect: 'NoSchedule' },
            { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
          ],
        }),
      ),
    ).toEqual([]);
    expect(messages(checkPod(s, pod({})))).toEqual([
      '[X8] Pod payments-batch/p: nodeSelector with no pool is not allowed for project payments; allowed: a nodeSelector with pool=payments',
    ]);
    expect(checkPod(s, pod({ nodeSelector: { pool: 'shop' } })).map((v) => v.rule)).toEqual(['X8']);
    expect(checkPod(s, pod({ nodeSelector: { pool: 'payments' }, nodeName: 'node-1' })).map((v) => v.path)).toEqual([
      ['spec', 'nodeName'],
    ]);
    expect(
      messages(checkPod(s, pod({ nodeSelector: { pool: 'payments' }, tolerations: [{ operator: 'Exists' }] }))),
    ).toEqual([
      '[X8] Pod payments-batch/p: toleration Exists (every taint) is not allowed for project payments; allowed: dedicated=payments:NoSchedule (and node.kubernetes.io/* ones)',
    ]);
    expect(
      checkPod(
        subject('Pod', 'p'),
        pod({ tolerations: [{ key: 'dedicated', value: 'shop', effect: 'NoSchedule' }] }),
      ).map((v) => v.rule),
    ).toEqual(['X8']);
  });

  it('X9: every image of every container starts with an allowed prefix', () => {
    const allow = { registries: ['registry.example.com/'] };
    expect(checkPod(subject('Pod', 'p', allow), pod({}))).toEqual([]);
    expect(
      checkPod(subject('Pod', 'p', allow), pod({ initContainers: [{ name: 'i', image: 'docker.io/evil' }] })).map(
        (v) => v.path,
      ),
    ).toEqual([['spec', 'initContainers', 0, 'image']]);
  });
});

describe('CIDRs', () => {
  it('parses IPv4 and IPv6 and judges containment', () => {
    expect(withinAnyCidr('10.2.3.4', ['10.0.0.0/8'])).toBe(true);
    expect(withinAnyCidr('11.2.3.4', ['10.0.0.0/8'])).toBe(false);
    expect(withinAnyCidr('2001:db8::1', ['2001:db8::/32'])).toBe(true);
    expect(withinAnyCidr('2001:db9::1', ['2001:db8::/32'])).toBe(false);
    expect(withinAnyCidr('10.0.0.0/7', ['10.0.0.0/8'])).toBe(false);
    expect(withinAnyCidr('10.2.3.4', ['0.0.0.0/0'])).toBe(true);
    expect(withinAnyCidr('::ffff', ['0.0.0.0/0'])).toBe(false);
    for (const bad of ['300.1.1.1', '1.2.3.4/33', '1::2::3', 'a.b.c.d', '1:2:3:4:5:6:7:8:9'])
      expect(parseCidr(bad), bad).toBeUndefined();
    const outer = parseCidr('192.168.0.0/16');
    const inner = parseCidr('192.168.7.0/24');
    expect(outer && inner && cidrContains(outer, inner)).toBe(true);
  });

  it('agrees with a bit-by-bit oracle on random IPv4 pairs', () => {
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    const ip = (n: number) => [24, 16, 8, 0].map((s) => (n >>> s) & 255).join('.');
    for (let i = 0; i < 500; i++) {
      const a = next() * 2;
      const b = next() % 4 === 0 ? a ^ (next() % 256) : next() * 2;
      const prefix = next() % 33;
      const bitsOf = (n: number) => (n >>> 0).toString(2).padStart(32, '0');
      const oracle = bitsOf(a).slice(0, prefix) === bitsOf(b).slice(0, prefix);
      expect(
        withinAnyCidr(ip(b >>> 0), [`${ip(a >>> 0)}/${prefix}`]),
        `${ip(b >>> 0)} in ${ip(a >>> 0)}/${prefix}`,
      ).toBe(oracle);
    }
  });
});

describe('schema and tenantgate.yaml', () => {
  it('the Project schema takes spec.allow and refuses what it cannot hold', () => {
    expect(
      validateProjectSchema(
        payments({
          services: { externalIPs: ['203.0.113.0/24'], types: ['NodePort'] },
          hostnames: { suffixes: ['pay.example.com'] },
        }),
      ),
    ).toEqual([]);
    expect(
      validateProjectSchema(payments({ services: { types: ['Headless' as 'NodePort'] } })).map((v) => v.rule),
    ).toEqual(['S1']);
    expect(
      validateProjectSchema(payments({ hostnames: { suffixes: ['*.pay.example.com'] } })).map((v) => v.rule),
    ).toEqual(['S1']);
  });

  it('tenantgate.yaml: allow is optional, closed, and its CIDRs are checked', () => {
    expect(DEFAULT_CONFIG.allow).toEqual({});
    expect(configFromObject({ allow: { services: { types: ['NodePort'] } } }).allow).toEqual({
      services: { types: ['NodePort'] },
    });
    expect(() => configFromObject({ allow: { storageclasses: ['x'] } })).toThrow(ConfigError);
    expect(() => configFromObject({ allow: { services: { externalIPs: ['everything'] } } })).toThrow(
      /allow\.services\.externalIPs\[0\] is "everything"; allowed: a CIDR/,
    );
  });
});

describe('H3: hostname suffixes do not overlap across projects (offline)', () => {
  it("refuses a suffix equal to, above or under another project's, and admits disjoint ones", () => {
    const a = aProject('payments', { allow: { hostnames: { suffixes: ['pay.example.com'] } } });
    const b = aProject('shop', { allow: { hostnames: { suffixes: ['shop.example.com', 'eu.pay.example.com'] } } });
    const found = validateDeclarations([a, b], DEFAULT_CONFIG, TEST_NOW).filter((v) => v.rule === 'H3');
    expect(found.map((v) => [v.document, v.message])).toEqual([
      [
        1,
        'Project shop: hostname suffix "eu.pay.example.com" overlaps "pay.example.com" of project payments; allowed: suffixes no other project\'s suffix equals, contains or lies under',
      ],
    ]);
    const c = aProject('shop', { allow: { hostnames: { suffixes: ['shop.example.com'] } } });
    expect(validateDeclarations([a, c], DEFAULT_CONFIG, TEST_NOW).filter((v) => v.rule === 'H3')).toEqual([]);
  });

  it('fills tenantgate.yaml templates per project before comparing', () => {
    const config = configFromObject({ allow: { hostnames: { suffixes: ['{project}.apps.example.com'] } } });
    expect(
      validateDeclarations([aProject('payments'), aProject('shop')], config, TEST_NOW).filter((v) => v.rule === 'H3'),
    ).toEqual([]);
    const shared = configFromObject({ allow: { hostnames: { suffixes: ['{tenant}.apps.example.com'] } } });
    expect(
      validateDeclarations([aProject('payments'), aProject('shop')], shared, TEST_NOW).filter((v) => v.rule === 'H3')
        .length,
    ).toBe(1);
  });
});

describe('the webhook judges the allow-lists in project namespaces', () => {
  const snapshot = new MemorySnapshot();
  snapshot.upsertProject(payments({ priorityClasses: ['batch-low'] }));
  snapshot.upsertNamespace(aNamespace('payments-batch', { project: 'payments' }));
  snapshot.upsertNamespace(aNamespace('elsewhere'));
  const request = (
    namespace: string,
    operation: 'CREATE' | 'UPDATE',
    object: Record<string, unknown>,
    oldObject?: Record<string, unknown>,
  ): AdmissionRequest => ({
    uid: 'u',
    kind: { group: '', version: 'v1', kind: 'Pod' },
    namespace,
    operation,
    userInfo: { username: 'system:serviceaccount:kube-system:replicaset-controller' },
    object,
    ...(oldObject ? { oldObject } : {}),
  });

  it('refuses a pod of a class not allowed with the rule id, whoever creates it', () => {
    const response = responseFor(
      'u',
      verdictFor(
        reviewContext(aUser('system:serviceaccount:kube-system:replicaset-controller'), snapshot),
        request('payments-batch', 'CREATE', pod({ priorityClassName: 'system-node-critical' })),
      ),
    );
    expect(response.allowed).toBe(false);
    expect(response.status?.message).toBe(
      '[X1] Pod payments-batch/crit: priorityClassName "system-node-critical" is not allowed for project payments; allowed: batch-low',
    );
  });

  it('judges nothing outside projects or what an update does not add; privileged subjects are judged too (ADR 0095)', () => {
    const ctx = reviewContext(aUser('bob'), snapshot);
    expect(
      verdictFor(ctx, request('elsewhere', 'CREATE', pod({ priorityClassName: 'system-node-critical' }))).violations,
    ).toEqual([]);
    expect(
      verdictFor(
        reviewContext(aUser('root', ['system:masters']), snapshot),
        request('payments-batch', 'CREATE', pod({ priorityClassName: 'other' })),
      ).violations.map((v) => v.rule),
    ).toEqual(['X1']);
    const before = pod({ priorityClassName: 'other' });
    const labelled = { ...before, metadata: { name: 'crit', labels: { a: 'b' } } };
    expect(verdictFor(ctx, request('payments-batch', 'UPDATE', labelled, before)).violations).toEqual([]);
    const reimaged = pod({ priorityClassName: 'other', tolerations: [{ operator: 'Exists' }] });
    expect(
      verdictFor(ctx, request('payments-batch', 'UPDATE', reimaged, before)).violations.map((v) => v.rule),
    ).toEqual(['X8']);
  });
});
