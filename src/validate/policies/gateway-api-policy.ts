/**
 * The rules of the policies on Gateway API objects (docs/adr/0095-allow-lists-in-the-api-server.md):
 * tenantgate-allow-gateways (H4 the class, H1 listeners' hostnames, X2 and H1 addresses),
 * tenantgate-allow-listenersets (ListenerSet, XListenerSet: H1 listeners' hostnames),
 * tenantgate-allow-routes (HTTPRoute, GRPCRoute, TLSRoute: H1 hostnames) and
 * tenantgate-allow-tcp-udp-routes (TCPRoute, UDPRoute: H1, parents in their own namespace only).
 * Listeners of protocol TCP and UDP are not judged by H1: Gateway API ignores their hostname.
 */
import { ALLOWED_ADDRESSES, withinExternalIPs } from './addresses.js';
import {
  combine,
  declare,
  fieldOr,
  listed,
  listRule,
  nameAllowed,
  newAndOld,
  quoted,
  valueRule,
  type RuleParts,
} from './cel.js';
import { ALLOWED_HOSTNAMES, hostnameAllowed, hostnameListRule, refusedHostname } from './hostnames.js';

/** Listener protocols whose hostname Gateway API ignores. */
const HOSTLESS_PROTOCOLS = ['TCP', 'UDP'];

/** The hostnames of `o`'s listeners but TCP and UDP ones, lowercased; '' for a listener without (every hostname). */
const listenerHostnamesOf = (o: string) =>
  `(has(${o}.spec.listeners) ? ${o}.spec.listeners` +
  `.filter(l, !(has(l.protocol) && l.protocol in ['${HOSTLESS_PROTOCOLS.join("', '")}']))` +
  `.map(l, has(l.hostname) ? l.hostname.lowerAscii() : '') : [])`;

const listenerHostnames: RuleParts = hostnameListRule('listenerHostnames', listenerHostnamesOf, {
  named: 'listener hostname',
  none: 'a listener without hostname',
  summary: "a listener's hostname is not allowed for this project",
});

const gatewayClass = combine(
  declare(...newAndOld('gatewayClass', (o) => fieldOr(`${o}.spec`, 'gatewayClassName', "''"), "''")),
  valueRule('gatewayClass', (v) => nameAllowed('gatewayClasses', v), {
    rule: 'H4',
    what: `'gatewayClassName ' + ${quoted('variables.gatewayClass')}`,
    allowed: listed('params.spec.gatewayClasses.names', 'no GatewayClass'),
    summary: 'the GatewayClass is not allowed for this project',
  }),
);

/** A Gateway's addresses as {type, value}: type IPAddress when unset (Gateway API's default). */
const addressesOf = (o: string) =>
  `(has(${o}.spec.addresses) ? ${o}.spec.addresses.map(a, ` +
  `{'type': ${fieldOr('a', 'type', "'IPAddress'")}, 'value': ${fieldOr('a', 'value', "''")}}) : [])`;
const hostnamesAmong = (addresses: string) =>
  `${addresses}.filter(a, a.type == 'Hostname').map(a, a.value.lowerAscii())`;
/** X2 admits an address of type IPAddress inside the CIDRs, leaves one of type Hostname to H1, refuses other types. */
const addressAllowed = (a: string) =>
  `${a}.type == 'IPAddress' ? ${withinExternalIPs(`${a}.value`)} : ${a}.type == 'Hostname'`;

const addresses: RuleParts = combine(
  declare(
    ...newAndOld('addresses', addressesOf, '[]'),
    { name: 'hostnameAddresses', expression: hostnamesAmong('variables.addresses') },
    { name: 'oldHostnameAddresses', expression: hostnamesAmong('variables.oldAddresses') },
  ),
  listRule('addresses', addressAllowed, {
    rule: 'X2',
    what: (a) => `'address ' + ${quoted(`${a}.value`)} + (${a}.type == 'IPAddress' ? '' : ' of type ' + ${a}.type)`,
    allowed: `${ALLOWED_ADDRESSES} + ' (type IPAddress), hostnames (type Hostname)'`,
    summary: 'a Gateway address is not allowed for this project',
  }),
  listRule('hostnameAddresses', hostnameAllowed, {
    rule: 'H1',
    what: (h) => refusedHostname(h, 'address', 'an address of type Hostname without value'),
    allowed: ALLOWED_HOSTNAMES,
    summary: "a Gateway's Hostname address is not allowed for this project",
  }),
);

export const GATEWAY_RULES: RuleParts = combine(gatewayClass, listenerHostnames, addresses);
export const LISTENER_SET_RULES: RuleParts = listenerHostnames;

/** A route's hostnames, lowercased; none means every hostname of its listeners (''). */
const routeHostnamesOf = (o: string) =>
  `(has(${o}.spec.hostnames) && ${o}.spec.hostnames.size() > 0 ? ${o}.spec.hostnames.map(h, h.lowerAscii()) : [''])`;

export const ROUTE_RULES: RuleParts = hostnameListRule('hostnames', routeHostnamesOf, {
  named: 'hostname',
  none: 'a route without hostnames',
  summary: "a route's hostname is not allowed for this project",
});

const parentNamespacesOf = (o: string) =>
  `(has(${o}.spec.parentRefs) ? ${o}.spec.parentRefs.filter(p, has(p.namespace)).map(p, p.namespace) : [])`;

/** A TCPRoute or UDPRoute has no hostname: it attaches only to parents in its own namespace. */
export const TCP_UDP_ROUTE_RULES: RuleParts = combine(
  declare(...newAndOld('parentNamespaces', parentNamespacesOf, '[]')),
  listRule('parentNamespaces', (n) => `${n} == request.namespace`, {
    rule: 'H1',
    what: (n) =>
      `'a parentRef to namespace ' + ${quoted(n)} + ` +
      "' (a ' + request.kind.kind + ' has no hostname, so it stays in its namespace)'",
    allowed: "'parents in its own namespace ' + request.namespace",
    summary: 'a TCPRoute or UDPRoute may attach only to parents in its own namespace',
  }),
);
