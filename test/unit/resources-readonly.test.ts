/**
 * Parsed resource lists are shared: a cached object's list parses once (resources.ts memoises by list
 * identity) and every decision reads the same map. `Resources` is a ReadonlyMap so that no caller can
 * edit a shared parse; `npm run lint` type-checks this file, and the @ts-expect-error lines fail it if
 * the type ever becomes writable again.
 */
import { describe, expect, it } from 'vitest';
import { parseResources } from '../../src/validate/resource-lists.js';
import { Quantity } from '../../src/quantity/quantity.js';
import type { ResourceList } from '../../src/validate/types.js';

describe('Resources', () => {
  it('is one shared, read-only parse per list', () => {
    const list: ResourceList = { 'requests.cpu': '2', pods: 10 };
    const first = parseResources(list);
    const second = parseResources(list);
    expect(second).toBe(first);
    // @ts-expect-error Resources has no set: a shared parse cannot be edited through its type.
    expect(typeof first.set).toBe('function');
    // @ts-expect-error nor delete.
    expect(typeof first.delete).toBe('function');
    expect(first.get('requests.cpu')?.equals(Quantity.parse('2'))).toBe(true);
  });
});
