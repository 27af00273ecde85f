/**
 * examples/deletion (docs/deletion.md): both deletion policies render, every Project marked so that
 * Argo CD asks before pruning it (D4), and tenantgate.yaml's deletion section as the example writes it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { renderDirectory } from '../../src/cli/render.js';
import { parseConfig } from '../../src/config/config.js';

const DIR = join(import.meta.dirname, '..', '..', 'examples', 'deletion');

describe('examples/deletion', () => {
  it('renders shop (Delete) and archive (Orphan), each with Prune=confirm,Delete=confirm', async () => {
    const result = await renderDirectory(DIR, {});
    expect(result.errors).toEqual([]);
    const projects = parseAllDocuments(result.output ?? '')
      .map(
        (d) =>
          d.toJS() as {
            kind: string;
            metadata: { name: string; annotations: Record<string, string> };
            spec: Record<string, unknown>;
          },
      )
      .filter((o) => o?.kind === 'Project');
    expect(projects.map((p) => [p.metadata.name, p.spec.deletionPolicy ?? 'Delete'])).toEqual([
      ['archive', 'Orphan'],
      ['shop', 'Delete'],
    ]);
    for (const p of projects)
      expect(p.metadata.annotations['argocd.argoproj.io/sync-options']).toBe('Prune=confirm,Delete=confirm');
  });

  it("tenantgate.yaml's deletion section is the defaults, written out", () => {
    const config = parseConfig(readFileSync(join(DIR, 'tenantgate.yaml'), 'utf8'));
    expect(config.deletion).toEqual({
      policy: 'Delete',
      breaker: { windowSeconds: 600, maxProjects: 3, maxShare: 0.1 },
    });
  });
});
