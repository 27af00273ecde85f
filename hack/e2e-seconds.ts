/**
 * Prints the wall seconds of each integration and end-to-end file from the JSON reports the last
 * `make test` wrote (.cache/e2e-report-<wave>-<shard>.json), heaviest first, as the E2E_SECONDS table of
 * test/support/e2e-shards.ts wants it. Run: npx tsx hack/e2e-seconds.ts
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

interface JsonReport {
  testResults: { name: string; startTime: number; endTime: number }[];
}

const root = join(import.meta.dirname, '..');
const cache = join(root, '.cache');
const reports = readdirSync(cache).filter((f) => /^e2e-report-[a-z]+-\d+\.json$/.test(f));
if (reports.length === 0) {
  console.error('no .cache/e2e-report-<wave>-<i>.json: run make test first');
  process.exit(1);
}
const seconds: [string, number][] = [];
for (const file of reports) {
  const report = JSON.parse(readFileSync(join(cache, file), 'utf8')) as JsonReport;
  for (const r of report.testResults) seconds.push([relative(root, r.name), Math.round((r.endTime - r.startTime) / 1000)]);
}
seconds.sort((a, b) => b[1] - a[1]);
for (const [file, s] of seconds) console.log(`  '${file}': ${s},`);
console.log(`// ${seconds.length} files, ${seconds.reduce((t, [, s]) => t + s, 0)} s in all`);
