/**
 * When the controller lets go of an AllowList (src/controller/allow-list-finalizer.ts): only one being
 * deleted and carrying the finalizer; at once in a live namespace; in a terminating one only when nothing
 * else is left, and never when what is left cannot be read.
 */
import { describe, expect, it } from 'vitest';
import { releaseDecision, type ReleaseInput } from '../../src/controller/allow-list-finalizer.js';
import { FINALIZER_ALLOW_LIST } from '../../src/validate/allow-list-params.js';

const DELETED_AT = '2026-12-07T16:00:00Z';

function input(over: {
  deleting?: boolean;
  finalizers?: string[];
  namespace?: ReleaseInput['namespace'];
  remaining?: string[] | Error;
}): ReleaseInput & { asked: () => number } {
  let asked = 0;
  return {
    allowList: {
      metadata: {
        name: 'tenantgate-allow',
        namespace: 'payments-api',
        finalizers: over.finalizers ?? [FINALIZER_ALLOW_LIST],
        ...(over.deleting === false ? {} : { deletionTimestamp: DELETED_AT }),
      },
    },
    namespace: 'namespace' in over ? over.namespace : { deletionTimestamp: DELETED_AT },
    remaining: async () => {
      asked++;
      if (over.remaining instanceof Error) throw over.remaining;
      return over.remaining ?? [];
    },
    asked: () => asked,
  };
}

describe('releaseDecision', () => {
  it('leaves alone an AllowList not being deleted, or without the finalizer', async () => {
    expect(await releaseDecision(input({ deleting: false }))).toBeUndefined();
    expect(await releaseDecision(input({ finalizers: ['example.com/other'] }))).toBeUndefined();
  });

  it('keeps it while its terminating namespace still holds something, naming what', async () => {
    const decision = await releaseDecision(input({ remaining: ['persistentvolumeclaims', 'pods'] }));
    expect(decision).toEqual({ release: false, why: 'its namespace still holds persistentvolumeclaims, pods' });
  });

  it('lets it go once its terminating namespace holds nothing else', async () => {
    expect(await releaseDecision(input({ remaining: [] }))).toMatchObject({ release: true });
  });

  it('lets it go at once when it alone is deleted in a live namespace, without listing', async () => {
    const i = input({ namespace: {}, remaining: ['pods'] });
    expect(await releaseDecision(i)).toMatchObject({ release: true });
    expect(i.asked()).toBe(0);
  });

  it('a namespace not in the cache counts as terminating: it asks what is left', async () => {
    const i = input({ namespace: undefined, remaining: ['pods'] });
    expect(await releaseDecision(i)).toMatchObject({ release: false });
    expect(i.asked()).toBe(1);
  });

  it('what is left cannot be read: the error goes up, nothing is released', async () => {
    await expect(releaseDecision(input({ remaining: new Error('discovery failed') }))).rejects.toThrow(
      'discovery failed',
    );
  });
});
