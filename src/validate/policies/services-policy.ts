/**
 * The rules of the policy tenantgate-allow-services: X2 addresses (externalIPs, loadBalancerIP), X3 the
 * type and node ports, X4 a LoadBalancer's source ranges (docs/adr/0095-allow-lists-in-the-api-server.md).
 */
import { ALLOWED_ADDRESSES, withinExternalIPs } from './addresses.js';
import {
  combine,
  declare,
  fieldOr,
  kept,
  listRule,
  newAndOld,
  quoted,
  validation,
  valueRule,
  type RuleParts,
} from './cel.js';

const RANGES = 'params.spec.services.loadBalancerSourceRanges';

/** A field of the Service's spec, `fallback` when unset, as `name` and old<Name>. */
const specField = (name: string, field: string, fallback: string) =>
  newAndOld(name, (o) => fieldOr(`${o}.spec`, field, fallback), fallback);

const nodePortsOf = (o: string) =>
  `(has(${o}.spec.ports) ? ${o}.spec.ports.filter(p, has(p.nodePort) && p.nodePort != 0).map(p, p.nodePort) : [])`;

const values = declare(
  ...specField('type', 'type', "'ClusterIP'"),
  ...specField('externalIPs', 'externalIPs', '[]'),
  ...specField('loadBalancerIP', 'loadBalancerIP', "''"),
  // The API server defaults it to true on a LoadBalancer.
  ...specField('allocateNodePorts', 'allocateLoadBalancerNodePorts', 'true'),
  // By the time admission runs, the API server has allocated the node ports it will open.
  ...newAndOld('nodePorts', nodePortsOf, '[]'),
  ...specField('sourceRanges', 'loadBalancerSourceRanges', '[]'),
  { name: 'isLoadBalancer', expression: "variables.type == 'LoadBalancer'" },
  { name: 'nodePortsAllowed', expression: "'NodePort' in params.spec.services.types" },
  // Whether X4 judges this Service at all.
  { name: 'rangesJudged', expression: `variables.isLoadBalancer && !${RANGES}.any` },
);

const externalIPs = listRule('externalIPs', withinExternalIPs, {
  rule: 'X2',
  what: (ip) => `'externalIPs ' + ${quoted(ip)}`,
  allowed: ALLOWED_ADDRESSES,
  summary: 'an externalIPs address is not allowed for this project',
});

const loadBalancerIP = valueRule('loadBalancerIP', (ip) => `(${ip} == '' || ${withinExternalIPs(ip)})`, {
  rule: 'X2',
  what: `'loadBalancerIP ' + ${quoted('variables.loadBalancerIP')}`,
  allowed: ALLOWED_ADDRESSES,
  summary: 'the loadBalancerIP is not allowed for this project',
});

const type = valueRule('type', (t) => `(${t} == 'ClusterIP' || ${t} in params.spec.services.types)`, {
  rule: 'X3',
  what: "'type ' + variables.type",
  allowed: "(['ClusterIP'] + params.spec.services.types).join(', ')",
  summary: 'the Service type is not allowed for this project',
});

const NO_NODE_PORT = 'NodePort is not an allowed type';

/**
 * Without NodePort, a LoadBalancer opens no node port: allocateLoadBalancerNodePorts false (type and
 * field kept: not judged).
 */
const allocation: RuleParts = {
  variables: [],
  validations: [
    validation(
      `(${kept('type')} && ${kept('allocateNodePorts')}) || !variables.isLoadBalancer || ` +
        'variables.nodePortsAllowed || !variables.allocateNodePorts',
      {
        rule: 'X3',
        what:
          "'a LoadBalancer with allocateLoadBalancerNodePorts true " +
          "(a node port on every node, open beyond the source ranges)'",
        allowed: `'allocateLoadBalancerNodePorts: false (${NO_NODE_PORT})'`,
        summary: 'a LoadBalancer must set allocateLoadBalancerNodePorts: false in this project',
      },
    ),
  ],
};

const nodePorts = listRule('nodePorts', () => 'variables.nodePortsAllowed', {
  rule: 'X3',
  what: (port) => `'nodePort ' + string(${port})`,
  allowed: `'no nodePort (${NO_NODE_PORT})'`,
  summary: 'a nodePort is not allowed for this project',
});

const ALLOWED_RANGES =
  `'loadBalancerSourceRanges inside ' + ` + `(${RANGES}.cidrs.size() > 0 ? ${RANGES}.cidrs.join(', ') : 'none')`;

/** A LoadBalancer names at least one source range (type and ranges kept: not judged). */
const someRange: RuleParts = {
  variables: [],
  validations: [
    validation(
      `!variables.rangesJudged || (${kept('type')} && ${kept('sourceRanges')}) || variables.sourceRanges.size() > 0`,
      {
        rule: 'X4',
        what: "'a LoadBalancer without loadBalancerSourceRanges (open to every address)'",
        allowed: ALLOWED_RANGES,
        summary: 'a LoadBalancer must name loadBalancerSourceRanges in this project',
      },
    ),
  ],
};

const ranges = listRule(
  'sourceRanges',
  (r) =>
    `!variables.rangesJudged || ` +
    `(isCIDR(${r}) && ${RANGES}.cidrs.exists(c, isCIDR(c) && cidr(c).containsCIDR(${r})))`,
  {
    rule: 'X4',
    what: (r) => `'loadBalancerSourceRanges ' + ${quoted(r)}`,
    allowed: ALLOWED_RANGES,
    summary: 'a loadBalancerSourceRanges entry is not allowed for this project',
  },
);

export const SERVICE_RULES: RuleParts = combine(
  values,
  externalIPs,
  loadBalancerIP,
  type,
  allocation,
  nodePorts,
  someRange,
  ranges,
);
