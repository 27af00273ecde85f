import { pathToFileURL } from 'node:url';

/** Runs `main` when the module at `moduleUrl` is the script node was started with (not when imported by bench/run.ts). */
export function runIfMain(moduleUrl: string, main: () => Promise<unknown>): void {
  if (moduleUrl !== pathToFileURL(process.argv[1] ?? '').href) return;
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
      process.exit(2);
    },
  );
}
