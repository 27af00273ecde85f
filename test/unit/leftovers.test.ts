/** The harness's leftover check (test/support/leftovers.ts): what counts as left behind by a test file. */
import { describe, expect, it } from 'vitest';
import { leftoverMessage, leftoversSince, noLeftovers, type TenancyState } from '../support/leftovers.js';

const state = (
  projects: Array<[string, string, boolean?]>,
  namespaces: Array<[string, string, string, boolean?]> = [],
): TenancyState => ({
  projects: projects.map(([name, uid, deleting]) => ({ name, uid, deleting: deleting ?? false })),
  namespaces: namespaces.map(([name, uid, project, deleting]) => ({ name, uid, project, deleting: deleting ?? false })),
});

describe('leftoversSince', () => {
  it('nothing new: nothing left, whatever was there before', () => {
    const before = state([['shop', 'u1']], [['shop-dev', 'n1', 'shop']]);
    expect(noLeftovers(leftoversSince(before, before))).toBe(true);
    expect(noLeftovers(leftoversSince(before, state([])))).toBe(true);
  });

  it('a new Project is left, also while it is being deleted (its finalizer may never go); so is one re-created under a known name', () => {
    const before = state([['ml', 'u1']]);
    const after = state([
      ['ml', 'u2'],
      ['shop', 'u3', true],
    ]);
    expect(leftoversSince(before, after)).toEqual({
      projects: ['ml', 'shop (being deleted, finalizers left)'],
      namespaces: [],
    });
  });

  it('a new project namespace is left unless it is being deleted', () => {
    const after = state(
      [],
      [
        ['ml-serving', 'n1', 'ml'],
        ['shop-dev', 'n2', 'shop', true],
      ],
    );
    expect(leftoversSince(state([]), after)).toEqual({ projects: [], namespaces: ['ml-serving (project ml)'] });
  });

  it('the message names the file and every object', () => {
    const message = leftoverMessage('test/e2e/x.test.ts', {
      projects: ['ml'],
      namespaces: ['ml-serving (project ml)'],
    });
    expect(message).toContain(
      'test/e2e/x.test.ts left on the shared control plane: Projects ml; project namespaces ml-serving (project ml).',
    );
  });
});
