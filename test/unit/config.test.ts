/** tenantgate.yaml: defaults, and an error naming key, value and what is allowed for every kind of mistake. */
import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_CONFIG, parseConfig } from '../../src/config/config.js';

const errorOf = (text: string): string => {
  try {
    parseConfig(text);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error(`accepted: ${text}`);
};

describe('tenantgate.yaml', () => {
  it('is all defaults when empty, and keeps what it is given', () => {
    expect(parseConfig('')).toEqual(DEFAULT_CONFIG);
    const c = parseConfig(
      'clusterName: prod-eu\nreservationTtlSeconds: 60\nprivileged: {groups: [platform]}\nprotectedNamespaceMetadata: {labels: [team]}\n',
    );
    expect(c.clusterName).toBe('prod-eu');
    expect(c.reservationTtlSeconds).toBe(60);
    expect(c.privileged).toEqual({ users: DEFAULT_CONFIG.privileged.users, groups: ['platform'] });
    expect(c.protectedNamespaceMetadata).toEqual({
      labels: ['team'],
      annotations: DEFAULT_CONFIG.protectedNamespaceMetadata.annotations,
    });
  });

  it('refuses unknown keys at every depth, listing the known ones', () => {
    expect(errorOf('clustername: x')).toBe(
      'tenantgate.yaml: clustername is not a known key; allowed: apiVersion, kind, clusterName, privileged, reserved, namespacePrefix, requireProjectForUsers, headroomWarningThreshold, resyncPeriodSeconds, systemNamespace, crossReplicaReservation, reservationTtlSeconds, ledgerSettlement, visibility, protectedNamespaceMetadata, systemControllers, podSecurity, argocd, fleet, pricing, allow, network, deletion',
    );
    expect(errorOf('privileged: {user: [a]}')).toBe(
      'tenantgate.yaml: privileged.user is not a known key; allowed: users, groups',
    );
    expect(errorOf('protectedNamespaceMetadata: {label: [a]}')).toBe(
      'tenantgate.yaml: protectedNamespaceMetadata.label is not a known key; allowed: labels, annotations',
    );
  });

  it('gives numbers their ranges: a TTL of 0 would switch Q5 off', () => {
    expect(errorOf('reservationTtlSeconds: 0')).toBe(
      'tenantgate.yaml: reservationTtlSeconds is 0; allowed: an integer from 1 to 3600',
    );
    expect(errorOf('reservationTtlSeconds: -5')).toContain(
      'reservationTtlSeconds is -5; allowed: an integer from 1 to 3600',
    );
    expect(errorOf('reservationTtlSeconds: 2.5')).toBe(
      'tenantgate.yaml: reservationTtlSeconds is 2.5; allowed: an integer',
    );
    expect(errorOf('ledgerSettlement: yes-please')).toBe(
      'tenantgate.yaml: ledgerSettlement is "yes-please"; allowed: a boolean',
    );
    expect(errorOf('resyncPeriodSeconds: 100000')).toBe(
      'tenantgate.yaml: resyncPeriodSeconds is 100000; allowed: an integer from 1 to 86400',
    );
    expect(errorOf('headroomWarningThreshold: 1')).toBe(
      'tenantgate.yaml: headroomWarningThreshold is 1; allowed: a number from 0 up to (not including) 1',
    );
  });

  it('names wrong types, bad names and patterns', () => {
    expect(errorOf('requireProjectForUsers: "yes"')).toBe(
      'tenantgate.yaml: requireProjectForUsers is "yes"; allowed: a boolean',
    );
    expect(errorOf('privileged: {groups: system:masters}')).toBe(
      'tenantgate.yaml: privileged.groups is "system:masters"; allowed: a list',
    );
    expect(errorOf('systemNamespace: Tenantgate_System')).toBe(
      'tenantgate.yaml: systemNamespace is "Tenantgate_System"; allowed: a DNS-1123 label (lowercase letters, digits and "-", at most 63 characters)',
    );
    expect(errorOf('namespacePrefix: team-')).toBe(
      'tenantgate.yaml: namespacePrefix is "team-"; allowed: a template containing {project}, such as {project}-',
    );
    expect(errorOf('protectedNamespaceMetadata: {labels: ["bad key!"]}')).toBe(
      'tenantgate.yaml: protectedNamespaceMetadata.labels[0] is "bad key!"; allowed: a label or annotation key such as example.com/name, or a prefix ending in * such as pod-security.kubernetes.io/*',
    );
    expect(errorOf('clusterName: Prod')).toBe(
      'tenantgate.yaml: clusterName is "Prod"; allowed: "" or a DNS-1123 label (lowercase letters, digits and "-", at most 63 characters)',
    );
  });

  it('reports every problem at once, and refuses what is not a mapping or not YAML', () => {
    expect(errorOf('reservationTtlSeconds: 0\nfoo: 1').split('\n')).toHaveLength(2);
    expect(errorOf('- a\n- b')).toMatch(
      /^tenantgate.yaml: must be a YAML mapping of the keys apiVersion, kind, clusterName/,
    );
    expect(errorOf('a: [')).toMatch(/^tenantgate.yaml: not valid YAML: /);
  });
});

describe('tenantgate.yaml fleet (a fleet member, docs/fleet.md)', () => {
  it('takes the hub kubeconfig path and the keep/above policy', () => {
    const c = parseConfig(
      'clusterName: prod-eu\nfleet: {hubKubeconfig: /etc/tenantgate-fleet-hub/kubeconfig, keep: {requests.cpu: "2"}, above: {requests.cpu: 4}}\n',
    );
    expect(c.fleet).toEqual({
      hubKubeconfig: '/etc/tenantgate-fleet-hub/kubeconfig',
      keep: { 'requests.cpu': '2' },
      above: { 'requests.cpu': 4 },
      offerAfterSeconds: 300,
      giveBackAfterSeconds: 900,
      checkEverySeconds: 60,
    });
    expect(parseConfig('').fleet).toEqual({
      hubKubeconfig: '',
      keep: {},
      above: {},
      offerAfterSeconds: 300,
      giveBackAfterSeconds: 900,
      checkEverySeconds: 60,
    });
  });

  it('takes the give-back loop timing, and refuses give-back before offer or a check interval of 0', () => {
    expect(
      parseConfig('fleet: {offerAfterSeconds: 5, giveBackAfterSeconds: 10, checkEverySeconds: 1}\n').fleet,
    ).toMatchObject({ offerAfterSeconds: 5, giveBackAfterSeconds: 10, checkEverySeconds: 1 });
    expect(errorOf('fleet: {offerAfterSeconds: 60, giveBackAfterSeconds: 30}\n')).toBe(
      'tenantgate.yaml: fleet.giveBackAfterSeconds is 30, below fleet.offerAfterSeconds 60; allowed: at least offerAfterSeconds (room is offered first, given back later)',
    );
    expect(errorOf('fleet: {checkEverySeconds: 0}\n')).toMatch(/fleet.checkEverySeconds/);
  });

  it('refuses a member without a cluster name, with the ledger off, a bad quantity, or above below keep', () => {
    expect(errorOf('fleet: {hubKubeconfig: /hub}\n')).toBe(
      'tenantgate.yaml: fleet.hubKubeconfig is set but clusterName is ""; allowed: this cluster\'s name in the Projects\' spec.fleet.clusters',
    );
    expect(errorOf('clusterName: eu\ncrossReplicaReservation: false\nfleet: {hubKubeconfig: /hub}\n')).toMatch(
      /fleet.hubKubeconfig is set but crossReplicaReservation is false; allowed: true/,
    );
    expect(errorOf('fleet: {keep: {requests.cpu: lots}}\n')).toMatch(
      /fleet.keep.requests.cpu is "lots"; allowed: a Kubernetes quantity/,
    );
    expect(errorOf('fleet: {keep: {requests.cpu: "-1"}}\n')).toMatch(
      /fleet.keep.requests.cpu is -1; allowed: a quantity ≥ 0/,
    );
    expect(errorOf('fleet: {keep: {requests.cpu: "4"}, above: {requests.cpu: "2"}}\n')).toMatch(
      /fleet.above.requests.cpu is 2, below fleet.keep.requests.cpu 4/,
    );
    expect(errorOf('fleet: {hub: x}\n')).toMatch(/fleet.hub is not a known key; allowed: hubKubeconfig, keep, above/);
  });
});

describe('the shipped tenantgate-config ConfigMap', () => {
  it('is the generated one (make config), and holds exactly the defaults', async () => {
    const { readFileSync } = await import('node:fs');
    const { parse } = await import('yaml');
    const { CONFIG_MAP_PATH, configMapYaml } = await import('../../src/config/configmap.js');
    const committed = readFileSync(new URL(`../../${CONFIG_MAP_PATH}`, import.meta.url), 'utf8');
    expect(committed, 'manifests/config/tenantgate-config.yaml is stale: run make config').toBe(configMapYaml());
    const cm = parse(committed) as { data: Record<string, string> };
    expect(parseConfig(cm.data['tenantgate.yaml']!)).toEqual(DEFAULT_CONFIG);
  });
});
