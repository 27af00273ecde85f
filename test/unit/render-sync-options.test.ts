/**
 * D4 (docs/adr/0096-deletion-loses-no-data.md): render marks every Project so that Argo CD asks before it
 * prunes one (Prune=confirm) or deletes it with its Application (Delete=confirm); what the Project's own
 * annotation says is kept, an option it already sets is not overridden.
 */
import { describe, expect, it } from 'vitest';
import { projectSyncOptions } from '../../src/render/render.js';

describe('projectSyncOptions', () => {
  it('adds Prune=confirm and Delete=confirm to a Project without the annotation', () => {
    expect(projectSyncOptions(undefined)).toBe('Prune=confirm,Delete=confirm');
    expect(projectSyncOptions('')).toBe('Prune=confirm,Delete=confirm');
  });

  it("keeps the Project's own options, and its own Prune or Delete setting", () => {
    expect(projectSyncOptions('ServerSideApply=true')).toBe('ServerSideApply=true,Prune=confirm,Delete=confirm');
    expect(projectSyncOptions(' Prune=false , Validate=false')).toBe('Prune=false,Validate=false,Delete=confirm');
    expect(projectSyncOptions('Delete=false,Prune=confirm')).toBe('Delete=false,Prune=confirm');
  });
});
