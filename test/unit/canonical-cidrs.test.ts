/**
 * CIDRs a Project or tenantgate.yaml declares must be in the canonical form Kubernetes 1.36+ stores
 * (S1): host bits zero, no leading zeros, IPv6 compressed. The oracle is written out per case.
 */
import { describe, expect, it } from 'vitest';
import { canonicalCidr, cidrProblem, parseCidr } from '../../src/validate/cidr.js';
import { validateDeclarations } from '../../src/validate/offline.js';
import { DEFAULT_CONFIG, parseConfig } from '../../src/config/config.js';
import type { Project } from '../../src/validate/types.js';

const AT = Date.parse('2026-11-28T00:00:00Z');

describe('canonical CIDRs', () => {
  it.each([
    ['203.0.113.0/24', '203.0.113.0/24'],
    ['10.0.0.1/8', '10.0.0.0/8'],
    ['10.000.0.0/8', '10.0.0.0/8'],
    ['0.0.0.0/0', '0.0.0.0/0'],
    ['192.168.1.77/32', '192.168.1.77/32'],
    ['2001:db8::/64', '2001:db8::/64'],
    ['2001:DB8::/64', '2001:db8::/64'],
    ['2001:db8:0:0:1::5/64', '2001:db8::/64'],
    ['2001:0db8:0000:0000:0000:0000:0000:0001/128', '2001:db8::1/128'],
    ['2001:db8:0:1:0:0:0:1/128', '2001:db8:0:1::1/128'],
  ])('%s is written %s', (given, canonical) => {
    expect(canonicalCidr(parseCidr(given)!)).toBe(canonical);
    expect(cidrProblem(given) === undefined).toBe(given === canonical);
    if (given !== canonical) expect(cidrProblem(given)).toContain(`write "${canonical}"`);
  });

  it('a bare address, a prefix too long and text are not CIDRs', () => {
    for (const text of ['10.0.0.1', '10.0.0.0/33', 'intranet/8', '2001:db8::/129'])
      expect(cidrProblem(text)).toMatch(/is not a CIDR/);
  });

  it('validate refuses a Project whose egress, externalIPs or source ranges are not canonical, naming the field and the form to write (S1)', () => {
    const project: Project = {
      apiVersion: 'tenantgate.io/v1alpha1',
      kind: 'Project',
      metadata: { name: 'shop' },
      spec: {
        tenant: 'acme',
        owners: [{ kind: 'Group', name: 'acme:shop' }],
        budget: { hard: { 'requests.cpu': '4' } },
        networkIsolation: true,
        network: { egress: { cidrs: ['198.51.100.0/24', '198.51.100.7/24'] } },
        allow: { services: { externalIPs: ['203.0.113.010/32'], loadBalancerSourceRanges: ['10.0.0.0/8'] } },
      },
    } as Project;
    const found = validateDeclarations([project], DEFAULT_CONFIG, AT).filter(
      (v) => v.rule === 'S1' && ['network', 'allow'].includes(String(v.path?.[1])),
    );
    expect(found.map((v) => v.path)).toEqual([
      ['spec', 'network', 'egress', 'cidrs', 1],
      ['spec', 'allow', 'services', 'externalIPs', 0],
    ]);
    expect(found[0]!.message).toBe(
      'Project shop: spec.network.egress.cidrs[1] "198.51.100.7/24" is not in canonical form (host bits zero, no leading zeros, IPv6 compressed and lowercase; Kubernetes 1.36+ refuses other forms in a NetworkPolicy): write "198.51.100.0/24"',
    );
  });

  it('tenantgate.yaml with a CIDR not in canonical form is refused, naming the key', () => {
    expect(() => parseConfig('network:\n  egress: {cidrs: [10.1.2.3/16]}\n')).toThrow(
      'tenantgate.yaml: network.egress.cidrs[0] "10.1.2.3/16" is not in canonical form',
    );
    expect(parseConfig('network:\n  egress: {cidrs: [10.1.0.0/16]}\n').network.egress?.cidrs).toEqual(['10.1.0.0/16']);
  });
});
