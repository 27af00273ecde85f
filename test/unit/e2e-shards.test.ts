/** The e2e files are split into shards by weight, every file in exactly one shard, the same split in every process. */
import { describe, expect, it } from 'vitest';
import { assignShards, DEFAULT_SECONDS } from '../support/e2e-shards.js';

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
