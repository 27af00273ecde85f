/**
 * What each allow-list rule judges on CREATE (docs/adr/0095-allow-lists-in-the-api-server.md, "What each rule
 * judges"), through the surface the API server's differential test calls: `allowListKindOf` and
 * `allowListViolations`. UPDATEs: test/unit/allow-lists-updates.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { imageAllowed } from '../../src/validate/allow-lists.js';
import { allowListKindOf, allowListViolations, type AllowListKind } from '../../src/validate/allow-admission.js';
import { allowSubject } from '../../src/validate/rules/allow-lists.js';
import type { AllowLists } from '../../src/validate/types.js';
import { aProject } from '../support/fixtures.js';

type Json = Record<string, unknown>;
const judge = (kind: AllowListKind, allow: AllowLists, object: Json, name = 'x') => {
  const subject = allowSubject(DEFAULT_CONFIG, aProject('payments', { allow }), kind, 'payments-batch', name);
  return allowListViolations(subject, kind, object);
};
const rules = (kind: AllowListKind, allow: AllowLists, object: Json) => judge(kind, allow, object).map((v) => v.rule);
const paths = (kind: AllowListKind, allow: AllowLists, object: Json) =>
  judge(kind, allow, object).map((v) => [v.rule, v.path]);
const messages = (kind: AllowListKind, allow: AllowLists, object: Json, name = 'x') =>
  judge(kind, allow, object, name).map((v) => `[${v.rule}] ${v.message}`);
/** A message's tail after the subject: `<what> is not allowed for project payments; allowed: <allowed>`. */
const refused = (what: string, allowed: string) => `${what} is not allowed for project payments; allowed: ${allowed}`;

describe('allowListKindOf: the kinds the allow-lists judge', () => {
  it("knows the ADR's kinds by group and kind, and nothing else", () => {
    const gateway = 'gateway.networking.k8s.io';
    const kinds: Array<[string, string]> = [
      ['', 'Pod'],
      ['', 'Service'],
      ['', 'PersistentVolumeClaim'],
      ['networking.k8s.io', 'Ingress'],
      ...['Gateway', 'ListenerSet', 'HTTPRoute', 'GRPCRoute', 'TLSRoute', 'TCPRoute', 'UDPRoute'].map(
        (k): [string, string] => [gateway, k],
      ),
      ['gateway.networking.x-k8s.io', 'XListenerSet'],
      ['resource.k8s.io', 'ResourceClaim'],
      ['resource.k8s.io', 'ResourceClaimTemplate'],
    ];
    for (const [group, kind] of kinds) expect(allowListKindOf(group, kind), `${group}/${kind}`).toBe(kind);
    expect(allowListKindOf('', 'PersistentVolume')).toBeUndefined();
    expect(allowListKindOf('gateway.networking.x-k8s.io', 'ListenerSet')).toBeUndefined();
    expect(allowListKindOf('apps', 'Pod')).toBeUndefined();
  });
});

describe('X9: registry prefixes end at a boundary', () => {
  it('a prefix ending in / is a plain prefix', () => {
    expect(imageAllowed('registry.example.com/payments/app:1', ['registry.example.com/payments/'])).toBe(true);
    expect(imageAllowed('registry.example.com/paymentsx/app', ['registry.example.com/payments/'])).toBe(false);
  });

  it('a host prefix admits itself and what continues with /, not another host that starts like it', () => {
    const host = ['registry.example.com'];
    expect(imageAllowed('registry.example.com/x', host)).toBe(true);
    expect(imageAllowed('registry.example.com', host)).toBe(true);
    expect(imageAllowed('registry.example.com.evil.io/x', host)).toBe(false);
    expect(imageAllowed('registry.example.com:5000/x', host)).toBe(false);
    expect(imageAllowed('registry.example.com@sha256:abc', host)).toBe(false);
  });

  it('a repository prefix (with a /) may continue with a tag or a digest, not with more name', () => {
    const prefixes = ['docker.io/library/nginx'];
    expect(imageAllowed('docker.io/library/nginx:1.27', prefixes)).toBe(true);
    expect(imageAllowed('docker.io/library/nginx@sha256:abc', prefixes)).toBe(true);
    expect(imageAllowed('docker.io/library/nginx/sidecar', prefixes)).toBe(true);
    expect(imageAllowed('docker.io/library/nginx-evil:1', prefixes)).toBe(false);
    const pod = { spec: { containers: [{ name: 'app', image: 'docker.io/library/nginx-evil:1' }] } };
    const nginx = 'docker.io/library/nginx';
    const allowed = `images starting with ${nginx}:, ${nginx}@, ${nginx}/, registry.example.com/, ghcr.io/acme/`;
    expect(messages('Pod', { registries: [...prefixes, 'registry.example.com', 'ghcr.io/acme/'] }, pod, 'p')).toEqual([
      `[X9] Pod payments-batch/p: ${refused('image "docker.io/library/nginx-evil:1"', allowed)}`,
    ]);
  });

  it('judges image volumes too, with the field in the path', () => {
    const allow = { registries: ['registry.example.com'] };
    const volumes = [
      { name: 'ok', image: { reference: 'registry.example.com/data:1' } },
      { name: 'cfg', configMap: { name: 'c' } },
      { name: 'bad', image: { reference: 'registry.example.com.evil.io/x' } },
    ];
    const pod = { spec: { containers: [{ name: 'app', image: 'registry.example.com/app:1' }], volumes } };
    expect(paths('Pod', allow, pod)).toEqual([['X9', ['spec', 'volumes', 2, 'image', 'reference']]]);
    expect(messages('Pod', allow, pod, 'p')).toEqual([
      `[X9] Pod payments-batch/p: ${refused(
        'image volume "registry.example.com.evil.io/x"',
        'images starting with registry.example.com/',
      )}`,
    ]);
  });
});

describe('X8: nodeName and device tolerations', () => {
  const pod = (spec: Json) => ({ spec: { containers: [{ name: 'app', image: 'a' }], ...spec } });
  it('refuses nodeName in every project, saying why', () => {
    const what = 'nodeName "node-1" (it skips the scheduler, the node selector and every NoSchedule taint)';
    expect(messages('Pod', {}, pod({ nodeName: 'node-1' }), 'p')).toEqual([
      `[X8] Pod payments-batch/p: ${refused(what, 'no nodeName (the scheduler places the pod)')}`,
    ]);
    const placed = { nodePlacement: { nodeSelector: { pool: 'p' } } };
    expect(rules('Pod', placed, pod({ nodeSelector: { pool: 'p' }, nodeName: 'n' }))).toEqual(['X8']);
    expect(rules('Pod', {}, pod({}))).toEqual([]);
  });

  const dedicated = { key: 'dedicated', operator: 'Equal', value: 'gpu', effect: 'NoSchedule' } as const;
  const allow: AllowLists = { nodePlacement: { tolerations: [dedicated] } };
  it("judges every toleration of a claim's requests, without the node.kubernetes.io/ exception", () => {
    const unreachable = { key: 'node.kubernetes.io/unreachable', operator: 'Exists' };
    const requests = [
      { name: 'a', exactly: { deviceClassName: 'gpu', tolerations: [dedicated, unreachable] } },
      { name: 'b', firstAvailable: [{ name: 'x', deviceClassName: 'gpu', tolerations: [{ operator: 'Exists' }] }] },
      { name: 'c', deviceClassName: 'gpu', tolerations: [{ key: 'dedicated', value: 'gpu' }] },
    ];
    const claim = { spec: { devices: { requests } } };
    expect(paths('ResourceClaim', allow, claim)).toEqual([
      ['X8', ['spec', 'devices', 'requests', 0, 'exactly', 'tolerations', 1]],
      ['X8', ['spec', 'devices', 'requests', 1, 'firstAvailable', 0, 'tolerations', 0]],
      ['X8', ['spec', 'devices', 'requests', 2, 'tolerations', 0]],
    ]);
    const dedicatedText = 'dedicated=gpu:NoSchedule';
    expect(messages('ResourceClaim', allow, claim, 'c')[1]).toBe(
      `[X8] ResourceClaim payments-batch/c: ${refused('device toleration Exists (every taint)', dedicatedText)}`,
    );
    const template = { spec: { spec: claim.spec } };
    const under = judge('ResourceClaimTemplate', {}, template).map((v) => v.path?.slice(0, 2));
    expect(under).toEqual(Array(4).fill(['spec', 'spec']));
  });

  it('admits a claim whose requests tolerate nothing, whatever the lists', () => {
    const claim = { spec: { devices: { requests: [{ name: 'a', exactly: { deviceClassName: 'gpu' } }] } } };
    expect(rules('ResourceClaim', { deviceClasses: ['gpu'] }, claim)).toEqual([]);
  });
});

describe('X3: without NodePort allowed, a LoadBalancer opens no node port', () => {
  const lb = (spec: Json) => ({ spec: { type: 'LoadBalancer', ports: [{ port: 80 }], ...spec } });
  const allow: AllowLists = { services: { types: ['LoadBalancer'] } };
  const noNodePort = '(NodePort is not an allowed type)';
  it("requires allocateLoadBalancerNodePorts: false (unset is the API server's true)", () => {
    expect(rules('Service', allow, lb({ allocateLoadBalancerNodePorts: false }))).toEqual([]);
    const what =
      'a LoadBalancer with allocateLoadBalancerNodePorts unset (the API server makes it true: ' +
      'a node port on every node, open beyond the source ranges)';
    expect(messages('Service', allow, lb({}), 'lb')).toEqual([
      `[X3] Service payments-batch/lb: ${refused(what, `allocateLoadBalancerNodePorts: false ${noNodePort}`)}`,
    ]);
    expect(paths('Service', allow, lb({ allocateLoadBalancerNodePorts: true }))).toEqual([
      ['X3', ['spec', 'allocateLoadBalancerNodePorts']],
    ]);
  });

  it('refuses a non-zero nodePort on any port', () => {
    const ports = [
      { port: 80, nodePort: 0 },
      { port: 443, nodePort: 30443 },
    ];
    const service = lb({ allocateLoadBalancerNodePorts: false, ports });
    expect(messages('Service', allow, service, 'lb')).toEqual([
      `[X3] Service payments-batch/lb: ${refused('nodePort 30443', `no nodePort ${noNodePort}`)}`,
    ]);
    expect(paths('Service', allow, service)).toEqual([['X3', ['spec', 'ports', 1, 'nodePort']]]);
  });

  it('asks neither when NodePort is allowed', () => {
    const both: AllowLists = { services: { types: ['LoadBalancer', 'NodePort'] } };
    expect(rules('Service', both, lb({ ports: [{ port: 80, nodePort: 30080 }] }))).toEqual([]);
  });
});

describe('X2: the addresses a Service or a Gateway claims', () => {
  const allow: AllowLists = {
    services: { types: ['LoadBalancer'], externalIPs: ['203.0.113.0/28'] },
    hostnames: { suffixes: ['pay.example.com'] },
  };
  const lb = (loadBalancerIP: string) => ({
    spec: { type: 'LoadBalancer', allocateLoadBalancerNodePorts: false, loadBalancerIP, ports: [{ port: 80 }] },
  });
  it("a Service's loadBalancerIP lies inside the externalIPs CIDRs", () => {
    expect(rules('Service', allow, lb('203.0.113.5'))).toEqual([]);
    expect(messages('Service', allow, lb('198.51.100.1'), 'lb')).toEqual([
      `[X2] Service payments-batch/lb: ${refused('loadBalancerIP "198.51.100.1"', 'addresses in 203.0.113.0/28')}`,
    ]);
    expect(rules('Service', {}, lb('203.0.113.5'))).toEqual(['X2', 'X3']);
  });

  const listeners = [{ name: 'h', port: 80, protocol: 'HTTP', hostname: 'pay.example.com' }];
  const gateway = (addresses: Json[]) => ({ spec: { gatewayClassName: 'c', addresses, listeners } });
  it("a Gateway's IPAddress addresses (the default type) in the CIDRs, Hostname ones by H1, others refused", () => {
    const fine = [
      { value: '203.0.113.1' },
      { type: 'IPAddress', value: '203.0.113.2' },
      { type: 'Hostname', value: 'lb.pay.example.com' },
    ];
    expect(rules('Gateway', allow, gateway(fine))).toEqual([]);
    const bad = [
      { value: '8.8.8.8' },
      { type: 'Hostname', value: 'lb.shop.example.com' },
      { type: 'example.com/pool', value: 'p' },
    ];
    expect(paths('Gateway', allow, gateway(bad))).toEqual([
      ['X2', ['spec', 'addresses', 0, 'value']],
      ['H1', ['spec', 'addresses', 1, 'value']],
      ['X2', ['spec', 'addresses', 2, 'type']],
    ]);
    const allowed = 'addresses of type IPAddress in 203.0.113.0/28, of type Hostname under the hostname suffixes';
    expect(messages('Gateway', allow, gateway([{ type: 'example.com/pool', value: 'p' }]), 'gw')).toEqual([
      `[X2] Gateway payments-batch/gw: ${refused('address of type "example.com/pool"', allowed)}`,
    ]);
  });
});

describe('H2: the ingress.class annotation is judged like ingressClassName', () => {
  const allow: AllowLists = { ingressClasses: ['public'], hostnames: { suffixes: ['pay.example.com'] } };
  const ingress = (spec: Json, annotation?: string) => ({
    metadata: { name: 'web', ...(annotation ? { annotations: { 'kubernetes.io/ingress.class': annotation } } : {}) },
    spec: { rules: [{ host: 'pay.example.com' }], ...spec },
  });
  it('each given class listed, at least one given', () => {
    expect(rules('Ingress', allow, ingress({}, 'public'))).toEqual([]);
    expect(rules('Ingress', allow, ingress({ ingressClassName: 'public' }, 'public'))).toEqual([]);
    expect(messages('Ingress', allow, ingress({ ingressClassName: 'public' }, 'internal'), 'web')).toEqual([
      `[H2] Ingress payments-batch/web: ${refused('annotation kubernetes.io/ingress.class "internal"', 'public')}`,
    ]);
    expect(paths('Ingress', allow, ingress({}, 'internal'))).toEqual([
      ['H2', ['metadata', 'annotations', 'kubernetes.io/ingress.class']],
    ]);
    const neither = 'an Ingress without ingressClassName or kubernetes.io/ingress.class (the default class)';
    expect(messages('Ingress', allow, ingress({}), 'web')).toEqual([
      `[H2] Ingress payments-batch/web: ${refused(neither, 'public')}`,
    ]);
    expect(rules('Ingress', { hostnames: allow.hostnames }, ingress({}, 'anything'))).toEqual([]);
  });
});

describe("H1 on TCP and UDP: routes attach only in their namespace, listeners' hostnames are not judged", () => {
  const route = (parentRefs: Json[]) => ({
    metadata: { name: 'r', namespace: 'payments-batch' },
    spec: { parentRefs, rules: [{ backendRefs: [{ name: 's', port: 53 }] }] },
  });
  it('refuses a TCPRoute or UDPRoute with a parent in another namespace', () => {
    for (const kind of ['TCPRoute', 'UDPRoute'] as const) {
      expect(rules(kind, {}, route([{ name: 'gw' }, { name: 'gw', namespace: 'payments-batch' }]))).toEqual([]);
      expect(paths(kind, {}, route([{ name: 'gw' }, { name: 'shared', namespace: 'infra' }]))).toEqual([
        ['H1', ['spec', 'parentRefs', 1, 'namespace']],
      ]);
    }
    const what = 'parentRef into namespace "infra" (a TCPRoute has no hostname to bound what it serves)';
    expect(messages('TCPRoute', {}, route([{ name: 'shared', namespace: 'infra' }]), 'r')).toEqual([
      `[H1] TCPRoute payments-batch/r: ${refused(what, 'parents in payments-batch')}`,
    ]);
  });

  const listeners = [
    { name: 'tcp', port: 5432, protocol: 'TCP' },
    { name: 'udp', port: 53, protocol: 'UDP', hostname: 'anything.example.org' },
    { name: 'tls', port: 443, protocol: 'TLS' },
  ];
  it("a Gateway's and a ListenerSet's TCP and UDP listeners are not judged by hostname, others are", () => {
    const allow: AllowLists = { hostnames: { suffixes: ['pay.example.com'] } };
    expect(paths('Gateway', allow, { spec: { gatewayClassName: 'c', listeners } })).toEqual([
      ['H1', ['spec', 'listeners', 2, 'hostname']],
    ]);
    const http = (hostname: string) => ({ name: 'h', port: 80, protocol: 'HTTP', hostname });
    for (const kind of ['ListenerSet', 'XListenerSet'] as const) {
      const set = { spec: { parentRef: { name: 'gw' }, listeners: [...listeners, http('www.shop.example.com')] } };
      expect(paths(kind, allow, set)).toEqual([
        ['H1', ['spec', 'listeners', 2, 'hostname']],
        ['H1', ['spec', 'listeners', 3, 'hostname']],
      ]);
      const fine = { spec: { parentRef: { name: 'gw' }, listeners: [http('www.pay.example.com')] } };
      expect(rules(kind, allow, fine)).toEqual([]);
    }
  });
});
