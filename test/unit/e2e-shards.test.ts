/** The e2e files are split into shards by weight, every file in exactly one shard, the same split in every process. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { assignShards, DEFAULT_SECONDS, filesOfWave, LATE_TOOL_FILES, waveOf } from '../support/e2e-shards.js';

describe('assignShards', () => {
  const seconds = { a: 100, b: 90, c: 60, d: 40, e: 10 };
  const files = ['e', 'd', 'c', 'b', 'a', 'unlisted'];

  it('puts every file in exactly one shard and keeps the heaviest two apart', () => {
    const shards = assignShards(files, 2, seconds);
    expect([...shards.keys()].sort()).toEqual([...files].sort());
    expect(shards.get('a')).not.toBe(shards.get('b'));
  });

  it('balances the shards within the heaviest file of the larger one', () => {
    const shards = assignShards(files, 2, seconds);
    const load = [0, 0];
    for (const [file, shard] of shards) load[shard]! += (seconds as Record<string, number>)[file] ?? DEFAULT_SECONDS;
    // 315 s in all: the greedy split is 155 / 160 (the first three files by name in one shard would be 250 / 65).
    expect(Math.max(...load) - Math.min(...load)).toBeLessThanOrEqual(Math.max(...Object.values(seconds)));
    expect(load.sort((x, y) => x - y)).toEqual([155, 160]);
  });

  it('gives the same split whatever order the files come in', () => {
    expect(assignShards([...files].reverse(), 3, seconds)).toEqual(assignShards(files, 3, seconds));
  });

  it('refuses a shard count that is not a positive integer', () => {
    expect(() => assignShards(files, 0, seconds)).toThrow('shard count must be a positive integer, got 0');
  });
});

describe('the e2e waves', () => {
  const root = join(import.meta.dirname, '..', '..');
  const e2eFiles = readdirSync(join(root, 'test', 'e2e'))
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => `test/e2e/${f}`);

  it('splits the files into an early and a late wave with nothing lost or run twice', () => {
    const early = filesOfWave(e2eFiles, 'early');
    const late = filesOfWave(e2eFiles, 'late');
    expect([...early, ...late].sort()).toEqual([...e2eFiles].sort());
    expect(late.sort()).toEqual([...LATE_TOOL_FILES].sort());
    expect(filesOfWave(e2eFiles, 'all')).toEqual(e2eFiles);
  });

  it('puts in the late wave every file that uses a tool of the late builds (crane, promtool, syft, Argo CD)', () => {
    // What the late builds make, as the tests reach it: the Argo CD helpers, promtool, the image and release scripts.
    const usesLateTool =
      /startArgoCd|argoCdBinary|\bstartFleet\(|promtoolBinary|build-image\.sh|buildImage|\brelease\.sh\b|hack\/release/;
    const needing = e2eFiles.filter((f) => usesLateTool.test(readFileSync(join(root, f), 'utf8')));
    expect(needing.length).toBeGreaterThan(3);
    expect(needing.filter((f) => !LATE_TOOL_FILES.includes(f))).toEqual([]);
  });

  it('reads TG_E2E_WAVE and refuses an unknown wave', () => {
    expect(waveOf(undefined)).toBe('all');
    expect(waveOf('early')).toBe('early');
    expect(waveOf('late')).toBe('late');
    expect(() => waveOf('first')).toThrow('TG_E2E_WAVE="first" is not a wave; allowed: early, late, all');
  });
});
