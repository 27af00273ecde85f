import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ADR_INDEX, adrEntries, renderAdrIndex } from '../../hack/adr-index.js';

describe('docs/adr/README.md', () => {
  it('lists every ADR with its status line, as hack/adr-index.ts writes it', () => {
    const entries = adrEntries();
    // The current decisions only, folded by subsystem (superseded ones are in docs/adr/history/): at most 25.
    expect(entries.length).toBeGreaterThan(0);
    expect(entries.length).toBeLessThanOrEqual(25);
    // Numbers are unique and every status line says accepted, proposed, superseded or replaced.
    expect(new Set(entries.map((e) => e.number)).size).toBe(entries.length);
    for (const e of entries) expect(e.status, e.file).toMatch(/^(accepted|proposed|superseded|replaced|deprecated)/i);
    expect(
      readFileSync(ADR_INDEX, 'utf8') === renderAdrIndex(entries),
      'docs/adr/README.md is stale: run npx tsx hack/adr-index.ts',
    ).toBe(true);
  });
});
