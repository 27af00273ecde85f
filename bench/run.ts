/**
 * `npm run bench [-- NAME…]`: runs the benchmark modules that exist among bench/render.ts,
 * bench/webhook.ts and bench/controller.ts (each exports `main(): Promise<void>`), or only the named
 * ones. Targets: SPEC §10 (P1–P4); results are written under bench/results/ by each module.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const KNOWN = ['render', 'webhook', 'controller'] as const;

interface BenchModule {
  main(): Promise<void>;
}

async function run(argv: string[]): Promise<number> {
  const wanted = argv.filter((a) => !a.startsWith('-'));
  const unknown = wanted.filter((w) => !(KNOWN as readonly string[]).includes(w));
  if (unknown.length) {
    process.stderr.write(`bench: unknown benchmark ${unknown.join(', ')}; known: ${KNOWN.join(', ')}\n`);
    return 2;
  }
  const available = KNOWN.filter((name) => existsSync(join(HERE, `${name}.ts`)));
  const selected = wanted.length ? available.filter((name) => wanted.includes(name)) : available;
  const missing = wanted.filter((w) => !(available as readonly string[]).includes(w));
  if (missing.length) {
    process.stderr.write(`bench: ${missing.map((m) => `bench/${m}.ts`).join(', ')} not written yet\n`);
    return 2;
  }
  if (selected.length === 0) {
    process.stderr.write('bench: no benchmark modules found\n');
    return 2;
  }
  for (const name of selected) {
    process.stderr.write(`\n=== bench/${name}.ts\n`);
    const mod = (await import(pathToFileURL(join(HERE, `${name}.ts`)).href)) as Partial<BenchModule>;
    if (typeof mod.main !== 'function') throw new Error(`bench/${name}.ts does not export main()`);
    await mod.main();
  }
  return 0;
}

run(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  },
);
