/**
 * Prints the wall seconds of each integration and end-to-end file from the logs the last `make test`
 * kept (.cache/e2e-<wave>-<shard>.log: vitest's own line per file, hooks included), heaviest first, as
 * the E2E_SECONDS table of test/support/e2e-shards.ts wants it. Run: npx tsx hack/e2e-seconds.ts [log...]
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = join(import.meta.dirname, '..');
const cache = join(root, '.cache');
const logs =
  process.argv.length > 2
    ? process.argv.slice(2)
    : readdirSync(cache)
        .filter((f) => /^e2e-[a-z]+-\d+\.log$/.test(f))
        .map((f) => join(cache, f));
if (logs.length === 0) {
  console.error('no .cache/e2e-<wave>-<i>.log: run make test first');
  process.exit(1);
}
// e.g. " ✓  integration  test/e2e/plan.test.ts (9 tests) 60123ms" (colours stripped)
const fileLine = /^\s*[✓×❯]\s+integration\s+(\S+\.test\.ts)\s+\(\d+ tests?(?:[^)]*)\)\s+(\d+)ms/;
const seconds = new Map<string, number>();
for (const log of logs) {
  for (const raw of readFileSync(log, 'utf8').split('\n')) {
    const line = raw.replace(/\u001b\[[0-9;]*m/g, '').replace(/^\[e2e [^\]]*\] /, '');
    const m = fileLine.exec(line);
    if (m) seconds.set(relative(root, join(root, m[1]!)), Math.round(Number(m[2]) / 1000));
  }
}
const sorted = [...seconds].sort((a, b) => b[1] - a[1]);
for (const [file, s] of sorted) console.log(`  '${file}': ${s},`);
console.log(`// ${sorted.length} files, ${sorted.reduce((t, [, s]) => t + s, 0)} s in all`);
