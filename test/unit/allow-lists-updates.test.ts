/**
 * An UPDATE is judged only for what it adds (docs/adr/0095-allow-lists-in-the-api-server.md): a list item only
 * when the old object's same field lacks it, a single-valued check only when its fields changed. The API
 * server's CEL follows the same rule; `allowListViolations(subject, kind, object, old)` is the offline form.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { isNewItem } from '../../src/validate/allow-lists.js';
import { allowListViolations, type AllowListKind } from '../../src/validate/allow-admission.js';
import { allowSubject } from '../../src/validate/rules/allow-lists.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import type { AllowLists } from '../../src/validate/types.js';
import { verdictFor, type AdmissionRequest } from '../../src/webhook/review.js';
import { aNamespace, aProject, aUser, reviewContext } from '../support/fixtures.js';

type Json = Record<string, unknown>;
const judged = (kind: AllowListKind, allow: AllowLists, object: Json, old?: Json) => {
  const subject = allowSubject(DEFAULT_CONFIG, aProject('payments', { allow }), kind, 'payments-batch', 'x');
  return allowListViolations(subject, kind, object, old).map((v) => v.rule);
};
/** The rule ids of an update from `old` to `object`. */
const update = (kind: AllowListKind, allow: AllowLists, object: Json, old: Json) => judged(kind, allow, object, old);
/** The rule ids of creating `object`. */
const create = (kind: AllowListKind, allow: AllowLists, object: Json) => judged(kind, allow, object);
/** `object` with a label more: an update that adds nothing the lists judge. */
const labelled = <T extends { metadata: Json }>(object: T): T => ({
  ...object,
  metadata: { ...object.metadata, labels: { a: 'b' } },
});
/** `object` with its spec's fields replaced by `fields`. */
const withSpec = <T extends { spec: Json }>(object: T, fields: Json): T => ({
  ...object,
  spec: { ...object.spec, ...fields },
});

describe('isNewItem: the one helper that decides what an update adds', () => {
  it('an item is new unless the old field holds an equal one; on CREATE everything is new', () => {
    expect(isNewItem('a', undefined)).toBe(true);
    expect(isNewItem('a', ['b', 'a'])).toBe(false);
    expect(isNewItem('a', [])).toBe(true);
    expect(isNewItem({ key: 'k', operator: 'Exists' }, [{ operator: 'Exists', key: 'k' }])).toBe(false);
    const exists = { key: 'k', operator: 'Exists' };
    expect(isNewItem({ ...exists, tolerationSeconds: 5 }, [exists])).toBe(true);
    expect(isNewItem(['LoadBalancer', undefined], [['LoadBalancer', undefined]])).toBe(false);
    expect(isNewItem(['LoadBalancer', true], [['LoadBalancer', undefined]])).toBe(true);
  });
});

const evilPod = (spec: Json) => ({
  metadata: { name: 'p' },
  spec: { containers: [{ name: 'app', image: 'docker.io/evil' }], ...spec },
});

describe('pods', () => {
  const pod = evilPod;
  const allow: AllowLists = {
    registries: ['registry.example.com/'],
    priorityClasses: ['low'],
    nodePlacement: { nodeSelector: { pool: 'pay' } },
  };
  const tolerations = [{ operator: 'Exists' }];
  const volumes = [{ name: 'v', image: { reference: 'docker.io/data' } }];
  const before = pod({ priorityClassName: 'high', nodeName: 'n1', tolerations, volumes });

  it('judges nothing an update keeps: a label on a pod the lists refuse today', () => {
    expect(create('Pod', allow, before)).toEqual(['X1', 'X8', 'X8', 'X8', 'X9', 'X9']);
    expect(update('Pod', allow, labelled(before), before)).toEqual([]);
  });

  it('judges an image, a toleration, an image volume the old pod lacks', () => {
    const debug = { ephemeralContainers: [{ name: 'd', image: 'docker.io/busybox' }] };
    expect(update('Pod', allow, withSpec(before, debug), before)).toEqual(['X9']);
    const tolerating = (list: Json[]) => update('Pod', allow, withSpec(before, { tolerations: list }), before);
    expect(tolerating([...tolerations, { key: 'gpu', operator: 'Exists' }])).toEqual(['X8']);
    const more = [...volumes, { name: 'w', image: { reference: 'docker.io/more' } }];
    expect(update('Pod', allow, withSpec(before, { volumes: more }), before)).toEqual(['X9']);
  });

  it('compares an item as its rule judges it: an image of the pod in any field, a toleration but its seconds', () => {
    const debug = {
      ephemeralContainers: [{ name: 'd', image: 'docker.io/evil' }],
      initContainers: [{ name: 'i', image: 'docker.io/data' }],
    };
    expect(update('Pod', allow, withSpec(before, debug), before)).toEqual([]);
    const tolerating = (list: Json[]) => update('Pod', allow, withSpec(before, { tolerations: list }), before);
    expect(tolerating([{ operator: 'Exists', tolerationSeconds: 60 }])).toEqual([]);
    expect(tolerating([{ operator: 'Exists', effect: 'NoExecute' }])).toEqual(['X8']);
  });

  it('judges a single-valued check when its field changed, wholly', () => {
    expect(update('Pod', allow, withSpec(before, { priorityClassName: 'higher' }), before)).toEqual(['X1']);
    expect(update('Pod', allow, withSpec(before, { nodeSelector: { zone: 'a' } }), before)).toEqual(['X8']);
    const containers = [{ name: 'app', image: 'registry.example.com/a' }];
    const unbound = pod({ priorityClassName: 'low', nodeSelector: { pool: 'pay' }, containers });
    const bound = withSpec(unbound, { nodeName: 'n1' });
    expect(update('Pod', allow, bound, unbound)).toEqual(['X8']);
    expect(update('Pod', allow, labelled(bound), bound)).toEqual([]);
  });
});

describe('Services', () => {
  const allow: AllowLists = {
    services: { types: ['LoadBalancer'], externalIPs: ['203.0.113.0/28'], loadBalancerSourceRanges: ['10.0.0.0/8'] },
  };
  const lb = (spec: Json) => ({
    metadata: { name: 'lb' },
    spec: { type: 'LoadBalancer', ports: [{ port: 80, nodePort: 30080 }], ...spec },
  });
  const before = lb({ externalIPs: ['8.8.8.8'], loadBalancerIP: '8.8.4.4', loadBalancerSourceRanges: ['0.0.0.0/0'] });

  it('keeps what the old Service had: unset allocateLoadBalancerNodePorts, a node port, ranges, addresses', () => {
    expect(create('Service', allow, before)).toEqual(['X2', 'X2', 'X3', 'X3', 'X4']);
    expect(update('Service', allow, labelled(before), before)).toEqual([]);
  });

  it('judges what it adds or changes', () => {
    const changed = (fields: Json) => update('Service', allow, withSpec(before, fields), before);
    expect(changed({ externalIPs: ['8.8.8.8', '1.1.1.1'] })).toEqual(['X2']);
    expect(changed({ loadBalancerIP: '1.1.1.1' })).toEqual(['X2']);
    expect(changed({ allocateLoadBalancerNodePorts: true })).toEqual([]);
    const closed = withSpec(before, { allocateLoadBalancerNodePorts: false });
    const allocating = withSpec(before, { allocateLoadBalancerNodePorts: true });
    expect(update('Service', allow, allocating, closed)).toEqual(['X3']);
    expect(update('Service', allow, before, closed)).toEqual(['X3']);
    expect(
      changed({
        ports: [
          { port: 80, nodePort: 30080 },
          { port: 81, nodePort: 30081 },
        ],
      }),
    ).toEqual(['X3']);
    expect(changed({ loadBalancerSourceRanges: ['0.0.0.0/0', '0.0.0.0/1'] })).toEqual(['X4']);
  });

  it('judges "no source ranges" and the type when their fields changed', () => {
    const open = lb({ allocateLoadBalancerNodePorts: false, ports: [{ port: 80 }] });
    expect(update('Service', allow, labelled(open), open)).toEqual([]);
    const ranged = withSpec(open, { loadBalancerSourceRanges: ['10.0.0.0/9'] });
    expect(update('Service', allow, open, ranged)).toEqual(['X4']);
    const nodePort = { metadata: { name: 'np' }, spec: { type: 'NodePort', ports: [{ port: 80 }] } };
    expect(update('Service', allow, labelled(nodePort), nodePort)).toEqual([]);
    expect(update('Service', allow, nodePort, { ...nodePort, spec: { ports: [{ port: 80 }] } })).toEqual(['X3']);
  });
});

describe('Ingresses, routes, Gateways, ListenerSets', () => {
  const allow: AllowLists = {
    ingressClasses: ['public'],
    gatewayClasses: ['public'],
    hostnames: { suffixes: ['pay.example.com'] },
  };
  it('an Ingress: hosts, a host-less rule, a default backend, the class', () => {
    const before = {
      metadata: { name: 'web', annotations: { 'kubernetes.io/ingress.class': 'internal' } },
      spec: {
        ingressClassName: 'internal',
        defaultBackend: { service: { name: 's' } },
        rules: [{ host: 'shop.example.com' }, {}],
        tls: [{ hosts: ['shop.example.com'] }],
      },
    };
    expect(create('Ingress', allow, before)).toEqual(['H2', 'H2', 'H1', 'H1', 'H1', 'H1']);
    expect(update('Ingress', allow, labelled(before), before)).toEqual([]);
    const rules = [...before.spec.rules, { host: 'evil.example.com' }];
    expect(update('Ingress', allow, withSpec(before, { rules }), before)).toEqual(['H1']);
    const tls = [{ hosts: ['shop.example.com'] }, { hosts: ['evil.example.com'] }];
    expect(update('Ingress', allow, withSpec(before, { tls }), before)).toEqual(['H1']);
    // Its hosts are one list: a defaultBackend is every hostname, as the rule without host already was.
    expect(update('Ingress', allow, before, withSpec(before, { defaultBackend: undefined }))).toEqual([]);
    const named = withSpec(before, { defaultBackend: undefined, rules: [{ host: 'shop.example.com' }] });
    const backed = withSpec(named, { defaultBackend: { service: { name: 's' } } });
    expect(update('Ingress', allow, backed, named)).toEqual(['H1']);
    expect(update('Ingress', allow, withSpec(named, { rules: [{ host: 'SHOP.example.com' }] }), named)).toEqual([]);
    const annotations = { 'kubernetes.io/ingress.class': 'other' };
    const reclassed = { ...before, metadata: { ...before.metadata, annotations } };
    expect(update('Ingress', allow, reclassed, before)).toEqual(['H2', 'H2']);
  });

  it('a route: hostnames kept, added, or dropped to none (every hostname)', () => {
    const route = (hostnames?: string[]) => ({ metadata: { name: 'r' }, spec: hostnames ? { hostnames } : {} });
    expect(update('HTTPRoute', allow, route(), route())).toEqual([]);
    expect(update('HTTPRoute', allow, route(), route(['a.pay.example.com']))).toEqual(['H1']);
    const shop = route(['shop.example.com']);
    expect(update('GRPCRoute', allow, route(['shop.example.com', 'a.pay.example.com']), shop)).toEqual([]);
    expect(update('TLSRoute', allow, route(['shop.example.com', 'evil.example.com']), shop)).toEqual(['H1']);
  });

  it('a TCPRoute: a parent namespace kept, or a new one', () => {
    const route = (...parentRefs: Json[]) => ({
      metadata: { name: 'r', namespace: 'payments-batch' },
      spec: { parentRefs },
    });
    const shared = { name: 'shared', namespace: 'infra' };
    expect(update('TCPRoute', allow, route(shared, { name: 'gw' }), route(shared))).toEqual([]);
    const to = (name: string, namespace: string) =>
      update('UDPRoute', allow, route(shared, { name, namespace }), route(shared));
    expect(to('other', 'infra')).toEqual([]);
    expect(to('gw', 'edge')).toEqual(['H1']);
  });

  it('a Gateway: only listeners whose hostname is judged count as the old field', () => {
    const gateway = (listeners: Json[], addresses: Json[] = [], gatewayClassName = 'internal') => ({
      metadata: { name: 'gw' },
      spec: { gatewayClassName, listeners, addresses },
    });
    const tcp = { name: 'tcp', port: 5432, protocol: 'TCP' };
    const http = { name: 'http', port: 80, protocol: 'HTTP' };
    expect(update('Gateway', allow, gateway([tcp, http]), gateway([tcp]))).toEqual(['H1']);
    const http2 = { ...http, name: 'http2', port: 8080 };
    expect(update('Gateway', allow, gateway([http, http2]), gateway([http]))).toEqual([]);
    expect(update('Gateway', allow, gateway([http], [], 'other'), gateway([http]))).toEqual(['H4']);
  });

  it("a Gateway's addresses compare with their type defaulted; a ListenerSet's listeners as a Gateway's", () => {
    const gateway = (addresses: Json[]) => ({
      metadata: { name: 'gw' },
      spec: { gatewayClassName: 'public', addresses },
    });
    const address = { value: '8.8.8.8' };
    const typed = { type: 'IPAddress', value: '8.8.8.8' };
    expect(update('Gateway', allow, gateway([typed]), gateway([address]))).toEqual([]);
    const hostname = { type: 'Hostname', value: 'lb.example.org' };
    expect(update('Gateway', allow, gateway([address, hostname]), gateway([address]))).toEqual(['H1']);
    const set = (...listeners: Json[]) => ({
      metadata: { name: 'ls' },
      spec: { parentRef: { name: 'gw' }, listeners },
    });
    const tcp = { name: 'tcp', port: 5432, protocol: 'TCP' };
    const http = { name: 'http', port: 80, protocol: 'HTTP' };
    expect(update('ListenerSet', allow, set(tcp, http), set(tcp))).toEqual(['H1']);
    expect(update('XListenerSet', allow, labelled(set(http)), set(http))).toEqual([]);
  });
});

describe('claims', () => {
  const allow: AllowLists = { deviceClasses: ['gpu'], storageClasses: ['standard'] };
  it("a ResourceClaim's classes and tolerations, when kept", () => {
    const requests = [{ name: 'a', exactly: { deviceClassName: 'fpga', tolerations: [{ operator: 'Exists' }] } }];
    const claim = { metadata: { name: 'c' }, spec: { devices: { requests } } };
    expect(create('ResourceClaim', allow, claim)).toEqual(['X7', 'X8']);
    expect(update('ResourceClaim', allow, labelled(claim), claim)).toEqual([]);
  });

  it("a PersistentVolumeClaim's class and selector, when kept or changed", () => {
    const selector = { matchLabels: { tier: 'x' } };
    const pvc = { metadata: { name: 'd' }, spec: { storageClassName: 'fast', selector } };
    expect(create('PersistentVolumeClaim', allow, pvc)).toEqual(['X5', 'X10']);
    expect(update('PersistentVolumeClaim', allow, labelled(pvc), pvc)).toEqual([]);
    const unselected = { ...pvc, spec: { storageClassName: 'fast' } };
    expect(update('PersistentVolumeClaim', allow, pvc, unselected)).toEqual(['X10']);
  });
});

describe('the webhook judges an update by the same rule', () => {
  const snapshot = new MemorySnapshot();
  snapshot.upsertProject(aProject('payments', { allow: { registries: ['registry.example.com/'] } }));
  snapshot.upsertNamespace(aNamespace('payments-batch', { project: 'payments' }));
  const pod = evilPod;
  const request = (object: Json, oldObject: Json): AdmissionRequest => ({
    uid: 'u',
    kind: { group: '', version: 'v1', kind: 'Pod' },
    namespace: 'payments-batch',
    operation: 'UPDATE',
    userInfo: { username: 'alice' },
    object,
    oldObject,
  });
  it("an image volume's image is not new in an ephemeral container (a message subtraction refused it)", () => {
    const ctx = reviewContext(aUser('alice'), snapshot);
    const stored = pod({ volumes: [{ name: 'tools', image: { reference: 'docker.io/tools' } }] });
    const debugged = (image: string) => withSpec(stored, { ephemeralContainers: [{ name: 'd', image }] });
    expect(verdictFor(ctx, request(debugged('docker.io/tools'), stored)).violations).toEqual([]);
    const busybox = verdictFor(ctx, request(debugged('docker.io/busybox'), stored));
    expect(busybox.violations.map((v) => v.rule)).toEqual(['X9']);
    expect(verdictFor(ctx, request(labelled(stored), stored)).violations).toEqual([]);
  });
});
