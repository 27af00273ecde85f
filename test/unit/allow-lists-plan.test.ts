/**
 * `tenantgate plan` on a narrowed allow-list (src/plan/allow-lists.ts): an object the old lists refused already
 * is not "stranded" by the new ones, though the message's "allowed:" part changes with the lists.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { strandedByAllowLists, type LiveObject } from '../../src/plan/allow-lists.js';
import { aProject } from '../support/fixtures.js';

const pod = (name: string, priorityClassName: string): LiveObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { namespace: 'web-app', name },
  spec: { priorityClassName, containers: [{ name: 'c', image: 'registry.example.com/c' }] },
});
const listenerSet = (name: string, hostname: string): LiveObject => ({
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'ListenerSet',
  metadata: { namespace: 'web-app', name },
  spec: { parentRef: { name: 'gw' }, listeners: [{ name: 'h', port: 80, protocol: 'HTTP', hostname }] },
});

describe('plan: what a narrowed allow-list strands', () => {
  it('compares refusals by rule and field, not by message', () => {
    const was = aProject('web', { allow: { priorityClasses: ['low', 'mid'] } });
    const will = aProject('web', { allow: { priorityClasses: ['low'] } });
    const pods = [pod('refused-before', 'high'), pod('stranded', 'mid'), pod('fine', 'low')];
    const found = strandedByAllowLists(DEFAULT_CONFIG, was, will, new Set(['web-app']), pods);
    expect(found.map((f) => [f.rule, f.object])).toEqual([['X1', 'Pod web-app/stranded']]);
  });

  it("reads the kinds ADR 0095 adds: a ListenerSet's listener outside the new suffixes is stranded", () => {
    const was = aProject('web', { allow: { hostnames: { suffixes: ['web.example.com'] } } });
    const will = aProject('web', { allow: { hostnames: { suffixes: ['www.web.example.com'] } } });
    const sets = [listenerSet('api', 'api.web.example.com'), listenerSet('www', 'a.www.web.example.com')];
    const found = strandedByAllowLists(DEFAULT_CONFIG, was, will, new Set(['web-app']), sets);
    expect(found.map((f) => [f.rule, f.object])).toEqual([['H1', 'ListenerSet web-app/api']]);
  });
});
